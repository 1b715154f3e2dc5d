"""VideoStreamMetadata, the metadata of a decoder's stream with torchcodec's
field names (public as codecvisor.decoders.VideoStreamMetadata), and how
two of them differ."""

import dataclasses
import functools
import inspect
import math
from fractions import Fraction
from typing import Optional

_SPACES = "  "


# The most frames a stream can have (the cpu backend's FrameIndex::kMaxFrames):
# an estimate from a header's duration is capped there, as the backend caps it.
_MAX_FRAMES = 1 << 24


@dataclasses.dataclass
class VideoStreamMetadata:
    """Metadata of the decoded video stream, with torchcodec's field names.

    ``*_from_content`` fields come from the scan an exact-mode decoder makes
    when it opens (None in approximate mode); ``*_from_header`` ones from
    the container, in both modes (None where the header does not say, or
    the backend does not report it). ``rotation`` is the display matrix's
    angle in degrees, counter-clockwise; None when the stream has none.
    """

    duration_seconds_from_header: Optional[float]
    begin_stream_seconds_from_header: Optional[float]
    bit_rate: Optional[float]
    codec: Optional[str]
    stream_index: int
    begin_stream_seconds_from_content: Optional[float]
    end_stream_seconds_from_content: Optional[float]
    width: Optional[int]
    height: Optional[int]
    num_frames_from_header: Optional[int]
    num_frames_from_content: Optional[int]
    average_fps_from_header: Optional[float]
    # With defaults: torchcodec's constructor arguments (its tests build a
    # VideoStreamMetadata directly) make one without them.
    rotation: Optional[float] = None
    pixel_format: Optional[str] = None
    color_space: Optional[str] = None
    color_range: Optional[str] = None
    # With defaults: a decoder pickled before they were reported unpickles.
    color_primaries: Optional[str] = None
    color_transfer_characteristic: Optional[str] = None
    # A pixel's width over its height, as the file says (after the display
    # rotation the frames get); None where it does not.
    pixel_aspect_ratio: Optional[Fraction] = None
    # Approximate mode: where the backend's nominal timeline puts the first
    # frame and the end, when that is not the header's start (an AVI with
    # B-frames shows its first frame a frame or two after it); None where
    # it is the header's. Not torchcodec fields: left out of the repr.
    _begin_nominal: Optional[float] = None
    _end_nominal: Optional[float] = None
    # The values assigned to the computed ones below, {name: value} (None:
    # none). A field, so that dataclasses.replace() and asdict() keep them
    # as they keep the other fields; replaced on each assignment, never
    # changed in place, so that metadata sharing it (a copy.copy(), a
    # replace()) each keep their own. Not compared: the values it holds are.
    _assigned: Optional[dict] = dataclasses.field(default=None, repr=False, compare=False)
    # Computed from the fields above on each access (the properties set
    # below the class), as torchcodec's @property values are: a field a user
    # edits (num_frames_from_header = None) changes them. Declared as fields
    # so that dataclasses.asdict(), equality and the repr have them, as
    # torchcodec's newest releases, whose computed values are fields, do.
    duration_seconds: Optional[float] = dataclasses.field(init=False)
    begin_stream_seconds: float = dataclasses.field(init=False)
    end_stream_seconds: Optional[float] = dataclasses.field(init=False)
    num_frames: Optional[int] = dataclasses.field(init=False)
    average_fps: Optional[float] = dataclasses.field(init=False)

    def _duration(self) -> Optional[float]:
        """From the scan if there was one, else the header's; else, as
        torchcodec does, the header's frame count over its frame rate."""
        if self.end_stream_seconds_from_content is not None and self.begin_stream_seconds_from_content is not None:
            return self.end_stream_seconds_from_content - self.begin_stream_seconds_from_content
        if self.duration_seconds_from_header is not None:
            return self.duration_seconds_from_header
        if self.num_frames_from_header is not None and self.average_fps_from_header:
            return self.num_frames_from_header / self.average_fps_from_header
        return None

    def _begin(self) -> float:
        if self.begin_stream_seconds_from_content is not None:
            return self.begin_stream_seconds_from_content
        if self._begin_nominal is not None:
            return self._begin_nominal
        return self.begin_stream_seconds_from_header or 0.0

    def _end(self) -> Optional[float]:
        if self.end_stream_seconds_from_content is not None:
            return self.end_stream_seconds_from_content
        if self._end_nominal is not None:
            return self._end_nominal
        return None if self.duration_seconds is None else self.begin_stream_seconds + self.duration_seconds

    def _count(self) -> Optional[int]:
        """From the scan if there was one, else the header's; else, as
        torchcodec does, estimated from the header's duration and frame rate
        (WebM, Matroska and MPEG-TS headers carry no count). The estimate is
        rounded half away from zero, as the cpu backend's approximate mode
        counts the frames it serves (torchcodec truncates)."""
        if self.num_frames_from_content is not None:
            return self.num_frames_from_content
        if self.num_frames_from_header is not None:
            return self.num_frames_from_header
        fps, duration = self.average_fps_from_header, self.duration_seconds_from_header
        if fps is None or duration is None or not math.isfinite(fps * duration):
            return None
        frames = fps * duration
        whole = math.floor(frames)
        # The cpu backend's bound on a stream's frames.
        return min(whole + (1 if frames - whole >= 0.5 else 0), _MAX_FRAMES)

    def _fps(self) -> Optional[float]:
        begin, end = self.begin_stream_seconds_from_content, self.end_stream_seconds_from_content
        if begin is None or end is None or self.num_frames is None or end == begin:
            return self.average_fps_from_header
        return self.num_frames / (end - begin)

    def __repr__(self):
        s = "VideoStreamMetadata:\n"
        for field in dataclasses.fields(self):
            if not field.name.startswith("_"):
                s += f"{_SPACES}{field.name}: {getattr(self, field.name)}\n"
        return s

    @classmethod
    def _from_fields(cls, fields: dict) -> "VideoStreamMetadata":
        """The metadata whose given fields (dataclasses.asdict's) are `fields`;
        computed ones there are computed again (those assigned are kept in
        _assigned). Fields a pickle made by an earlier version lacks are not
        compared when the video is reopened."""
        given = {f.name for f in dataclasses.fields(cls) if f.init}
        metadata = cls(**{name: value for name, value in fields.items() if name in given})
        metadata._unknown = {f.name for f in dataclasses.fields(cls) if f.init and f.compare} - set(fields)
        return metadata

    def __setstate__(self, state):
        # A metadata object pickled by an earlier version: the fields added
        # since take their defaults, and the computed values it kept are
        # left out (computed again). A copy: copy.copy() passes the
        # original's own __dict__.
        self.__dict__.update({name: value for name, value in state.items() if name not in _COMPUTED})
        for f in dataclasses.fields(self):
            if f.init and f.name not in state and f.default is not dataclasses.MISSING:
                setattr(self, f.name, f.default)

    @staticmethod
    def _from_native(m: dict) -> "VideoStreamMetadata":
        scanned = m["num_frames_from_scan"] >= 0
        header_duration, header_begin = m["header_times"] or (None, None)

        def positive(x):
            return x if x is not None and x > 0 else None

        # Approximate mode, where the backend moved its nominal timeline's
        # start past the header's (frames are named from there).
        shifted = (not scanned and header_begin is not None and header_duration is not None
                   and m["begin_stream_seconds"] > header_begin and m["end_stream_seconds"] > m["begin_stream_seconds"])

        return VideoStreamMetadata(
            duration_seconds_from_header=positive(header_duration),
            begin_stream_seconds_from_header=header_begin,
            # The stream's bit rate, 0.0 where the container has none (as
            # torchcodec reports it).
            bit_rate=max(0.0, float(m["bit_rate"])),
            codec=m["codec"] or None,
            stream_index=m["stream_index"],
            begin_stream_seconds_from_content=m["begin_stream_seconds"] if scanned else None,
            end_stream_seconds_from_content=m["end_stream_seconds"] if scanned else None,
            width=m["width"] or None,
            height=m["height"] or None,
            num_frames_from_header=m["num_frames_from_header"] if m["num_frames_from_header"] >= 0 else None,
            num_frames_from_content=m["num_frames_from_scan"] if scanned else None,
            average_fps_from_header=positive(m["average_fps"]),
            # 0 is a stream without a display matrix (FFmpeg exports none for the identity).
            rotation=m["rotation_degrees"] or None,
            pixel_format=_known(m["pixel_format"]),
            color_space=_known(m["color_space"]),
            color_range=_known(m["color_range"]),
            color_primaries=_known(m["color_primaries"]),
            color_transfer_characteristic=_known(m["color_transfer"]),
            pixel_aspect_ratio=None if m["pixel_aspect_ratio"] is None else Fraction(*m["pixel_aspect_ratio"]),
            _begin_nominal=m["begin_stream_seconds"] if shifted else None,
            _end_nominal=m["end_stream_seconds"] if shifted else None,
        )


