"""Arrays become torch tensors without a copy when torch is installed, and
stay numpy arrays otherwise (codecvisor itself needs only numpy).

Such a tensor's memory is a numpy array's, which torch's deleter releases
by taking the GIL back. A DataLoader worker's queue feeder thread, which
pickles and drops each batch, may free one while a spawn worker's
interpreter finalizes; taking the GIL back then ends that thread through a
noexcept frame of torch's, and the worker aborts (std::terminate, a core
dump). So in a worker, the process waits at exit, before finalizing, for
its queues' feeder threads to finish what they were given."""

import atexit
import threading

try:
    import torch
except ImportError:  # numpy only
    torch = None

# How long a worker's exit waits for each feeder: one that is still
# sending when the training process stopped reading gives up then.
FEEDER_WAIT_SECONDS = 2.0


def of(array):
    return torch.from_numpy(array) if torch is not None else array


def have_torch():
    return torch is not None


def _in_dataloader_worker() -> bool:
    try:
        return torch is not None and torch.utils.data.get_worker_info() is not None
    except AttributeError:  # torch.utils.data not imported: no worker
        return False


def let_queue_feeders_finish(timeout: float = FEEDER_WAIT_SECONDS):
    """In a DataLoader worker: joins multiprocessing's queue feeder threads
    (each ends once its queue is closed and its items sent)."""
    if not _in_dataloader_worker():
        return
    for thread in threading.enumerate():
        if thread.name == "QueueFeederThread" and thread is not threading.current_thread():
            thread.join(timeout)


atexit.register(let_queue_feeders_finish)
