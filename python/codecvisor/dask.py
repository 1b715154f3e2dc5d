"""codecvisor.dask: one decode job over many videos, on a Dask cluster.

    from distributed import Client
    import codecvisor.dask

    def mean_color(decoder):                 # runs on a worker, once per video
        return decoder[::10].float().mean(dim=(0, 2, 3)).numpy()

    client = Client("tcp://scheduler:8786")
    means = codecvisor.dask.map_videos(mean_color, paths, client=client)

Videos go to the workers in partitions of a ``dask.bag``
(``files_per_partition`` each; ``video_bag`` gives the bag itself, to go on
with Dask, e.g. ``.to_dataframe()``). Each video's task opens a decoder
with ``decoder_options``, calls ``job(decoder)`` and closes the decoder.

Warm backends. A worker process keeps one codecvisor host, with its backend
processes, for its whole life: the package makes one per process, so the
backend one task started serves every later task of that worker.
``map_videos`` also registers ``WarmBackends``, a worker plugin that starts
the backend of the decoders' device when each worker starts (or restarts),
so that no task pays for the start.

Failures. A video that cannot be read (missing, corrupt, a poison request,
a backend hung past the decoder's ``timeout``, a quarantined backend)
becomes a ``Skipped`` record in its place in the results with
``on_error="skip"`` (the default), or fails the whole computation with
``on_error="raise"``. A worker process that dies (killed, out of memory)
loses its tasks and Dask runs them again elsewhere, so results stay
complete; a job that kills every worker it runs on fails after the
scheduler's ``allowed-failures``.

Memory. A worker with a memory limit pauses itself while its process
holds more than 80% of it. The package keeps freed frame batches for the
next ones (an eighth of the memory the process may use, 2 GiB at most); in
a worker with a memory limit, codecvisor's tasks keep at most a sixteenth
of that limit, unless ``CODECVISOR_BATCH_CACHE_MIB`` sets it to a number (a batch
larger than that is not kept).

Results are what ``job`` returns (numpy arrays, or anything picklable), or
with ``output_dir`` (a folder every worker can write) each result is saved
there as ``NNNNNN.npz`` (its index in ``sources``; an array as ``result``,
a dict of arrays under its keys) and its path is returned instead; a
skipped source has no file there (one an earlier run left is removed). A
result is written to a hidden ``.partial-NNNNNN-*.npz`` and renamed: one
left by a worker killed mid-write is removed when the task runs again.
"""

import contextlib
import glob
import os
import tempfile
import warnings
from typing import Any, Callable, List, Optional, Sequence

import dask.bag
import distributed
import numpy as np

from . import _host, _reading, _tensor, _worker_memory, backends
from ._frame import Frame, FrameBatch
from ._errors import CodecvisorError
from ._reading import Skipped
from .decoders import VideoDecoder


def backend_for(device: str) -> str:
    """The name of the backend that serves `device` ("cpu", "acme:0")."""
    family = device.split(":")[0]
    for b in backends.list():
        if device in b.devices or family in b.devices:
            return b.name
    raise ValueError(f"no backend serves device {device!r}; codecvisor.backends.list() shows what there is")


class WarmBackends(distributed.WorkerPlugin):
    """A worker plugin that starts the backends of `devices` in each worker
    process when it starts. A backend that cannot start is a warning on the
    worker; the tasks that need it then fail (or are skipped) as usual."""

    def __init__(self, devices: Sequence[Optional[str]] = (None,)):
        self.devices = tuple(devices)  # None: the host's default device

    def setup(self, worker=None):
        for device in self.devices:
            try:
                backends.start(backend_for(device or _host.get().default_device()))
            except (CodecvisorError, ValueError) as e:
                warnings.warn(f"codecvisor: cannot start the backend of device {device!r}: {e}")


def warm_workers(client: distributed.Client, devices: Sequence[Optional[str]] = (None,)) -> None:
    """Registers WarmBackends for `devices` on every worker, present and
    future (idempotent: registering again replaces it)."""
    plugin = WarmBackends(devices)
    name = "codecvisor-warm-backends"
    register = getattr(client, "register_plugin", None)  # newer distributed
    if register is not None:
        register(plugin, name=name)
    else:
        client.register_worker_plugin(plugin, name=name)


