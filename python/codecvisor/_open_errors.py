"""Why a decoder's open failed, as the exception a torchcodec user expects:
a host error translated, with what this process can tell besides (the
device's backend never started, its plugin could not load, the bytes given
were a file's name)."""

import os
import stat

from . import _errors


def is_empty_file(path) -> bool:
    """Whether `path` is a regular file with no bytes (what cannot be read is
    the open's to report). A size of 0 is read to be sure: procfs, sysfs and
    some FUSE filesystems give it for files with contents."""
    try:
        # Non-blocking, and judged by what was opened: a FIFO put in the
        # path's place cannot hold the caller, nor a device be read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return False
    try:
        status = os.fstat(fd)
        return stat.S_ISREG(status.st_mode) and status.st_size == 0 and os.pread(fd, 1, 0) == b""
    except OSError:
        return False
    finally:
        os.close(fd)


def _names_a_file(data: bytes) -> bool:
    """Whether `data`, given as a video's bytes, is short and the name of an
    existing file: a path passed as bytes (os.fsencode's) by mistake."""
    if len(data) > 4096 or b"\0" in data:
        return False
    try:
        return os.path.isfile(data)
    except (OSError, ValueError):
        return False


# Supervisor states of a backend that has started, or is starting: up,
# starting for the first time, or being replaced after it died.
_STARTED_STATES = ("ready", "spawning", "restarting")


def backend_started(backends, device: str) -> bool:
    """Whether a backend serving `device` (a name, or "name:index") has
    started, from `host.backends()`: an open that failed with NOT_FOUND then
    failed in that backend (the video lacks the stream asked for), not in
    finding or starting it. A backend that died in the moment after it
    answered still counts: it is restarting. One that never started
    ("discovered"), could not ("failed") or was given up ("quarantined")
    leaves the device unusable, which is the error to report."""
    name = device.split(":")[0]
    return any(name in b["devices"] and b["state"] in _STARTED_STATES for b in backends)


def plugin_unloadable(backends, code, serves) -> bool:
    """Whether a failure (`code`) of a call that needed the backends for
    which `serves(backend)` holds is their plugin failing to load: one of
    them is "failed" (its start was given up)
    for a reason other than dying or hanging as it started (UNAVAILABLE,
    DEADLINE_EXCEEDED: a BackendError, as any crash is). Its library's ABI,
    function table or name then make the device unusable, as a missing
    library does (NoSuchDeviceError)."""
    if code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"):
        return False
    return any(serves(b) and b["state"] == "failed" for b in backends)


def open_error(e, host, kind: str, source, device: str) -> Exception:
    """The exception for `e`, a StatusError of an open of `source` (a path
    when `kind` is "path", else the video's bytes) on `device` ("" for the
    host's default)."""
    code, device = getattr(e, "code", None), device or host.default_device()
    backends = host.backends()
    error = _errors.translate(e, source if kind == "path" else None,
                              backend_started=code == "NOT_FOUND" and backend_started(backends, device),
                              plugin_unloadable=plugin_unloadable(backends, code,
                                                                  lambda b: device.split(":")[0] in b["devices"]))
    if kind == "bytes" and isinstance(error, _errors.CodecvisorError) and _names_a_file(source):
        error.args = (f"{error.args[0]} (these bytes name a file: bytes are the encoded video itself; "
                      "pass a path as str or os.PathLike)",) + error.args[1:]
    return error
