"""The exceptions codecvisor raises, and how a C++ Status becomes one.

Misuse raises what torchcodec raises for the same misuse (IndexError for an
index or time out of range, ValueError for a bad argument, TypeError for a
bad source). A file that cannot be opened raises the OSError Python's open()
would, which is also a RuntimeError, as torchcodec's is. Anything the backend did wrong raises BackendError, whose
message is the host's diagnostic: the backend, the file, the request and,
when it died, how.
"""

import builtins
import errno
import os


class CodecvisorError(RuntimeError):
    """Base class of codecvisor's own errors. ``code`` is the C++ status code
    name ("DATA_LOSS", "ABORTED", ...), or None."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class CodecvisorWarning(UserWarning):
    """What the host warns of as it starts (backends without a cgroup, a
    CODECVISOR_* variable it cannot read, a device two backends claim),
    once per process, as the CLI prints it; also in
    codecvisor.backends.warnings(). Silence it with
    ``warnings.filterwarnings("ignore", category=codecvisor.CodecvisorWarning)``."""


class BackendError(CodecvisorError):
    """The backend failed: it crashed twice on one request (a poison
    request, code ABORTED), hung past its deadline (DEADLINE_EXCEEDED), or is
    quarantined or gone (FAILED_PRECONDITION, UNAVAILABLE)."""


class VideoError(CodecvisorError):
    """The video itself cannot be decoded: corrupt or truncated (code
    DATA_LOSS), or one the backend does not decode (UnsupportedVideoError,
    code UNIMPLEMENTED)."""


class UnsupportedVideoError(VideoError, ValueError):
    """The video is one the backend does not decode, or not as asked: a codec
    it has no decoder for, a pixel format it cannot convert, frames larger
    than it decodes, or (approximate mode) a header without the frame rate
    or count that mode needs (code UNIMPLEMENTED). A ``ValueError``, as
    torchcodec's option checks are; a ``VideoError``, so a batch job's
    ``on_error="skip"`` skips such a file as it skips a corrupt one."""


class EmptyVideoError(VideoError, ValueError):
    """An in-memory video (bytes, a tensor, a file object read to its end)
    with no bytes at all. A ``ValueError``, as an argument no decoder can
    use; a ``VideoError``, so a batch job's ``on_error="skip"`` skips it as
    it skips an empty file."""


class MissingFrameError(VideoError, IndexError):
    """A frame the video's own count says it has (an index below ``len()``,
    or a time inside the stream's range) that its stream does not hold: a
    file cut short, or (approximate mode) a header whose frame count or rate
    is off. An ``IndexError``, as any frame past the end is; a ``VideoError``,
    so a batch job's ``on_error="skip"`` skips the file as it skips one whose
    damage exact mode finds at open (code OUT_OF_RANGE)."""


class NoSuchDeviceError(CodecvisorError, ValueError):
    """No backend serves the requested device, or its plugin failed to load
    (the message says why)."""


class NoSuchStreamError(CodecvisorError, ValueError):
    """The video has no stream of the kind asked for: no video stream at all,
    or none at the ``stream_index`` given (torchcodec raises ValueError here
    too)."""


class InvalidFpsError(ValueError, RuntimeError):
    """An output frame rate that is not a positive number: a ValueError, and a
    RuntimeError as torchcodec raises there."""


class FrameIndexTypeError(TypeError, RuntimeError):
    """A frame index that is not an integer (1.5, a float list entry): a
    TypeError, and a RuntimeError as torchcodec's int-typed ops raise."""


class InvalidStepError(IndexError, ValueError, RuntimeError):
    """A step of a frame range that is not positive: torchcodec raises
    ValueError for 0 (from ``slice``) and RuntimeError for a negative one;
    an IndexError, as codecvisor raised before it matched them."""


class PtsOutOfRangeError(IndexError, RuntimeError):
    """A time no frame is played at, in a request for several
    (get_frames_played_at): an IndexError as the one-frame call raises, and a
    RuntimeError as torchcodec raises there."""


