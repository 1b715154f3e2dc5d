"""codecvisor.samplers: torchcodec's clip samplers over a codecvisor decoder.

    from codecvisor.samplers import clips_at_random_indices
    clips = clips_at_random_indices(decoder, num_clips=8, num_frames_per_clip=8)
    clips.data.shape        # (8, 8, 3, H, W): clips, frames, then the decoder's frame layout

Each sampler picks where clips start (at random or equally spaced, by frame
index or by time), lays out every clip's frames, and returns them as one
5-D ``FrameBatch`` whose ``pts_seconds`` and ``duration_seconds`` are
(num_clips, num_frames_per_clip). Arguments and policies mean what they
mean in ``torchcodec.samplers``.

What codecvisor adds: all the frames of one call are one request to the
backend. The distinct frames the clips need are asked for once, sorted (the
backend decodes each of them once, in stream order, however the clips
overlap), and the binding copies each into every place the clips repeat
it. A backend crash during the request is replayed like any other request;
a poison request raises ``BackendError``.

The random samplers draw from torch's global generator, as torchcodec's do
(``torch.manual_seed`` makes them reproducible), or from the
``torch.Generator`` passed as ``generator``. Needs torch.
"""

import math
import sys
from typing import List, Optional, Sequence, Union

import numpy as np

try:
    import torch
except ImportError as e:
    raise ImportError("codecvisor.samplers needs torch (its clips are torch tensors, as torchcodec's); "
                      "codecvisor.decoders works without it, returning numpy arrays") from e

from ._frame import FrameBatch

_POLICIES = ("repeat_last", "wrap", "error")

# A sampling time this close to the stream's end is at it: backends read a
# time a hair below a frame's start as that frame's start (the cpu backend
# within a millionth of a tick, the synthetic one within 1e-9 of a frame),
# so 5 * (1 / 24), a rounding below 5/24, is the end of a 5-frame video at
# 24 fps, where no frame plays. 1e-9 s is more than either at any rate of
# 1 fps or more.
_AT_THE_END = 1e-9

Number = Union[int, float]


# --- policies: complete a clip that runs past the end of the video -------

def _complete_clip(valid: List[Number], length: int, policy: str) -> List[Number]:
    """`valid` (the clip's first positions that lie in the video, never
    empty) padded to `length` by the policy."""
    if len(valid) >= length:
        return valid
    if policy == "repeat_last":
        return valid + [valid[-1]] * (length - len(valid))
    if policy == "wrap":
        return [valid[i % len(valid)] for i in range(length)]
    raise ValueError(f"A clip runs beyond the number of frames in the video and policy='error' (it needs {length} frames, "
                     f"the video has {len(valid)} from the clip's start). Leave sampling_range_end at its "
                     "default, or use policy='repeat_last' or 'wrap'.")


def _check_clips_memory(decoder, num_clips: int, num_frames_per_clip: int) -> None:
    """The decoder's MemoryError for clips whose frames would not fit, raised
    before their positions are listed (a list as long as the frames)."""
    decoder._check_memory(num_clips * num_frames_per_clip, f" ({num_clips} clips of {num_frames_per_clip} frames)",
                          "fewer or shorter clips")


def _check_common(decoder, num_frames_per_clip: int, policy: str) -> None:
    if len(decoder) < 1:
        raise ValueError(f"Decoder must have at least one frame, found {len(decoder)} frames.")
    if num_frames_per_clip <= 0:
        raise ValueError(f"num_frames_per_clip ({num_frames_per_clip}) must be strictly positive")
    if policy not in _POLICIES:
        raise ValueError(f"Invalid policy ({policy}). Supported values are {', '.join(_POLICIES)}.")


# --- one request for every clip ------------------------------------------

def _as_clips(flat: FrameBatch, num_clips: int, num_frames_per_clip: int) -> FrameBatch:
    frame_shape = tuple(flat.data.shape[1:])
    return FrameBatch(flat.data.reshape(num_clips, num_frames_per_clip, *frame_shape),
                      flat.pts_seconds.reshape(num_clips, num_frames_per_clip),
                      flat.duration_seconds.reshape(num_clips, num_frames_per_clip))


def _fetch(decoder, positions: Sequence[Number], by_time: bool) -> FrameBatch:
    """The frames at `positions` (clip order, repeats allowed) from one
    request for the distinct ones, sorted; the binding copies each into
    every position that repeats it."""
    distinct, where = np.unique(np.asarray(positions), return_inverse=True)
    return decoder._frames_scattered(distinct.tolist(), where.tolist(), by_time)


# --- by frame index -------------------------------------------------------

