"""codecvisor: torchcodec's VideoDecoder, with every decoding backend in a
sandboxed, supervised child process.

    from codecvisor.decoders import VideoDecoder
    decoder = VideoDecoder("clip.mp4")
    frames = decoder.get_frames_in_range(0, 10)   # FrameBatch, uint8 (10, 3, H, W)

Importing codecvisor runs no plugin code and starts nothing: backends are
discovered (from manifests and ``codecvisor.backends`` entry points, unless
CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0) and started on first use.
"""

import sys as _sys

from . import _built_for, _environment

_problem = _environment.interpreter_problem(_built_for.PYTHON, _sys.implementation.name, _sys.version_info)
if _problem:
    raise ImportError(_problem)
try:
    import numpy  # the extension's batches are numpy arrays, with or without torch
except ImportError as e:
    raise ImportError("codecvisor needs numpy in this Python, and could not import it (" + str(e) + "): "
                      "pip install 'numpy<2', or, offline, put a folder holding a link to another Python "
                      f"{_sys.version_info[0]}.{_sys.version_info[1]}'s numpy package (Debian's: "
                      "/usr/lib/python3/dist-packages/numpy) on PYTHONPATH") from e
_problem = _environment.numpy_problem(numpy.__version__)
if _problem:
    raise ImportError(_problem)
del numpy, _problem

from . import backends, decoders
from ._codecvisor import __version__
from ._errors import (BackendError, CodecvisorError, CodecvisorWarning, EmptyVideoError, MissingFrameError,
                      NoSuchDeviceError, NoSuchStreamError, UnsupportedVideoError, VideoError)
from ._frame import Frame, FrameBatch

__all__ = ["BackendError", "CodecvisorError", "CodecvisorWarning", "EmptyVideoError", "Frame", "FrameBatch", "MissingFrameError", "NoSuchDeviceError",
           "NoSuchStreamError",
           "UnsupportedVideoError", "VideoError", "backends",
           "decoders", "__version__"]