# A file the host could not open: the OSError Python's own open() would
# raise, and a RuntimeError as torchcodec raises for a file it cannot open,
# so that `except OSError` and `except RuntimeError` both see it. Each has
# its builtin's name, which is what a user reads (and a batch job records).
class FileNotFoundError(builtins.FileNotFoundError, RuntimeError):
    pass


class IsADirectoryError(builtins.IsADirectoryError, RuntimeError):
    pass


class NotADirectoryError(builtins.NotADirectoryError, RuntimeError):
    pass


class PermissionError(builtins.PermissionError, RuntimeError):
    pass


class OSError(builtins.OSError, RuntimeError):
    pass


_BACKEND_CODES = {
    "ABORTED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "FAILED_PRECONDITION", "INTERNAL",
    "RESOURCE_EXHAUSTED", "UNKNOWN", "CANCELLED", "PERMISSION_DENIED",
}


def _stat_errno(path):
    try:
        os.stat(path)
    except builtins.OSError as e:
        return e.errno
    except ValueError:  # an embedded NUL: not a path the host opened
        return None
    return None


_PATH_ERRORS = {errno.ENOENT: FileNotFoundError, errno.ENOTDIR: NotADirectoryError}


def translate(error, path=None, backend_started=False, plugin_unloadable=False):
    """The Python exception for a _codecvisor.StatusError; `path` is the file
    the failed call opened, if it opened one, `backend_started` whether a
    backend of the device it opened on has started (then a NOT_FOUND is the
    backend's answer about the video, not the host's about the device), and
    `plugin_unloadable` whether the call failed because that device's
    plugin cannot be loaded (NoSuchDeviceError, whatever the code)."""
    code = getattr(error, "code", None)
    message = str(error)
    # The host opens the path before it asks for the backend: a path it
    # cannot open is that, whatever the device.
    if path is not None and code in ("NOT_FOUND", "INVALID_ARGUMENT") and not os.path.exists(path):
        # What stat() says of the path (a missing file, a file used as a
        # folder on the way, a link loop, a name too long), with its errno
        # and file name, as open() would raise it.
        failure = _stat_errno(path)
        if failure is not None:
            return _PATH_ERRORS.get(failure, OSError)(failure, message, path)
    # The host could not open the path: the OSError Python's own open()
    # would raise, so that `except OSError` (and a batch job's skip) sees it.
    # A folder on the way that this user may not search hides the file
    # itself (it does not "exist"): that is a PermissionError too.
    if path is not None and code == "PERMISSION_DENIED":
        try:
            os.stat(path)
        except builtins.PermissionError:
            return PermissionError(errno.EACCES, message, path)
        except OSError:
            pass
    if path is not None and code in ("INVALID_ARGUMENT", "PERMISSION_DENIED") and os.path.exists(path):
        if os.path.isdir(path):
            return IsADirectoryError(errno.EISDIR, message, path)
        if not os.path.isfile(path) or "not a regular file" in message:  # a FIFO; a file of /proc or /sys
            return OSError(errno.EINVAL, message, path)
        if code == "PERMISSION_DENIED" and not os.access(path, os.R_OK):
            return PermissionError(errno.EACCES, message, path)
    if plugin_unloadable:
        return NoSuchDeviceError(message, code)
    if code == "OUT_OF_RANGE":
        return IndexError(message)
    if code == "INVALID_ARGUMENT":
        return ValueError(message)
    if code == "UNIMPLEMENTED":
        return UnsupportedVideoError(message, code)
    if code == "NOT_FOUND":
        if backend_started:
            return NoSuchStreamError(message, code)
        return NoSuchDeviceError(message, code)
    if code == "DATA_LOSS":
        return VideoError(message, code)
    if code in _BACKEND_CODES:
        return BackendError(message, code)
    return CodecvisorError(message, code)