# The computed values and the method that computes each (called on the
# instance: a subclass's own method is the one used).
_COMPUTED = {
    "duration_seconds": "_duration",
    "begin_stream_seconds": "_begin",
    "end_stream_seconds": "_end",
    "num_frames": "_count",
    "average_fps": "_fps",
}


def _computed(name: str, method: str) -> property:
    """The value `method` computes from the fields as they are now. A value
    assigned to it (torchcodec's newest releases, whose computed values are
    fields, let a user set metadata.end_stream_seconds = None, and their
    sampler tests do) is the value until deleted."""

    def get(self):
        assigned = self._assigned
        return assigned[name] if assigned and name in assigned else getattr(self, method)()

    def set_(self, value):
        self._assigned = {**(self._assigned or {}), name: value}

    def delete(self):
        self._assigned = {k: v for k, v in (self._assigned or {}).items() if k != name} or None

    return property(get, set_, delete, getattr(VideoStreamMetadata, method).__doc__)


# After the dataclass is made: a property there before would be taken for
# the fields' default.
for _name, _method in _COMPUTED.items():
    setattr(VideoStreamMetadata, _name, _computed(_name, _method))

_dataclass_init = VideoStreamMetadata.__init__


@functools.wraps(_dataclass_init)
def _init(self, *args, **kwargs):
    # torchcodec's newest releases take the computed values as constructor
    # arguments too (its metadata is built with every one of them): a value
    # given is kept as one assigned.
    given = {name: kwargs.pop(name) for name in _COMPUTED if name in kwargs}
    _dataclass_init(self, *args, **kwargs)
    for name, value in given.items():
        setattr(self, name, value)


