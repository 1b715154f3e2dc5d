"""The checks and conversions of a decoder's arguments: indices, times and
options, with the exceptions torchcodec raises for the same misuse."""

import numbers
import operator
from typing import List

from . import _errors, _tensor


def _integer(value) -> int:
    """`value` as an int: an int, a numpy integer or a one-element integer
    tensor (anything with __index__). A float such as 1.5 is an error that
    is a TypeError and a RuntimeError (torchcodec's int-typed ops raise the
    latter), not frame 1."""
    try:
        return operator.index(value)
    except TypeError:
        raise _errors.FrameIndexTypeError(
            f"A frame index must be an integer, not {type(value).__name__} {value!r}"
            + (" (expected scalar type Long but found Float)." if isinstance(value, numbers.Real) else ".")) from None


def _index_list(indices) -> list:
    """Frame indices as ints. A tensor of them is converted to int64 first,
    as torchcodec converts one (a float tensor from torch.linspace truncates
    toward zero); a list or an array must hold integers."""
    if _tensor.have_torch() and isinstance(indices, _tensor.torch.Tensor):
        if indices.dim() != 1:
            raise ValueError(f"frame indices must be 1-D, not a tensor of shape {tuple(indices.shape)}")
        if indices.is_floating_point() and not bool(_tensor.torch.isfinite(indices).all()):
            raise ValueError("frame indices must be finite: the tensor holds NaN or an infinity")
        if indices.is_floating_point() and indices.numel() and float(indices.abs().max()) >= _INT64_LIMIT:
            raise IndexError(f"Index {float(indices.abs().max())} is out of bounds of any stream.")
        indices = indices.to(_tensor.torch.int64).tolist()
    elif getattr(indices, "ndim", 1) != 1:  # a numpy array
        raise ValueError(f"frame indices must be 1-D, not an array of shape {tuple(indices.shape)}")
    elif isinstance(indices, (str, bytes)):
        raise TypeError(f"frame indices must be a sequence of integers, not {type(indices).__name__} {indices!r}")
    return [_index(i) for i in indices]


def _out_of_range(index: int, n: int, stream_index: int) -> IndexError:
    """torchcodec's IndexError for a frame index outside a stream of `n`
    frames (its messages' phrases, which its tests match)."""
    if index < 0:
        return IndexError(f"Invalid frame index={index} for stream {stream_index}: negative indices must have an "
                          f"absolute value less than the number of frames, {n}.")
    return IndexError(f"Invalid frame index={index} for stream {stream_index}: it must be less than {n}, "
                      "the number of frames.")


def _unwrapped(value):
    """A 0-d tensor or array as the Python number it holds; anything else as it is."""
    return value.item() if getattr(value, "ndim", None) == 0 and hasattr(value, "item") else value


def _times(seconds) -> List[float]:
    """A sequence of times (a list, a 1-D tensor or array) as floats; a
    ValueError (torchcodec's) for anything that is not one."""
    if hasattr(seconds, "ndim") and seconds.ndim != 1:
        raise ValueError(f"Couldn't convert timestamps input to a tensor of seconds: it has {seconds.ndim} dimensions, "
                         "not 1")
    if hasattr(seconds, "tolist"):
        seconds = seconds.tolist()
    times = []
    for s in seconds:
        s = _unwrapped(s)  # a 0-d tensor or array, as list(tensor) and torchcodec's samplers make
        if isinstance(s, bool) or not isinstance(s, numbers.Real):
            raise ValueError(f"Couldn't convert timestamps input to a tensor of seconds: {s!r} is not a number")
        times.append(float(s))
    return times


def _time(seconds) -> float:
    """One time in seconds as a float: a number, or anything float() takes
    by its __float__ (a Decimal, a one-element tensor or array), as a
    float-typed argument takes it; a TypeError for a bool, a string or a
    tensor of several."""
    if not isinstance(seconds, bool) and hasattr(seconds, "__float__"):
        try:
            return float(seconds)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"a time in seconds must be a number, not {type(seconds).__name__} {seconds!r}")


def _index(value) -> int:
    """`value` as a frame index (_integer); one past what 64 bits hold is
    out of range of any stream (IndexError)."""
    index = _integer(value)
    if not -_INT64_LIMIT <= index < _INT64_LIMIT:
        raise IndexError(f"Index {index} is out of bounds of any stream.")
    return index


# Bounds of the native options: a stream index and a thread count are 32-bit
# there, and a timeout is in int64 milliseconds.
_INT64_LIMIT = 1 << 63
_MAX_STREAM_INDEX = (1 << 31) - 1
_MAX_THREADS = 1024
_MAX_TIMEOUT_SECONDS = 1e9  # about 31 years: a deadline, where inf would be none
_MIN_TIMEOUT_SECONDS = 1e-3


def _option_int(name: str, value, most: int) -> int:
    """`value` (an int, a numpy integer, ...) as an int from 0 to `most`."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} = {value!r} should be an int from 0 to {most}.") from None
    if not 0 <= number <= most:
        raise ValueError(f"{name} = {number} should be from 0 to {most}.")
    return number


def _check_timeout(name: str, seconds) -> None:
    """Refuses a timeout that is not a finite number of seconds the host can
    wait: every wait has a deadline (inf would be none), and one shorter than
    a millisecond would declare a working backend hung and kill it."""
    if seconds is None:
        return
    if not isinstance(seconds, numbers.Real) or not _MIN_TIMEOUT_SECONDS <= seconds <= _MAX_TIMEOUT_SECONDS:
        raise ValueError(f"{name} = {seconds!r} should be None or a number of seconds from "
                         f"{_MIN_TIMEOUT_SECONDS} to {_MAX_TIMEOUT_SECONDS:.0e}.")