def _index_range(start: int, end: Optional[int], span: int, num_frames: int):
    """[start, end) where clips may start, as torchcodec resolves it."""
    if start < 0:
        # Counted from the end; one before the first frame would read clips
        # from the end too (a negative index), in no order.
        if start < -num_frames:
            raise ValueError(f"sampling_range_start ({start}) must be greater than or equal to -{num_frames} "
                             "(minus the number of frames).")
        start += num_frames
    if start >= num_frames:
        raise ValueError(f"sampling_range_start ({start}) must be smaller than the number of frames ({num_frames}).")
    if end is None:
        end = max(num_frames - span + 1, 1)  # the last start whose clip fits, plus one
        if start >= end:
            raise ValueError(f"We determined that sampling_range_end should be {end} here (the last start at which a clip of "
                             f"{span} frames fits, plus one), which is not above sampling_range_start ({start}); "
                             "pass sampling_range_end explicitly.")
        return start, end
    if end < 0:
        end += num_frames
    end = min(end, num_frames)
    if start >= end:
        raise ValueError(f"sampling_range_start ({start}) must be smaller than sampling_range_end ({end}).")
    return start, end


def _index_sampler(random: bool, decoder, num_clips: int, num_frames_per_clip: int, num_indices_between_frames: int,
                   sampling_range_start: int, sampling_range_end: Optional[int], policy: str,
                   generator: Optional[torch.Generator]) -> FrameBatch:
    indices = _index_positions(decoder, random=random, num_clips=num_clips, num_frames_per_clip=num_frames_per_clip,
                               num_indices_between_frames=num_indices_between_frames,
                               sampling_range_start=sampling_range_start, sampling_range_end=sampling_range_end,
                               policy=policy, generator=generator)
    return _as_clips(_fetch(decoder, indices, by_time=False), num_clips, num_frames_per_clip)


def _index_positions(decoder, *, random: bool, num_clips: int, num_frames_per_clip: int,
                     num_indices_between_frames: int = 1, sampling_range_start: int = 0,
                     sampling_range_end: Optional[int] = None, policy: str = "repeat_last",
                     generator: Optional[torch.Generator] = None) -> List[int]:
    """The frame indices the index samplers fetch, clip after clip (drawing
    from the generator as the sampler does, decoding nothing)."""
    _check_common(decoder, num_frames_per_clip, policy)
    if num_clips <= 0:
        raise ValueError(f"num_clips ({num_clips}) must be > 0")
    if num_indices_between_frames <= 0:
        raise ValueError(f"num_indices_between_frames ({num_indices_between_frames}) must be strictly positive")
    num_frames = len(decoder)
    step = num_indices_between_frames
    span = step * (num_frames_per_clip - 1) + 1  # first to last frame of a clip, both included
    start, end = _index_range(sampling_range_start, sampling_range_end, span, num_frames)
    _check_clips_memory(decoder, num_clips, num_frames_per_clip)
    if random:
        starts = torch.randint(start, end, (num_clips,), generator=generator)
    else:
        # More clips than starts repeat starts (linspace rounds down), as in torchcodec.
        starts = torch.linspace(start, end - 1, steps=num_clips, dtype=torch.int)
    indices: List[int] = []
    for s in starts.tolist():
        indices += _complete_clip(list(range(s, min(s + span, num_frames), step)), num_frames_per_clip, policy)
    return indices


def clips_at_random_indices(decoder, *, num_clips: int = 1, num_frames_per_clip: int = 1,
                            num_indices_between_frames: int = 1, sampling_range_start: int = 0,
                            sampling_range_end: Optional[int] = None, policy: str = "repeat_last",
                            generator: Optional[torch.Generator] = None) -> FrameBatch:
    """Clips starting at random frame indices (drawn uniformly, with repeats).

    Args:
        decoder: the VideoDecoder to sample from.
        num_clips: how many clips (> 0).
        num_frames_per_clip: frames in each clip (> 0).
        num_indices_between_frames: index step between a clip's frames
            (dilation); 1 takes consecutive frames.
        sampling_range_start: the first index a clip may start at; negative
            counts from the end.
        sampling_range_end: clips start before this index (exclusive;
            negative counts from the end). None: the last index at which a
            whole clip fits, plus one, so that no clip runs past the end.
        policy: what fills a clip that runs past the end: "repeat_last"
            repeats its last frame in the video, "wrap" starts over from the
            clip's first frame, "error" raises ValueError.
        generator: a torch.Generator to draw from instead of torch's global
            one.

    Returns a FrameBatch: data (num_clips, num_frames_per_clip, C, H, W), or
    (..., H, W, C) for an "NHWC" decoder; pts_seconds and duration_seconds
    (num_clips, num_frames_per_clip). One backend request fetches every
    frame; BackendError if it is a poison request.
    """
    return _index_sampler(True, decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                          sampling_range_start, sampling_range_end, policy, generator)