# What help() and inspect.signature() show: torchcodec's arguments and the
# computed values (keyword only), not the private fields a pickle or
# dataclasses.asdict() carries (still accepted).
_init.__signature__ = inspect.Signature(
    [p for p in inspect.signature(_dataclass_init).parameters.values() if not p.name.startswith("_")] +
    [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Optional[float])
     for name in _COMPUTED])
VideoStreamMetadata.__init__ = _init


def _known(name: str) -> Optional[str]:
    """A name the backend reports, None where it is unknown or unspecified
    (as torchcodec gives None)."""
    return None if name in ("", "unknown", "unspecified") else name


def _metadata_change(before: VideoStreamMetadata, after: VideoStreamMetadata) -> str:
    """The fields that differ, as "name: before -> after" (empty: none),
    leaving out those `before` does not know (a pickle made by an earlier
    version lacks them)."""
    unknown = getattr(before, "_unknown", set())
    return ", ".join(f"{f.name}: {getattr(before, f.name)} -> {getattr(after, f.name)}"
                     for f in dataclasses.fields(before)
                     if f.compare and f.name not in unknown and getattr(before, f.name) != getattr(after, f.name))


# Its public home, as torchcodec's is torchcodec.decoders: pickles and
# reprs name it there.
VideoStreamMetadata.__module__ = "codecvisor.decoders"