def _umask() -> int:
    """This process's umask, read without changing it (os.umask would, for
    every thread, for a moment)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _as_array(name: str, value: Any) -> np.ndarray:
    if _tensor.have_torch() and isinstance(value, _tensor.torch.Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic, int, float, bool)):
        return np.asarray(value)
    raise TypeError(f"with output_dir, a job returns an array, a tensor, a Frame, a FrameBatch or a dict of "
                    f"arrays or tensors; {name} is a {type(value).__name__}")


def _arrays(result: Any) -> dict:
    if isinstance(result, (Frame, FrameBatch)):
        return {"data": result.data, "pts_seconds": result.pts_seconds, "duration_seconds": result.duration_seconds}
    if isinstance(result, dict):
        return result
    return {"result": result}


def _partial_prefix(path: str) -> str:
    """The start of the names of `path`'s partial files (`path` ends in .npz)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".partial-{name[:-len('.npz')]}-")


def _remove_partials(path: str) -> None:
    """Removes what an earlier attempt at `path` left part way (its worker
    killed while writing): a task runs once at a time, so none is being
    written now."""
    for partial in glob.glob(glob.escape(_partial_prefix(path)) + "*.npz"):
        with contextlib.suppress(OSError):  # gone already, or another user's: the write goes on
            os.unlink(partial)


def _save(result: Any, path: str) -> str:
    arrays = {str(k): _as_array(f"its {k!r}", v) for k, v in _arrays(result).items()}
    # Written whole then renamed: a task run again after its worker died
    # never leaves a torn file. mkstemp makes it 0600; the client, which
    # may be another user than the workers, reads it as any new file.
    folder, prefix = os.path.split(_partial_prefix(path))
    fd, partial = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".npz")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
    return path


def _run(item, job, on_error: str, decoder_options: dict, output_dir: Optional[str]):
    _worker_memory.fit_batch_cache_to_worker()
    index, source = item
    result = _reading.read(index, source, job, on_error, decoder_options)
    if output_dir is None:
        return result
    path = os.path.join(output_dir, f"{index:06d}.npz")
    _remove_partials(path)
    if isinstance(result, Skipped):
        # No result for it: not one an earlier run left in the folder either.
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return result
    try:
        return _save(result, path)
    except Exception as e:
        _reading.note_source(e, index, source)
        raise


def video_bag(job: Callable[[VideoDecoder], Any], sources: Sequence[Any], *, decoder_options: Optional[dict] = None,
              files_per_partition: int = 4, on_error: str = "skip",
              output_dir: Optional[str] = None) -> dask.bag.Bag:
    """The lazy dask.bag of job results (or Skipped records, or file paths),
    in the order of `sources`; arguments as ``map_videos``'s."""
    _reading.check_on_error(on_error)
    if not callable(job):
        raise TypeError(f"job should be a callable taking a VideoDecoder, not {type(job).__name__}")
    if files_per_partition < 1:
        raise ValueError(f"files_per_partition = {files_per_partition!r} should be >= 1")
    if output_dir is not None:
        output_dir = os.path.abspath(output_dir)
        os.makedirs(output_dir, exist_ok=True)
    items = list(enumerate(sources))
    bag = dask.bag.from_sequence(items, partition_size=files_per_partition) if items else dask.bag.from_sequence([])
    return bag.map(_run, job, on_error, dict(decoder_options or {}), output_dir)


def map_videos(job: Callable[[VideoDecoder], Any], sources: Sequence[Any], *,
               client: Optional[distributed.Client] = None, decoder_options: Optional[dict] = None,
               files_per_partition: int = 4, on_error: str = "skip", output_dir: Optional[str] = None,
               warm: bool = True) -> List[Any]:
    """Runs ``job(decoder)`` for every source on the cluster of `client`
    (default: the current client) and returns the results in the order of
    `sources`.

    Args:
        job: called on a worker with each source's VideoDecoder; its result
            must pickle (numpy arrays travel best). A job given here is
            pickled by Dask: a module-level function or a functools.partial
            of one.
        sources: paths (that every worker can open), or bytes.
        decoder_options: VideoDecoder keyword arguments (device, seek_mode,
            timeout, num_ffmpeg_threads, dimension_order).
        files_per_partition: videos per Dask task.
        on_error: "skip": a video that cannot be read gives a Skipped record;
            "raise": its exception fails the computation.
        output_dir: save each result there as NNNNNN.npz and return paths.
        warm: register WarmBackends for the decoders' device first.
    """
    client = client or distributed.get_client()
    bag = video_bag(job, sources, decoder_options=decoder_options, files_per_partition=files_per_partition,
                    on_error=on_error, output_dir=output_dir)
    if warm:
        warm_workers(client, [(decoder_options or {}).get("device")])
    future = client.compute(bag)
    try:
        return future.result()
    finally:
        # The cluster forgets the results now (cancel waits for the
        # scheduler), not when this process collects the future: a later
        # job over the same sources reads them again rather than getting
        # these results back, which may be stale by then.
        client.cancel(future)


__all__ = ["Skipped", "WarmBackends", "backend_for", "map_videos", "video_bag", "warm_workers"]
