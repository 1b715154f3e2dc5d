"""Reading one source for a batch job (a Dataset sample, a Dask task): open
its decoder, run the job on it, close it; a file that cannot be read is
either raised or turned into a Skipped record, by the caller's policy."""

import dataclasses
import os
from typing import Any, Callable

from ._errors import CodecvisorError, NoSuchDeviceError
from .decoders import VideoDecoder

ON_ERROR = ("skip", "raise")

# What a bad file or backend raises: missing or unreadable when opened
# (OSError), empty (EmptyVideoError for in-memory bytes), corrupt, cut
# short or not decodable by the backend (VideoError, MissingFrameError,
# UnsupportedVideoError), a poison or hung request, a quarantined backend
# (BackendError), no video stream (NoSuchStreamError).
# Anything else (a job's own bug or its own OSError, a sampler argument the
# video cannot satisfy, a device no backend serves: NoSuchDeviceError,
# which every file would meet) is always raised, noting the source.
SKIPPABLE_AT_OPEN = (CodecvisorError, OSError)
SKIPPABLE_IN_JOB = (CodecvisorError,)
NEVER_SKIPPED = (NoSuchDeviceError,)


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A source that was skipped: its index in the job's list, the source
    (a path, or "<N bytes>"), the exception's type name and message."""

    index: int
    source: str
    error: str
    message: str


def check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error = {on_error!r} should be one of {', '.join(ON_ERROR)}.")


def describe(source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return f"<{len(source)} bytes>" if hasattr(source, "__len__") else type(source).__name__


def read(index: int, source, job: Callable[[VideoDecoder], Any], on_error: str, decoder_options: dict):
    """job(decoder) for `source`, or a Skipped record (on_error="skip")."""

    def skip_or_raise(e: BaseException):
        if on_error == "raise" or isinstance(e, NEVER_SKIPPED):
            raise e
        return Skipped(index, describe(source), type(e).__name__, str(e))

    try:
        try:
            decoder = VideoDecoder(source, **decoder_options)
        except SKIPPABLE_AT_OPEN as e:
            return skip_or_raise(e)
        with decoder:
            try:
                return job(decoder)
            except SKIPPABLE_IN_JOB as e:
                return skip_or_raise(e)
    except Exception as e:
        note_source(e, index, source)
        raise


def note_source(e: BaseException, index: int, source) -> None:
    """Notes on `e` which source it came from: a job over thousands of
    videos fails naming one (Dask's report names only the task)."""
    if hasattr(e, "add_note"):  # Python 3.11
        e.add_note(f"codecvisor: while reading source {index}: {describe(source)}")
