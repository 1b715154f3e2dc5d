"""Shared-memory buffers that a DataLoader worker reuses for the batches it
sends to the training process.

torch sends a worker's batch in a new shared-memory tensor each time: the
worker pays for new pages (tens of ms for a batch of clips) and the
training process maps and faults in each batch afresh. Here each worker
keeps a few memfd buffers (``WorkerPool``); ``collate_clips`` stacks a
batch's clips into a free one, and ``ClipBatch`` pickles it as the buffer's
descriptor and a lease number (multiprocessing's pickler only: ``datasets``
registers it). The training process maps each buffer once (``_Mappings``)
and gives the tensor a view of it; when that tensor dies the buffer is free
again. The protocol (the state word, who owns a buffer when, deaths and
forks) is in python/README.md, "Batches from DataLoader workers".
"""

import collections
import mmap
import os
import threading
import weakref
from multiprocessing import reduction
from typing import Optional, Sequence

import numpy as np
import torch

from . import _codecvisor, _shared_batch

HEADER = mmap.PAGESIZE  # a buffer's first page holds its state word; the batch starts after it
FREE = 0  # the state word of a buffer no batch holds; else the number of the lease that holds it
MIN_BYTES = 1 << 20  # smaller batches go torch's way: their new pages cost little
MAX_BUFFERS = 8  # per worker
MAX_BYTES = 512 << 20  # of all of a worker's buffers together
FIT = 1.25  # a buffer is used for batches down to 1/FIT of its size


def _claim(address: int, expected: int, desired: int) -> bool:
    return _codecvisor.compare_exchange_u32(address, expected, desired)


class _Buffer:
    """One memfd of HEADER + capacity bytes, mapped and populated, in the worker that made it."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.fd = os.memfd_create("codecvisor-batch", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, HEADER + capacity)
            self.map = mmap.mmap(self.fd, HEADER + capacity)
        except BaseException:
            os.close(self.fd)
            raise
        self.bytes = np.frombuffer(self.map, dtype=np.uint8)
        self.state = self.bytes.ctypes.data
        _shared_batch.populate(self.state, HEADER + capacity)

    def is_free(self) -> bool:
        return _claim(self.state, FREE, FREE)

    def close(self):
        os.close(self.fd)  # the mapping goes with the last view of it


class _Lease:
    """A batch in a buffer. Until it is sent, the worker frees the buffer
    when the batch's memory dies; once sent, the receiving process does."""

    def __init__(self, buffer: _Buffer, number: int, nbytes: int):
        self.buffer, self.number, self.nbytes = buffer, number, nbytes
        self.sent = False
        self.pid = os.getpid()

    def drop(self):
        # A forked child's copy of the batch dying frees nothing: the
        # parent may still be using it.
        if not self.sent and self.pid == os.getpid():
            _claim(self.buffer.state, self.number, FREE)


