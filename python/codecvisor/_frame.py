"""Frame and FrameBatch: what the decoders return, as torchcodec's."""

import dataclasses
from typing import Any, Iterator, Union

from . import _tensor


@dataclasses.dataclass
class Frame:
    """One frame: ``data`` is a uint8 tensor (C, H, W) or (H, W, C)."""

    data: Any
    pts_seconds: float
    duration_seconds: float

    def __iter__(self) -> Iterator[Any]:
        yield from (self.data, self.pts_seconds, self.duration_seconds)

    def __repr__(self):
        return (f"Frame:\n  data (shape): {tuple(self.data.shape)}\n  pts_seconds: {self.pts_seconds}\n"
                f"  duration_seconds: {self.duration_seconds}\n")


@dataclasses.dataclass
class FrameBatch:
    """Frames in one contiguous uint8 tensor (N, C, H, W) or (N, H, W, C), with
    float64 tensors of their pts and durations; or clips (codecvisor.samplers),
    5-D, with pts and durations (clips, frames)."""

    data: Any
    pts_seconds: Any
    duration_seconds: Any

    def __len__(self):
        return len(self.data)

    def __iter__(self) -> Iterator[Frame]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key) -> Union[Frame, "FrameBatch"]:
        # An int picks a Frame from frames (4-D), and a clip, itself a
        # FrameBatch, from the samplers' clips (5-D).
        if isinstance(key, int) and self.data.ndim == 4:
            return Frame(self.data[key], float(self.pts_seconds[key]), float(self.duration_seconds[key]))
        return FrameBatch(self.data[key], self.pts_seconds[key], self.duration_seconds[key])

    def __repr__(self):
        return (f"FrameBatch:\n  data (shape): {tuple(self.data.shape)}\n  pts_seconds: {self.pts_seconds}\n"
                f"  duration_seconds: {self.duration_seconds}\n")


def batch_from(arrays) -> FrameBatch:
    data, pts, durations = arrays
    return FrameBatch(_tensor.of(data), _tensor.of(pts), _tensor.of(durations))