def clips_at_regular_indices(decoder, *, num_clips: int = 1, num_frames_per_clip: int = 1,
                             num_indices_between_frames: int = 1, sampling_range_start: int = 0,
                             sampling_range_end: Optional[int] = None, policy: str = "repeat_last") -> FrameBatch:
    """Clips starting at equally spaced frame indices: the first at
    ``sampling_range_start``, the last at ``sampling_range_end - 1``. With
    more clips than indices in the range, starts repeat. Other arguments and
    the result as in ``clips_at_random_indices``."""
    return _index_sampler(False, decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                          sampling_range_start, sampling_range_end, policy, None)


# --- by time --------------------------------------------------------------

def _check_positive(name: str, seconds: float, phrase: str = "strictly positive") -> None:
    """ValueError unless `seconds` is a finite number > 0 (NaN is none),
    saying it "must be " + `phrase`, as torchcodec says it of `name`."""
    if not seconds > 0:
        raise ValueError(f"{name} ({seconds}) must be {phrase}")
    if not math.isfinite(seconds):
        raise ValueError(f"{name} ({seconds}) must be finite")


def _seconds_between_frames(decoder, seconds_between_frames: Optional[float]) -> float:
    m = decoder.metadata
    if m.average_fps is None:
        raise ValueError("Could not infer average fps from video metadata; use an index-based sampler.")
    for edge, value in (("end", m.end_stream_seconds), ("start", m.begin_stream_seconds)):
        if value is None:
            raise ValueError(f"Could not infer stream {edge} from video metadata; use an index-based sampler.")
    if seconds_between_frames is None:
        return 1 / m.average_fps
    _check_positive("seconds_between_frames", seconds_between_frames)
    return seconds_between_frames


def _time_range(start: Optional[float], end: Optional[float], num_frames_per_clip: int, seconds_between_frames: float,
                begin: float, stream_end: float):
    """[start, end) in seconds where clips may start, as torchcodec resolves it."""
    for name, value in (("sampling_range_start", start), ("sampling_range_end", end)):
        if value is not None and math.isnan(value):
            raise ValueError(f"{name} ({value}) must be a number")
    if start is None:
        start = begin
    elif start < begin:
        raise ValueError(f"sampling_range_start ({start}) must be at least {begin}")
    elif start >= stream_end - _AT_THE_END:
        # Within a rounding of the end is at the end, where no frame plays.
        raise ValueError(f"sampling_range_start ({start}) must be smaller than {stream_end} (the stream's end, "
                         f"less {_AT_THE_END} s)")
    if end is None:
        # The latest start whose last frame is still sampled before the end,
        # as the clip's times are computed: 1.48 - 29 * 0.04 rounds to a hair
        # past 0.32, where a clip's last time would be the end itself.
        # The step doubles: end may be a hair above zero (1e-17) while the
        # sum needs a step at the stream end's scale, 1e15 of end's ulps.
        reach = (num_frames_per_clip - 1) * seconds_between_frames
        end = stream_end - reach
        step = math.ulp(end)
        while end + reach >= stream_end - _AT_THE_END and end > begin:
            end -= step
            step *= 2
        if end <= begin:
            raise ValueError(f"We determined that sampling_range_end should be {end}, which is not after the "
                             f"stream's beginning ({begin}): a clip of {num_frames_per_clip} frames "
                             f"{seconds_between_frames} s apart spans the whole video or more. Use fewer frames per "
                             "clip or a smaller seconds_between_frames.")
    elif end <= begin:
        raise ValueError(f"sampling_range_end ({end}) must be at least {begin}")
    if start >= end:
        raise ValueError(f"sampling_range_start ({start}) must be smaller than sampling_range_end ({end})")
    # No clip may start where the end is taken to be: its first frame would
    # be missing (a draw in the last nanosecond, a start a hair below it).
    return start, min(end, stream_end - _AT_THE_END)