class WorkerPool:
    """A worker's buffers: at most MAX_BUFFERS, MAX_BYTES in all. Thread-safe."""

    def __init__(self):
        self.pid = os.getpid()
        # Reentrant: a garbage collection while it is held may run a
        # batch's finalizer (_forget) on the same thread.
        self._lock = threading.RLock()
        self._buffers = []
        self._last_number = 0
        self._leases = {}  # data address of each batch not yet sent -> its lease

    def output(self, shape: Sequence[int], dtype: torch.dtype) -> Optional[torch.Tensor]:
        """A tensor of `shape` and `dtype` in a free buffer, or None when the
        batch is small or every buffer is held and no room is left."""
        nbytes = int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size()
        if nbytes < MIN_BYTES or nbytes > MAX_BYTES:
            return None
        with self._lock:
            lease = self._lease(nbytes)
            if lease is None:
                return None
            array = np.ndarray(nbytes, np.uint8, buffer=lease.buffer.map, offset=HEADER)
            address = array.ctypes.data
            self._leases[address] = lease
        weakref.finalize(array, self._forget, address, lease)
        return torch.from_numpy(array).view(dtype).view(*shape)

    def _next_number(self) -> int:
        self._last_number = self._last_number % 0xFFFFFFFF + 1  # 1 .. 2**32 - 1: never FREE
        return self._last_number

    def _lease(self, nbytes: int) -> Optional[_Lease]:
        number = self._next_number()
        for buffer in sorted(self._buffers, key=lambda b: b.capacity):
            if nbytes <= buffer.capacity <= nbytes * FIT and _claim(buffer.state, FREE, number):
                return _Lease(buffer, number, nbytes)
        # A new buffer, if there is room once free ones (none fits) are closed.
        capacity = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE

        def room_beside(buffers):
            return len(buffers) < MAX_BUFFERS and sum(b.capacity for b in buffers) + capacity <= MAX_BYTES
        free = [b for b in self._buffers if b.is_free()]
        if not room_beside([b for b in self._buffers if b not in free]):
            return None
        for buffer in free:
            if room_beside(self._buffers):
                break
            self._buffers.remove(buffer)
            buffer.close()
        try:
            buffer = _Buffer(capacity)
        except OSError:  # no memfd, descriptors or memory for one: torch's way
            return None
        self._buffers.append(buffer)
        _claim(buffer.state, FREE, number)
        return _Lease(buffer, number, nbytes)

    def _forget(self, address: int, lease: _Lease):
        if lease.pid != os.getpid():
            return  # a forked child's copy: its parent's pool and lock, not ours
        with self._lock:
            if self._leases.get(address) is lease:
                del self._leases[address]
        lease.drop()

    def take_for_sending(self, tensor) -> Optional["_Sent"]:
        """What `tensor` pickles as, if it is a whole batch of this pool not
        sent yet (from then on the receiver frees its buffer); else None."""
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or not tensor.is_contiguous():
            return None
        with self._lock:
            lease = self._leases.get(tensor.data_ptr())
            if lease is None or lease.sent or tensor.numel() * tensor.element_size() != lease.nbytes:
                return None
            lease.sent = True
            del self._leases[tensor.data_ptr()]
        return _Sent(lease.buffer.fd, lease.number, tensor.dtype, tuple(tensor.shape), lease.nbytes, self.pid)


_pool: Optional[WorkerPool] = None
_pool_lock = threading.Lock()


def _own_pool() -> Optional[WorkerPool]:
    """This process's pool if it has made one (not one inherited by fork)."""
    return _pool if _pool is not None and _pool.pid == os.getpid() else None


def worker_pool() -> WorkerPool:
    """This process's pool (a forked child makes its own)."""
    global _pool
    with _pool_lock:
        if _own_pool() is None:
            _pool = WorkerPool()
        return _pool


def stack(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors)`` for a batch a worker sends: into a pool
    buffer, or into a new shared tensor when none is free."""
    out = worker_pool().output((len(tensors), *tensors[0].shape), tensors[0].dtype)
    if out is None:
        return _shared_batch.stack_shared(tensors)
    return torch.stack(tensors, 0, out=out)


def sendable(tensor) -> Optional["_Sent"]:
    """What a batch made by ``stack`` pickles as (see WorkerPool.take_for_sending)."""
    pool = _own_pool()
    return None if pool is None else pool.take_for_sending(tensor)


class _Sent:
    """A batch on its way: its buffer's descriptor (duplicated for the
    receiver by multiprocessing), its lease, dtype, shape and size, and the
    sending worker's pid."""

    def __init__(self, fd, number, dtype, shape, nbytes, sender):
        self.fd, self.number, self.dtype, self.shape, self.nbytes, self.sender = fd, number, dtype, shape, nbytes, sender

    def __reduce__(self):
        return _receive, (reduction.DupFd(self.fd), self.number, self.dtype, self.shape, self.nbytes, self.sender)


