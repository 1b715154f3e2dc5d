"""codecvisor.decoders: torchcodec's VideoDecoder, decoding in sandboxed,
supervised backend processes. Switch by changing the import::

    from codecvisor.decoders import VideoDecoder   # was: from torchcodec.decoders import ...
"""

import copy
import dataclasses
import math
import numbers
import os
import threading
import weakref
from typing import BinaryIO, Optional, Sequence, Union

import numpy

from . import _codecvisor, _errors, _frame, _host, _open_errors, _sources, _tensor
from ._arguments import (_INT64_LIMIT, _MAX_STREAM_INDEX, _MAX_THREADS, _check_timeout, _index, _index_list,
                         _integer, _option_int, _out_of_range, _time, _times, _unwrapped)
from ._frame import Frame, FrameBatch
from ._metadata import VideoStreamMetadata, _metadata_change
from ._sources import _read_source

# What a decoder takes as its source, for annotations that
# typing.get_type_hints can resolve: a torch tensor where torch is installed.
Source = Union[(str, os.PathLike, bytes, bytearray, memoryview, numpy.ndarray, BinaryIO)
               + ((_tensor.torch.Tensor,) if _tensor.have_torch() else ())]

__all__ = ["VideoDecoder", "VideoStreamMetadata", "Frame", "FrameBatch"]

# The session of a decoder not opened in this process yet (unpickled, or
# forked and not reopened): not None (a closed decoder's), and with no pid
# of this process, so _decoder() opens it.
_NOT_OPENED = object()

# Held while a decoder opens its session in a process other than the one it
# had it in (a forked child, an unpickled copy), so that threads using it
# at once wait for one session instead of each opening one or finding it
# "closed" meanwhile. A child gets a fresh one: a thread of the parent may
# have held it at the fork.
_reopening = threading.Lock()

# Held for an instant: while close() marks a decoder closed and takes its
# session, and while an open installs the session it made unless the
# decoder was closed meanwhile (then the open ends what it made), so that a
# close() during a first use's open leaves no session behind. Reentrant: a
# signal handler that closes the decoder may run inside it.
_installing = threading.RLock()


# The decoders that have a session of this process: a forked child lets
# go of each one's inherited session at once (whose destruction there
# closes only the child's copies of its descriptors), rather than hold four
# descriptors per decoder of its parent's until it reopens that decoder.
_with_session = weakref.WeakSet()


def _after_fork_in_child():
    global _reopening, _installing
    _reopening = threading.Lock()
    _installing = threading.RLock()
    for decoder in list(_with_session):
        if decoder._native is not None:
            decoder._native = _NOT_OPENED  # reopened on first use, as before
    _with_session.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


# What a requested frame costs beside its pixels, in this process and the
# C++ decoder under it: its index (a Python int, a list slot), its time and
# duration, its record in the request. Counted by the memory check, so that
# ten million 2x2 frames (12 bytes of pixels each, about 100 more each in
# bookkeeping) are refused rather than take the process past its memory.
_FRAME_BOOKKEEPING_BYTES = 256


