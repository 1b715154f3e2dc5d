"""What a decoder keeps of the source it was given: a path made absolute, or
the encoded bytes (from bytes, a buffer, a tensor or a file-like object)
as an immutable copy."""

import errno
import io
import os
import re

import numpy

from . import _codecvisor, _errors, _tensor

# A URL as torchcodec takes one for a str source (FFmpeg's protocols): a
# scheme, then "://".
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

# How much of a file-like source one read() asks for.
_READ_CHUNK = 1 << 20


def _read_source(source):
    """("path", absolute str) or ("bytes", bytes) for a torchcodec source.

    The decoder keeps what it was given as it was then: a path made absolute
    (a forked or unpickled decoder reopens the same file after a chdir), and
    encoded bytes as an immutable copy (a bytearray, memoryview or tensor the
    caller reuses for the next file must not change what a forked or
    unpickled decoder reopens; bytes are kept as they are).
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if (b"\0" if isinstance(path, bytes) else "\0") in path:
            raise ValueError("embedded null byte in the path")
        if not path:  # not the working folder, which abspath would make of it
            raise _errors.FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        if isinstance(source, str) and _URL.match(path) and not os.path.exists(path):
            raise ValueError(f"{path}: URL sources are not supported (backends run without network access); "
                             "download the file, or pass its bytes or a file-like object")
        return "path", os.path.abspath(path)
    if isinstance(source, bytes):
        return "bytes", source
    if isinstance(source, (bytearray, memoryview)):
        return "bytes", bytes(source)
    if isinstance(source, numpy.ndarray):  # what the decoders return without torch
        if source.dtype != numpy.uint8 or source.ndim != 1:
            raise ValueError(f"an array source must be 1-D uint8 encoded bytes, not {source.dtype} {source.shape}")
        return "bytes", source.tobytes()
    if _tensor.have_torch() and isinstance(source, _tensor.torch.Tensor):
        if source.dtype != _tensor.torch.uint8 or source.dim() != 1:
            raise ValueError(f"a tensor source must be 1-D uint8 encoded bytes, not {source.dtype} {tuple(source.shape)}")
        return "bytes", source.contiguous().cpu().numpy().tobytes()
    if isinstance(source, io.TextIOBase):
        # Checked before reading: video bytes read as text fail to decode
        # as UTF-8 (a UnicodeDecodeError, which says nothing of the mode).
        raise TypeError(f"{type(source).__name__} is a text stream, whose read() returns str, not bytes: "
                        "open the file for binary reading ('rb')")
    if hasattr(source, "read") and hasattr(source, "seek"):
        # Read whole in this process, as torchcodec's file-like contract
        # reads it (read(size) until it returns b"", seek(offset, whence));
        # the backend gets a sealed copy, never a descriptor of the caller's
        # choosing. A stream that cannot seek (a pipe) is read from where it is.
        # The chunks go into one growing buffer whose bytes getvalue()
        # hands over without a copy: the file is held once while read.
        seekable = getattr(source, "seekable", None)
        if seekable is None:
            try:
                source.seek(0, os.SEEK_SET)
            except io.UnsupportedOperation:  # a stream that cannot seek and does not say so
                pass
        elif seekable():
            source.seek(0, os.SEEK_SET)
        # A stream that never ends (a socket that keeps sending, a read()
        # that ignores its size) stops at half the memory this process may
        # use (the machine's, or its container's cgroup limit), a
        # MemoryError, instead of growing until the kernel kills the process.
        contents = io.BytesIO()
        most = (_codecvisor.usable_memory_bytes() or 1 << 62) // 2
        while True:
            chunk = source.read(_READ_CHUNK)
            if isinstance(chunk, memoryview):
                chunk = chunk.tobytes()
            if chunk is None:  # what a non-blocking stream returns when no data is ready
                raise TypeError(f"{type(source).__name__}.read() returned None, not bytes: a non-blocking stream "
                                "with no data ready; make it blocking, or pass the bytes")
            if not isinstance(chunk, (bytes, bytearray)):
                raise TypeError(f"{type(source).__name__}.read() returned {type(chunk).__name__}, not bytes "
                                "(is it open for binary reading?)")
            if len(chunk) > _READ_CHUNK:
                raise ValueError(f"{type(source).__name__}.read({_READ_CHUNK}) returned {len(chunk)} bytes")
            if not chunk:
                break
            if contents.tell() + len(chunk) > most:
                raise MemoryError(f"{type(source).__name__}: more than {most >> 20} MiB read and no end yet: "
                                  "more than half the memory this process may use; pass a path instead")
            contents.write(chunk)
        return "bytes", contents.getvalue()
    raise TypeError(f"Unknown source type: {type(source)}. Supported types are str, os.PathLike, bytes, "
                    "bytearray, memoryview, a 1-D uint8 torch.Tensor or numpy array, and file-like objects with "
                    "read and seek.")


_boot_id = None


def file_identity(path):
    """(boot, device, inode, size, modification time) of the file at `path`
    now; None where it cannot be had. The boot tells this machine's and
    boot's identities from another's, whose device and inode numbers name
    other files."""
    global _boot_id
    if _boot_id is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _boot_id = f.read().strip()
        except OSError:
            _boot_id = ""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (_boot_id, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def identity_change(before, now) -> str:
    """What differs between two identities of one path (file_identity's):
    "" when nothing does, or when they cannot be compared (taken on another
    machine or boot, as a pickle sent to another node whose path is its own
    copy, or on another file system)."""
    if before is None or now is None or not before[0] or tuple(before[:2]) != tuple(now[:2]):
        return ""
    names = ("inode", "size", "modification time")
    return ", ".join(name for name, a, b in zip(names, before[2:], now[2:]) if a != b)