def _time_sampler(random: bool, decoder, num_clips: Optional[int], seconds_between_clip_starts: Optional[float],
                  num_frames_per_clip: int, seconds_between_frames: Optional[float],
                  sampling_range_start: Optional[float], sampling_range_end: Optional[float], policy: str,
                  generator: Optional[torch.Generator]) -> FrameBatch:
    _check_common(decoder, num_frames_per_clip, policy)
    if random and num_clips <= 0:
        raise ValueError(f"num_clips ({num_clips}) must be > 0")
    if not random:
        _check_positive("seconds_between_clip_starts", seconds_between_clip_starts, "> 0")
    between = _seconds_between_frames(decoder, seconds_between_frames)
    stream_end = decoder.metadata.end_stream_seconds
    start, end = _time_range(sampling_range_start, sampling_range_end, num_frames_per_clip, between,
                             decoder.metadata.begin_stream_seconds, stream_end)
    # Times in double precision: a stream's begin (1.4 s, 0.1 s) is rarely
    # a single-precision number, and rounded down it would fall before the
    # stream, or a short range's starts past its end. The random draw is
    # torch's default single-precision one, so a seed draws what it always
    # drew.
    if not random:
        # Starts start + k * step before the end, counted as the decimal
        # arithmetic the caller wrote means them: 2.8 + 8 * 0.05 is the end
        # 3.2, not a start a rounding below it, whose first frame would be
        # the one at the end the range leaves out. The roundings grow with
        # the times (an MPEG-TS stream's, 95443 s and more), so the slack
        # does (a step too small to count is too many clips).
        count = (end - start) / seconds_between_clip_starts
        slack = 1e-9 + 8 * sys.float_info.epsilon * max(abs(start), abs(end)) / seconds_between_clip_starts
        num_clips = max(1, math.ceil(count - slack)) if math.isfinite(count) and math.isfinite(slack) else 1 << 62
    _check_clips_memory(decoder, num_clips, num_frames_per_clip)
    if random:
        starts = torch.rand(num_clips, generator=generator).double() * (end - start) + start
    else:
        starts = start + torch.arange(num_clips, dtype=torch.float64) * seconds_between_clip_starts
        starts = starts[starts < end]  # never past it, whatever the rounding
        num_clips = len(starts)
    seconds: List[float] = []
    for s in starts:
        clip = [s + i * between for i in range(num_frames_per_clip)]
        seconds += _complete_clip([float(t) for t in clip if t < stream_end - _AT_THE_END], num_frames_per_clip,
                                  policy)
    return _as_clips(_fetch(decoder, seconds, by_time=True), num_clips, num_frames_per_clip)


def clips_at_random_timestamps(decoder, *, num_clips: int = 1, num_frames_per_clip: int = 1,
                               seconds_between_frames: Optional[float] = None,
                               sampling_range_start: Optional[float] = None,
                               sampling_range_end: Optional[float] = None, policy: str = "repeat_last",
                               generator: Optional[torch.Generator] = None) -> FrameBatch:
    """Clips starting at random times (uniform in the sampling range).

    Args:
        decoder: the VideoDecoder to sample from.
        num_clips: how many clips (> 0).
        num_frames_per_clip: frames in each clip (> 0).
        seconds_between_frames: time between the points at which a clip's
            frames are sampled (each sampled frame is the one played at that
            time). None: the average frame duration, 1 / average_fps.
        sampling_range_start: the earliest time a clip may start at. None:
            the start of the stream (which may be other than 0).
        sampling_range_end: clips start before this time (exclusive). None:
            the latest start at which every frame of the clip is sampled
            before the end of the stream.
        policy: what replaces a clip's sampling times at or past the end of
            the stream: "repeat_last" its last valid time, "wrap" its times
            from the first again, "error" raises ValueError.
        generator: a torch.Generator to draw from instead of torch's global
            one.

    Returns a 5-D FrameBatch as ``clips_at_random_indices`` does, fetched in
    one backend request.
    """
    return _time_sampler(True, decoder, num_clips, None, num_frames_per_clip, seconds_between_frames,
                         sampling_range_start, sampling_range_end, policy, generator)


def clips_at_regular_timestamps(decoder, *, seconds_between_clip_starts: float, num_frames_per_clip: int = 1,
                                seconds_between_frames: Optional[float] = None,
                                sampling_range_start: Optional[float] = None,
                                sampling_range_end: Optional[float] = None,
                                policy: str = "repeat_last") -> FrameBatch:
    """Clips starting every ``seconds_between_clip_starts`` seconds from
    ``sampling_range_start``, before ``sampling_range_end``; as many clips as
    fit. Other arguments and the result as in
    ``clips_at_random_timestamps``."""
    return _time_sampler(False, decoder, None, seconds_between_clip_starts, num_frames_per_clip,
                         seconds_between_frames, sampling_range_start, sampling_range_end, policy, None)


__all__ = ["clips_at_random_indices", "clips_at_random_timestamps", "clips_at_regular_indices",
           "clips_at_regular_timestamps"]