class VideoDecoder:
    """A single-stream video decoder with torchcodec's interface, whose
    decoding runs in a sandboxed backend process.

    Args:
        source: a path (str or os.PathLike), encoded bytes (bytes, bytearray,
            memoryview, a 1-D uint8 tensor or numpy array), or a file-like object with
            ``read`` and ``seek``.
        stream_index: the stream to decode; None: the best video stream.
        dimension_order: "NCHW" (default) or "NHWC".
        num_ffmpeg_threads: decoder threads; 0 lets the decoder choose (cpu
            starts at most 64, whatever more is asked; another backend may
            refuse more than it takes).
        device: "cpu" (None means "cpu", or CODECVISOR_DEFAULT_DEVICE), or
            a plugin's device such as "acme:0". A plugin is used only when
            its device is named.
        seek_mode: "exact" (scans the file at open; exact indices and
            metadata) or "approximate" (trusts the header; faster to open).
        timeout: seconds a request may wait for the backend's next answer
            before it is killed, restarted and the request replayed
            (default 30); a backend still using CPU then (decoding many
            frames before the one asked for) gets up to ten times this.
        open_timeout: seconds one attempt at opening the file may take
            (exact mode scans it whole) before the backend is killed,
            restarted and the open tried again (default 120).

    A backend that crashes or hangs is restarted and the request replayed;
    a request that crashes it twice raises BackendError. Decoders survive
    fork and pickling (as their source, options and metadata): the copy
    reopens from the source on first use, and a video that changed since
    is an error, never another video's frames.
    """

    def __init__(self, source: Source, *, stream_index: Optional[int] = None,
                 dimension_order: str = "NCHW", num_ffmpeg_threads: int = 1, device=None,
                 seek_mode: str = "exact", transforms=None, custom_frame_mappings=None,
                 timeout: Optional[float] = None, open_timeout: Optional[float] = None):
        # torchcodec's decoder-side transforms and frame tables: None (their
        # default) and no transforms are accepted; anything else would be
        # silently ignored.
        if transforms is not None and not (isinstance(transforms, Sequence) and len(transforms) == 0):
            raise NotImplementedError("transforms are not applied by codecvisor's decoders; apply them to the "
                                      "frames returned (torchvision.transforms.v2 works on them as they are)")
        if custom_frame_mappings is not None:
            raise NotImplementedError("custom_frame_mappings is not supported: exact mode scans the file for the "
                                      "frame table at open, and approximate mode reads the header's")
        if dimension_order not in ("NCHW", "NHWC"):
            raise ValueError(f"Invalid dimension order ({dimension_order}). Supported values are NCHW, NHWC.")
        if seek_mode not in ("exact", "approximate"):
            raise ValueError(f"Invalid seek mode ({seek_mode}). Supported values are exact, approximate.")
        num_ffmpeg_threads = _option_int("num_ffmpeg_threads", num_ffmpeg_threads, _MAX_THREADS)
        if stream_index is not None:
            stream_index = _option_int("stream_index", stream_index, _MAX_STREAM_INDEX)
        for name, seconds in (("timeout", timeout), ("open_timeout", open_timeout)):
            _check_timeout(name, seconds)
        self._kind, self._source = _read_source(source)
        self._label = os.fspath(source) if self._kind == "path" else f"<{len(self._source)} bytes>"
        if self._kind == "bytes" and not self._source:
            raise _errors.EmptyVideoError(f"{self._label}: no bytes to decode", "INVALID_ARGUMENT")
        if self._kind == "path" and _open_errors.is_empty_file(self._source):
            raise _errors.EmptyVideoError(f"{self._label}: the file is empty (0 bytes)", "INVALID_ARGUMENT")
        if device is not None and not str(device):
            # torch.device("") raises: an empty name is no device, not the default one.
            raise _errors.NoSuchDeviceError("device must not be empty: None is the default device", "INVALID_ARGUMENT")
        self._options = dict(device="" if device is None else str(device),
                             stream_index=-1 if stream_index is None else stream_index,
                             planar=dimension_order == "NCHW", threads=num_ffmpeg_threads,
                             seek_mode=seek_mode, timeout=0.0 if timeout is None else float(timeout),
                             open_timeout=0.0 if open_timeout is None else float(open_timeout))
        self._dimension_order = dimension_order
        self._seek_mode = seek_mode
        self._native = None
        self._pid = None
        self._closed = False
        self.metadata = None
        self._video_metadata = None
        self._identity = None  # the path's file as first opened (_sources.file_identity)
        self._open()

    def _open(self):
        """Opens a session on the source. Where the decoder had one (a forked
        child's reopen, an unpickled decoder), the video must be the one it
        had: other metadata (the file was replaced) is an error, never
        another video's frames under the same indices."""
        host = _host.get()
        opening = _sources.file_identity(self._source) if self._kind == "path" else None
        try:
            if self._kind == "path":
                # As bytes: a name that is not UTF-8 is a path all the same.
                native = host.open_path(os.fsencode(self._source), **self._options)
            else:
                native = host.open_bytes(self._source, self._label, **self._options)
        except _codecvisor.StatusError as e:
            error = _open_errors.open_error(e, host, self._kind, self._source, self._options["device"])
            try:
                raise error from None
            finally:
                del error  # its traceback holds this frame
        metadata = VideoStreamMetadata._from_native(native.metadata())
        change = "" if self._video_metadata is None else _metadata_change(self._video_metadata, metadata)
        if change:
            native.close()
            raise _errors.VideoError(f"{self._label}: the video changed since the decoder was made: reopened, "
                                     f"it has other metadata ({change})", "DATA_LOSS")
        # The same metadata from another file at the path (re-encoded with
        # the same settings, or edited in place) is caught on this machine.
        identity = _sources.file_identity(self._source) if self._kind == "path" else None
        replaced = _sources.identity_change(opening, identity)
        if replaced:  # between the two: which did the host open?
            native.close()
            raise _errors.VideoError(f"{self._label}: the file was replaced or rewritten while it was opened (its "
                                     f"{replaced} changed); open it again", "DATA_LOSS")
        changed = "" if self._video_metadata is None else _sources.identity_change(self._identity, identity)
        if changed:
            native.close()
            raise _errors.VideoError(f"{self._label}: the video changed since the decoder was made: reopened, the "
                                     f"file is another or was rewritten (its {changed} differ)", "DATA_LOSS")
        if self._identity is None:
            self._identity = identity
        with _installing:
            installed = not self._closed
            if installed:
                self._native, self._pid = native, os.getpid()
                _with_session.add(self)
        if not installed:
            native.close()
            raise ValueError("the decoder is closed")
        self._keep(metadata)

    def _keep(self, metadata: VideoStreamMetadata) -> None:
        """Keeps the video's metadata as the backend reported it, and the
        values the decoder's checks and computations take from it, as its
        own, as torchcodec's decoder keeps its own copies: self.metadata is
        the user's copy, whose fields they may edit (torchcodec's sampler
        tests set some to None) without moving the decoder's range checks
        or the video a reopen must find. The user's copy is made once: a
        reopen (a forked child's) keeps it as it was edited."""
        self._video_metadata = metadata
        self.stream_index = metadata.stream_index
        self._num_frames, self._begin, self._end, self._fps = (
            metadata.num_frames, metadata.begin_stream_seconds, metadata.end_stream_seconds, metadata.average_fps)
        if self.metadata is None:
            self.metadata = copy.copy(metadata)

    def _decoder(self):
        native = self._native  # once: another thread may close() meanwhile
        if native is None:
            raise ValueError("the decoder is closed")
        if self._pid != os.getpid():  # forked (the parent's session is not ours), or unpickled
            # One thread opens; the others wait for its session. A reopen
            # happens once per decoder and process: one lock for all will do.
            with _reopening:
                if self._native is None:
                    raise ValueError("the decoder is closed")
                if self._pid != os.getpid():
                    # Never the parent's session; after a failed open, the
                    # next call tries again and says why, not "closed".
                    self._native = _NOT_OPENED
                    self._open()
                native = self._native
            if native is None:  # closed just after the open
                raise ValueError("the decoder is closed")
        return native

    def _call(self, method, *args):
        try:
            arrays = getattr(self._decoder(), method)(*args)
        except _codecvisor.StatusError as e:
            error = _errors.translate(e)
            if type(error) is IndexError and self._within_count(method, args):
                error = _errors.MissingFrameError(str(error), e.code)
            try:
                raise error from None
            finally:
                # The error's traceback holds this frame: a local holding
                # the error would keep the decoder (its session, arena and
                # descriptors) alive until the cycle collector runs.
                del error
        return _frame.batch_from(arrays) if len(arrays[0]) else self._empty_batch(closed_check=False)

    def _within_count(self, method, args) -> bool:
        """Whether every frame `method` asked for is one the video's own
        count or time range says it has: an out-of-range answer then means
        the stream lacks it (MissingFrameError), not that the caller asked
        past the end. Times were checked against the stream's range before
        the call; a range's start against the count."""
        n = self._num_frames
        if method in ("frames_at", "frames_at_scattered"):
            return n is not None and all(-n <= i < n for i in args[0])
        if method == "frames_in_range":
            return n is not None
        return (method in ("frames_played_at", "frames_played_at_scattered", "frames_played_in_range")
                and self._end is not None)

    # --- torchcodec's surface -------------------------------------------

    def __len__(self) -> int:
        if self._num_frames is None:
            raise TypeError(f"{self._label}: the number of frames is unknown (the header has no count, "
                            "and no duration and frame rate to estimate one from; use seek_mode='exact')")
        return self._num_frames

    def __getitem__(self, key):
        if isinstance(key, numbers.Integral):
            index = int(key)
            n = len(self)
            if index < 0:
                index += n
            if not 0 <= index < n:
                raise _out_of_range(int(key), n, self.stream_index)
            return self._call("frames_at", [index]).data[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            # A step past the whole stream takes one frame, as any longer one does.
            step = max(-len(self) - 1, min(step, len(self) + 1))
            if self._video_metadata.num_frames_from_content is not None:  # as for a range (get_frames_in_range)
                self._check_memory(len(range(start, stop, step)))
            if step > 0:
                return self._call("frames_in_range", start, max(start, stop), step).data
            return self._in_stream_order(list(range(start, stop, step))).data
        raise TypeError(f"Unsupported key type: {type(key)}. Supported types are int and slice.")

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def get_frame_at(self, index: int) -> Frame:
        index = _index(index)
        self._check_index(index)
        return _frame.first_frame(self._call("frames_at", [index]))

    def get_frames_at(self, indices: Sequence[int]) -> FrameBatch:
        indices = _index_list(indices)
        for i in indices:
            self._check_index(i)
        self._check_memory(len(indices))
        return self._in_stream_order(indices)

    def _check_index(self, index: int) -> None:
        """Raises IndexError unless the stream's count (where known) has frame `index`."""
        n = self._num_frames
        if n is not None and not -n <= index < n:
            raise _out_of_range(index, n, self.stream_index)

    def get_frames_in_range(self, start: int, stop: Optional[int], step: int = 1) -> FrameBatch:
        """Frames [start, stop) every `step`, with a slice's bounds (as
        torchcodec has them since it took slice syntax): a negative index
        counts from the end, bounds past the end stop there, a stop of None
        is the end, and a range with nothing in it is an empty batch."""
        step = _integer(step)
        if not step > 0:
            raise _errors.InvalidStepError(f"Step ({step}) must be greater than 0.")
        start, stop = _integer(start), None if stop is None else _integer(stop)
        n = self._num_frames
        if n is None:
            # No count to take an end from (approximate mode, a header
            # without one): plain bounds, the backend says where it ends.
            if start < 0 or stop is None or stop < 0:
                raise IndexError(f"{self._label}: the number of frames is unknown, so a range needs a start and a "
                                 f"stop from 0 (not {start} and {stop}); use seek_mode='exact'")
            start, stop, step = min(start, _INT64_LIMIT - 1), min(stop, _INT64_LIMIT - 1), min(step, _INT64_LIMIT - 1)
        else:
            start, stop, step = slice(start, stop, step).indices(n)
            step = min(step, n + 1)  # a step past the stream takes one frame, as any longer one does
        if stop <= start:
            return self._empty_batch()
        if self._video_metadata.num_frames_from_content is not None:
            # A count the scan made: the stream has every frame of the range.
            # (A header's may promise frames that never come: the batch then
            # grows only as they do.)
            self._check_memory(-(-(stop - start) // step))
        return self._call("frames_in_range", start, stop, step)

    def _check_played(self, times, error=IndexError):
        """Raises `error` unless a frame is played at each of `times`."""
        begin, end = self._begin, self._end
        if end is None:
            return
        for seconds in times:
            if not begin <= seconds < end:
                # With the phrases of both of torchcodec's messages: its
                # get_frame_played_at's "Invalid pts in seconds", and its
                # get_frames_played_at's "must be greater than or equal to"
                # and "must be less than" (its tests match them).
                raise error(f"Invalid pts in seconds: {seconds}. It must be greater than or equal to {begin} "
                            f"and must be less than {end}.")

    def get_frame_played_at(self, seconds: float) -> Frame:
        seconds = _time(seconds)
        self._check_played([seconds])
        return _frame.first_frame(self._call("frames_played_at", [seconds]))

    def get_frames_played_at(self, seconds: Sequence[float]) -> FrameBatch:
        times = _times(seconds)
        self._check_played(times, _errors.PtsOutOfRangeError)
        self._check_memory(len(times))
        return self._in_stream_order(times, by_time=True)

    def get_frames_played_in_range(self, start_seconds: float, stop_seconds: float,
                                   fps: Optional[float] = None) -> FrameBatch:
        """The frames played in [start_seconds, stop_seconds); with `fps`,
        the range resampled to that rate instead: the frame played at
        start_seconds + i / fps for each of round((stop - start) * fps) (halves up)
        outputs (a frame repeats where fps is above the video's rate), each
        with that time as its pts and 1 / fps as its duration."""
        start_seconds, stop_seconds = _time(start_seconds), _time(stop_seconds)
        self._check_played_range(start_seconds, stop_seconds)
        if fps is not None:
            return self._resampled(start_seconds, stop_seconds, fps)
        if start_seconds == stop_seconds:
            return self._empty_batch()
        # The count the stream's rate gives (and the frame already playing at
        # the start): refused before any frame comes if it could not fit,
        # else the batch's size (it stops a backend that sends more than
        # half the memory this process may use).
        rate = self._fps
        expected = (stop_seconds - start_seconds) * rate if rate else 0.0
        count = math.ceil(expected) + 1 if math.isfinite(expected) and rate else 0
        self._check_memory(count, f" ({stop_seconds - start_seconds} s at {rate} fps)", "a shorter range")
        return self._call("frames_played_in_range", float(start_seconds), float(stop_seconds), count)

    def get_all_frames(self, fps: Optional[float] = None) -> FrameBatch:
        """Every frame (with `fps`: the whole stream resampled to that rate,
        as get_frames_played_in_range does)."""
        if fps is None:
            return self.get_frames_in_range(0, len(self))
        begin, end = self._begin, self._end
        if end is None:
            raise TypeError(f"{self._label}: the stream's end is unknown; use seek_mode='exact'")
        return self.get_frames_played_in_range(begin, end, fps=fps)

    def _resampled(self, start_seconds: float, stop_seconds: float, fps) -> FrameBatch:
        fps = _unwrapped(fps)
        if isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not math.isfinite(fps) or fps <= 0:
            raise _errors.InvalidFpsError(f"fps must be positive and finite, not {fps!r}")
        if start_seconds == stop_seconds:  # empty wherever it is, past the end or at inf too
            return self._empty_batch()
        # Halves round up, as C's round() does for these positive counts
        # (Python's round() would make a 0.5 s range at 1 fps empty).
        outputs = (stop_seconds - start_seconds) * fps + 0.5
        if not math.isfinite(outputs):  # fps 1e308: more outputs than any float counts
            raise MemoryError(f"{self._label}: {stop_seconds - start_seconds} s at {fps} fps is more frames than "
                              "any memory holds; ask for a shorter range or a lower fps")
        count = math.floor(outputs)
        # The times are listed before any frame is asked for: a count no
        # memory could hold the frames of (a long stream at a high fps, or a
        # backend claiming a stream of 1e300 s) is refused first.
        self._check_memory(count, f" ({stop_seconds - start_seconds} s at {fps} fps)", "a shorter range or a lower fps")
        end = self._end
        # The grid as torchcodec computes it: start + i * (1 / fps).
        duration = 1.0 / float(fps)
        grid = [start_seconds + i * duration for i in range(count)]
        # Rounding may put the last output at the end: the last frame plays there.
        last = math.inf if end is None else math.nextafter(end, -math.inf)
        times = [min(t, last) for t in grid]
        distinct = sorted(set(times))
        position = {t: p for p, t in enumerate(distinct)}
        if not times:
            return self._empty_batch()
        import numpy as np
        frames = self._frames_scattered(distinct, [position[t] for t in times], by_time=True).data
        # Each output's time is its place on the grid and its duration
        # 1 / fps, as torchcodec gives them (float64), not the source frame's:
        # a frame repeated at a higher rate is at each of its times.
        return FrameBatch(frames, _tensor.of(np.array(grid, np.float64)), _tensor.of(np.full(count, duration)))

    def _check_memory(self, count: int, what: str = "", instead: str = "fewer frames at a time") -> None:
        """Raises MemoryError if `count` frames would take more than half the
        memory this process may use (the machine's, or its container's
        cgroup limit; the caller needs the rest): refused before anything
        is asked for, where a batch that grew to it would get the process
        killed by the kernel. A batch that grows past it as frames come (a
        time range, whose count is not known) is refused there too."""
        frame_bytes = max(1, (self._video_metadata.width or 1) * (self._video_metadata.height or 1) * 3)
        memory = _codecvisor.usable_memory_bytes()
        if memory and count * (frame_bytes + _FRAME_BOOKKEEPING_BYTES) > memory // 2:
            shown = count if count < 10**18 else f"{float(count):.3g}"
            raise MemoryError(f"{self._label}: {shown} frames{what} of {frame_bytes} bytes each would take more "
                              f"than half the {memory >> 20} MiB of memory this process may use (with "
                              f"{_FRAME_BOOKKEEPING_BYTES} bytes a frame of bookkeeping); ask for {instead}")

    def _check_played_range(self, start_seconds: float, stop_seconds: float) -> None:
        for name, value in (("start", start_seconds), ("stop", stop_seconds)):
            if math.isnan(value):
                raise ValueError(f"Invalid {name} seconds: {value}. It must be a number.")
        if not start_seconds <= stop_seconds:
            raise ValueError(f"Invalid start seconds: {start_seconds}. It must be less than or equal to "
                             f"stop seconds ({stop_seconds}).")
        if start_seconds == stop_seconds:
            return  # empty wherever it is, as torchcodec checks it before the stream's bounds
        begin, end = self._begin, self._end
        if end is not None and not begin <= start_seconds < end:
            raise ValueError(f"Invalid start seconds: {start_seconds}. It must be greater than or equal to "
                             f"{begin} and less than {end}.")
        if end is not None and not stop_seconds <= end:
            raise ValueError(f"Invalid stop seconds: {stop_seconds}. It must be less than or equal to {end}.")

    def _in_stream_order(self, entries: list, by_time: bool = False) -> FrameBatch:
        """The frames at `entries` (checked indices, or times played with
        by_time), in the order asked, from one request for the distinct ones
        in stream order, as torchcodec does: asked in another order (a
        shuffled list, a reversed slice), each would seek back to its key
        frame and decode forward again, a cost that grows with the square
        of the GOP's length."""
        n = self._num_frames
        if not by_time and n is not None:
            entries = [i + n if i < 0 else i for i in entries]
        in_order = all(a < b for a, b in zip(entries, entries[1:]))
        if in_order or (not by_time and n is None and any(i < 0 for i in entries)):
            return self._call("frames_played_at" if by_time else "frames_at", entries)
        import numpy as np
        distinct, where = np.unique(np.asarray(entries), return_inverse=True)
        return self._frames_scattered(distinct.tolist(), where.tolist(), by_time)

    def _frames_scattered(self, distinct: Sequence, where: Sequence[int], by_time: bool = False) -> FrameBatch:
        """The samplers' hook: one request for the `distinct` frames (indices,
        or times played with by_time), returned as a batch whose frame p is
        distinct[where[p]]; a repeated frame costs a copy, not a decode."""
        self._check_memory(len(where))
        if by_time:
            self._check_played(distinct, _errors.PtsOutOfRangeError)
            return self._call("frames_played_at_scattered", [float(s) for s in distinct], list(where))
        return self._call("frames_at_scattered", [int(i) for i in distinct], list(where))

    def _empty_batch(self, closed_check: bool = True) -> FrameBatch:
        """A batch of no frames; of a closed decoder, the error its calls get
        (unless a call answered it, and another thread closed it since)."""
        if closed_check and self._native is None:
            raise ValueError("the decoder is closed")
        import numpy as np
        h, w = self._video_metadata.height or 0, self._video_metadata.width or 0
        shape = (0, 3, h, w) if self._dimension_order == "NCHW" else (0, h, w, 3)
        return _frame.batch_from((np.zeros(shape, np.uint8), np.zeros(0), np.zeros(0)))

    # --- codecvisor's additions -----------------------------------------

    @property
    def backend(self) -> str:
        """The backend serving this decoder ("cpu", or a plugin's name)."""
        return self._decoder().backend_name()

    @property
    def retries(self) -> int:
        """Requests replayed after a backend crash or hang."""
        return self._decoder().retries()

    def close(self):
        """Ends the decoder's session now (also when garbage-collected)."""
        with _installing:  # an open in flight then ends what it makes
            self._closed = True
            native, self._native = self._native, None
            ours = native is not None and native is not _NOT_OPENED and self._pid == os.getpid()
        if ours:
            native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        return dict(kind=self._kind, source=self._source, options=self._options, order=self._dimension_order,
                    seek_mode=self._seek_mode, label=self._label, metadata=dataclasses.asdict(self._video_metadata),
                    shown=self.metadata, closed=self._native is None, identity=self._identity)

    def __setstate__(self, state):
        self._kind, self._source, self._options = state["kind"], state["source"], state["options"]
        self._options.setdefault("open_timeout", 0.0)  # pickled before the option existed
        self._dimension_order, self._seek_mode = state["order"], state["seek_mode"]
        self._label = state.get("label") or (self._source if self._kind == "path" else f"<{len(self._source)} bytes>")
        self._native = None
        self._pid = None
        self._closed = False
        self._identity = state.get("identity")
        metadata = state.get("metadata")
        self._video_metadata = None if metadata is None else VideoStreamMetadata._from_fields(metadata)
        # The user's copy, as they left it (a pickle made by an earlier
        # version has none: a copy of the video's is made).
        # (A copy of it: copy.copy() hands this the original's state.)
        shown = state.get("shown")
        self.metadata = None if shown is None else copy.copy(shown)
        if state.get("closed") and self._video_metadata is not None:
            self._keep(self._video_metadata)  # a copy of a closed decoder is closed too
            self._closed = True
            return
        if self._video_metadata is None or self._video_metadata._unknown:
            # Pickled by an earlier version, before the metadata (or some of
            # its fields) was kept: opened now, for the metadata it lacks.
            self._open()
            return
        # Opened on first use, as in a forked child (its pid is not this
        # process's): unpickling in a spawned DataLoader worker happens while
        # the worker starts, where an error (the file replaced or gone) would
        # end the worker with no word to the training loop; on first use it
        # reaches the loop as the error it is.
        self._keep(self._video_metadata)
        self._native = _NOT_OPENED
