"""Frame and FrameBatch: what the decoders return, as torchcodec's."""

import dataclasses
from typing import Any, Iterator

from . import _tensor


@dataclasses.dataclass
class Frame:
    """One frame: ``data`` is a uint8 tensor (C, H, W) or (H, W, C)."""

    data: Any
    pts_seconds: float
    duration_seconds: float

    def __post_init__(self):
        if self.data.ndim != 3:
            raise ValueError(f"data must be 3-dimensional, got shape {tuple(self.data.shape)}")
        self.pts_seconds = float(self.pts_seconds)
        self.duration_seconds = float(self.duration_seconds)

    def __iter__(self) -> Iterator[Any]:
        yield from (self.data, self.pts_seconds, self.duration_seconds)

    def __repr__(self):
        return (f"{type(self).__name__}:\n  data (shape): {self.data.shape}\n  pts_seconds: {self.pts_seconds}\n"
                f"  duration_seconds: {self.duration_seconds}\n")


@dataclasses.dataclass
class FrameBatch:
    """Frames in one contiguous uint8 tensor (N, C, H, W) or (N, H, W, C), with
    float64 tensors of their pts and durations; or clips (codecvisor.samplers),
    5-D, with pts and durations (clips, frames). As torchcodec's, indexing or
    iterating gives FrameBatches too: ``batch[i]`` is frame i with 3-D data and
    0-D pts and duration tensors (``float()`` of them is the number)."""

    data: Any
    pts_seconds: Any
    duration_seconds: Any

    def __post_init__(self):
        if self.data.ndim < 3:
            raise ValueError(f"data must be at least 3-dimensional, got shape {tuple(self.data.shape)}")
        leading = tuple(self.data.shape[:-3])
        if not leading == tuple(self.pts_seconds.shape) == tuple(self.duration_seconds.shape):
            raise ValueError(f"Tried to create a FrameBatch but the leading dimensions of the inputs do not match: "
                             f"data {tuple(self.data.shape)} leads with {leading}, pts_seconds is "
                             f"{tuple(self.pts_seconds.shape)} and duration_seconds "
                             f"{tuple(self.duration_seconds.shape)}")

    def __len__(self):
        return len(self.data)

    def __iter__(self) -> Iterator["FrameBatch"]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key) -> "FrameBatch":
        return FrameBatch(self.data[key], self.pts_seconds[key], self.duration_seconds[key])

    def __repr__(self):
        return (f"{type(self).__name__}:\n  data (shape): {self.data.shape}\n  pts_seconds: {self.pts_seconds}\n"
                f"  duration_seconds: {self.duration_seconds}\n")


def first_frame(batch: FrameBatch) -> Frame:
    """The first frame of `batch` as a Frame, with float times."""
    return Frame(batch.data[0], batch.pts_seconds[0], batch.duration_seconds[0])


def batch_from(arrays) -> FrameBatch:
    data, pts, durations = arrays
    return FrameBatch(_tensor.of(data), _tensor.of(pts), _tensor.of(durations))
