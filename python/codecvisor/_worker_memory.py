"""The batch cache fitted to a Dask worker's memory limit, wherever a
worker first uses codecvisor: a codecvisor.dask task, or a plain task that
opens a decoder (the host is made then). Imports nothing of Dask's: a
process that has not imported distributed is no worker."""

import os
import sys

from . import _codecvisor

_cache_fitted_to = None  # (pid, worker memory limit) the batch cache was last fitted to


def _cache_size_from_environment() -> bool:
    """Whether CODECVISOR_BATCH_CACHE_MIB holds a size the batch cache takes
    (a whole number of MiB): any other value is ignored there, with a
    warning in codecvisor.backends.warnings(), and must not stop the cache
    being fitted to the worker either."""
    value = os.environ.get("CODECVISOR_BATCH_CACHE_MIB")
    if value is None:
        return False
    value = value.strip()
    value = value[1:] if value.startswith("+") else value
    return value.isascii() and value.isdigit()


def fit_batch_cache_to_worker() -> None:
    """In a Dask worker with a memory limit, keep at most a sixteenth of it
    in the batch cache: a worker pauses itself above 80% of its limit by
    the process's resident memory, which the cache's kept pages count in,
    and a paused worker runs no task that would give them back. (Workers
    that are threads of one process share its cache: the smallest limit
    among them sets it, also across clusters started one after another.)"""
    global _cache_fitted_to
    if _cache_size_from_environment():
        return
    distributed = sys.modules.get("distributed")
    if distributed is None:  # never imported: not a Dask worker
        return
    try:
        worker = distributed.get_worker()
    except ValueError:  # not in a worker: the threaded or synchronous scheduler
        return
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None) or 0
    if _cache_fitted_to == (os.getpid(), limit):
        return
    _cache_fitted_to = (os.getpid(), limit)
    if limit > 0 and limit // 16 < _codecvisor.batch_cache_limit_bytes():
        _codecvisor.set_batch_cache_limit_bytes(limit // 16)