class _Received:
    """A worker's buffer mapped in the receiving process."""

    def __init__(self, fd: int):
        size = os.fstat(fd).st_size
        if size <= HEADER:
            raise ValueError(f"a batch buffer of {size} bytes has no room for a batch")
        self.map = mmap.mmap(fd, size)
        self.bytes = np.frombuffer(self.map, dtype=np.uint8)
        self.state = self.bytes.ctypes.data
        self.pid = os.getpid()

    def release(self, number: int):
        if self.pid == os.getpid():  # not a forked child's copy of the batch
            _claim(self.state, number, FREE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class _Mappings:
    """The buffers this process has received, by inode, with the pid of the
    worker that sent each. A new one lets go of those whose worker has
    exited, then of the least recently used past `limit`. Letting go drops
    this cache's reference only: a batch still alive keeps its mapping."""

    def __init__(self, limit: int = 4 * MAX_BUFFERS):
        self.limit = limit
        self._lock = threading.Lock()
        self._by_inode = collections.OrderedDict()  # (st_dev, st_ino) -> (_Received, sender pid)

    def get(self, fd: int, sender: int) -> _Received:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        with self._lock:
            entry = self._by_inode.get(key)
            if entry is None:
                for old in [k for k, (_, pid) in self._by_inode.items() if not _alive(pid)]:
                    del self._by_inode[old]
                entry = self._by_inode[key] = (_Received(fd), sender)
                while len(self._by_inode) > self.limit:
                    self._by_inode.popitem(last=False)
            self._by_inode.move_to_end(key)
            return entry[0]

    def forget_in_child(self):
        # After fork(), in the child: the lock may have been held by a
        # thread the child does not have.
        self._lock = threading.Lock()
        self._by_inode = collections.OrderedDict()


mappings = _Mappings()


def _after_fork_in_child():
    global _pool, _pool_lock, _holding, _holding_lock
    _pool_lock = threading.Lock()  # a parent's thread may have held it
    _holding, _holding_lock = set(), threading.Lock()
    if _pool is not None:  # the parent's: its descriptors are not ours to keep
        for buffer in _pool._buffers:
            buffer.close()
        _pool = None
    mappings.forget_in_child()


# The releases (weakref.finalize) of the batches this process has received;
# those that ran are pruned as new ones come.
_holding = set()
_holding_lock = threading.Lock()


def _before_fork():
    # A batch alive at a fork is seen by the child too (fork copies its
    # mapping, and a Process's arguments are inherited, not pickled): its
    # buffer must never go back to its worker, which would write the next
    # batch into what the child still reads. Its lease is kept for good;
    # the worker's pool falls back to torch's way when it has no buffer
    # left.
    with _holding_lock:
        for release in _holding:
            release.detach()  # nothing if it ran
        _holding.clear()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _receive(dup_fd, number, dtype, shape, nbytes, sender):
    try:
        # The descriptor comes from the worker itself (multiprocessing's
        # resource sharer): a worker that died after queueing the batch
        # cannot hand it over.
        fd = dup_fd.detach()
    except (ConnectionRefusedError, ConnectionResetError, FileNotFoundError, EOFError) as e:
        raise RuntimeError(f"DataLoader worker (pid {sender}) ended before its batch could be received "
                           f"(the worker was killed, or exited): {e!r}") from e
    try:
        received = mappings.get(fd, sender)
    finally:
        os.close(fd)
    if nbytes > len(received.bytes) - HEADER:
        received.release(number)
        raise ValueError(f"a batch of {nbytes} bytes does not fit its buffer of {len(received.bytes) - HEADER}")
    array = np.ndarray(nbytes, np.uint8, buffer=received.map, offset=HEADER)
    release = weakref.finalize(array, received.release, number)
    with _holding_lock:
        _holding.difference_update([r for r in _holding if not r.alive])
        _holding.add(release)
    return torch.from_numpy(array).view(dtype).view(*shape)
