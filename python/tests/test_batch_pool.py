"""codecvisor._batch_pool: the buffers a DataLoader worker reuses for its
batches, and collate_clips/ClipBatch sending them. In-process checks of the
pool's rules (pickling through multiprocessing's own pickler, as a worker's
queue does), then DataLoader epochs with fork and spawn workers."""

import copy
import ctypes
import functools
import gc
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
from torch.utils.data import DataLoader

from codecvisor import _batch_pool, _codecvisor
from codecvisor.datasets import ClipBatch, ClipDataset, collate_clips
from codecvisor.samplers import clips_at_regular_indices

from conftest import synthetic_clip

SHAPE = (2, 3, 3, 240, 320)  # one sample's clips: 1.4 MB, over _batch_pool.MIN_BYTES
SAMPLER = functools.partial(clips_at_regular_indices, num_clips=2, num_frames_per_clip=3)


def header_state(address: int) -> int:
    """The state word at a buffer whose batch starts at `address`."""
    return ctypes.c_uint32.from_address(address - _batch_pool.HEADER).value


def send(batch: ClipBatch) -> bytes:
    return bytes(ForkingPickler.dumps(batch))


def samples(k, n=2):
    return [torch.full(SHAPE, 10 * k + i, dtype=torch.uint8) for i in range(n)]


@pytest.fixture
def pool(monkeypatch):
    fresh = _batch_pool.WorkerPool()
    monkeypatch.setattr(_batch_pool, "_pool", fresh)
    yield fresh
    del fresh
    gc.collect()


def test_a_sent_batch_arrives_as_a_view_of_the_same_buffer_and_frees_it_when_it_dies(pool):
    stacked = _batch_pool.stack(samples(1))
    assert torch.equal(stacked, torch.stack(samples(1)))
    address = stacked.data_ptr()
    number = header_state(address)
    assert number != _batch_pool.FREE
    received = pickle.loads(send(ClipBatch(stacked, torch.tensor([1, 2]), [])))
    assert torch.equal(received.clips, torch.stack(samples(1))) and received.labels.tolist() == [1, 2]
    assert received.clips.data_ptr() != address  # mapped again, here in the same process
    del stacked
    gc.collect()
    assert header_state(address) == number  # sent: the sender's tensor dying frees nothing
    # The receiver writes through to the sender's buffer: one memory.
    received.clips[0, 0, 0, 0, 0, 0] = 99
    assert pool._buffers[0].bytes[_batch_pool.HEADER] == 99
    again = pool.output((2, *SHAPE), torch.uint8)
    assert again.data_ptr() != address  # held by the received batch: another buffer
    del again
    del received
    gc.collect()
    assert header_state(address) == _batch_pool.FREE
    reused = _batch_pool.stack(samples(2))
    assert reused.data_ptr() == address and torch.equal(reused, torch.stack(samples(2)))


def test_an_unsent_batch_frees_its_buffer_when_it_dies(pool):
    stacked = _batch_pool.stack(samples(1))
    address = stacked.data_ptr()
    del stacked
    gc.collect()
    assert header_state(address) == _batch_pool.FREE
    assert _batch_pool.stack(samples(3)).data_ptr() == address


def test_a_batch_is_sent_as_its_buffer_once(pool):
    stacked = _batch_pool.stack(samples(1))
    first = send(ClipBatch(stacked, None, []))
    second = send(ClipBatch(stacked, None, []))  # already sent: torch's way
    assert b"_receive" in first and b"_receive" not in second
    assert torch.equal(pickle.loads(first).clips, stacked)
    assert torch.equal(pickle.loads(second).clips, stacked)


def test_a_forked_childs_copy_of_a_batch_frees_nothing(pool):
    kept = _batch_pool.stack(samples(1))
    received = pickle.loads(send(ClipBatch(_batch_pool.stack(samples(2)), None, [])))
    held = {t.data_ptr(): header_state(t.data_ptr()) for t in (kept, received.clips)}
    pid = os.fork()
    if pid == 0:  # the child drops its copies; its own pool starts empty
        del kept, received
        gc.collect()
        ok = _batch_pool.worker_pool() is not pool
        os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert {address: header_state(address) for address in held} == held
    assert torch.equal(kept, torch.stack(samples(1))) and _batch_pool.sendable(kept) is not None


def test_a_received_batch_alive_at_a_fork_never_goes_back_to_its_worker(pool):
    # A batch handed to a fork-started process (its arguments inherited, not
    # pickled) is read by the child after the training loop has dropped it:
    # its buffer must not be written again. Before, the parent's tensor
    # dying freed it, and the worker stacked the next batch into what the
    # child still read (4-5 MB of 22 changed in the QA repro).
    received = pickle.loads(send(ClipBatch(_batch_pool.stack(samples(1)), None, [])))
    address = pool._buffers[0].state + _batch_pool.HEADER
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reads its copy once the parent has moved on
        os.close(write)
        os.read(read, 1)
        os._exit(0 if torch.equal(received.clips, torch.stack(samples(1))) else 1)
    os.close(read)
    number = header_state(address)
    del received
    gc.collect()
    assert header_state(address) == number  # kept for good: the child may still read it
    again = _batch_pool.stack(samples(2))  # the worker's next batch: another buffer, or torch's way
    assert again.data_ptr() != address
    os.write(write, b"x")
    os.close(write)
    assert os.waitpid(pid, 0)[1] == 0
    # A batch received after the fork is freed when it dies, as before.
    later = pickle.loads(send(ClipBatch(again, None, [])))
    later_address = later.clips.data_ptr()
    del again, later
    gc.collect()
    assert header_state(later_address) == _batch_pool.FREE


def test_small_batches_views_and_other_tensors_go_torchs_way(pool):
    small = [torch.ones(100, dtype=torch.uint8)] * 2
    assert pool.output((2, 100), torch.uint8) is None
    assert _batch_pool.stack(small).is_shared()
    stacked = _batch_pool.stack(samples(1))
    assert pool.take_for_sending(stacked[1:]) is None  # not the whole batch
    assert pool.take_for_sending(stacked.transpose(0, 1)) is None  # not contiguous
    assert pool.take_for_sending(torch.stack(samples(1))) is None  # not a pool batch
    assert pool.take_for_sending(stacked) is not None


def test_held_batches_past_the_limit_take_torchs_way_and_are_never_overwritten(pool):
    held = [_batch_pool.stack(samples(k)) for k in range(_batch_pool.MAX_BUFFERS + 3)]
    addresses = {t.data_ptr() for t in held}
    assert len(addresses) == len(held)
    shared = [t for t in held if t.is_shared()]
    assert len(shared) == 3  # past the limit: new shared tensors
    for k, t in enumerate(held):
        assert torch.equal(t, torch.stack(samples(k)))


def test_the_state_word_is_swapped_only_from_the_expected_value():
    word = ctypes.c_uint32(7)
    address = ctypes.addressof(word)
    assert not _codecvisor.compare_exchange_u32(address, 6, 0) and word.value == 7
    assert _codecvisor.compare_exchange_u32(address, 7, 0) and word.value == 0
    with pytest.raises(ValueError, match="not 4-byte aligned"):
        _codecvisor.compare_exchange_u32(address + 1, 0, 1)
    with pytest.raises(ValueError, match="null"):
        _codecvisor.compare_exchange_u32(0, 0, 1)


def test_a_buffer_that_cannot_be_made_leaves_the_batch_to_torch(pool, monkeypatch):
    def no_memfd(*args):
        raise OSError(24, "Too many open files")
    monkeypatch.setattr(os, "memfd_create", no_memfd)
    stacked = _batch_pool.stack(samples(1))
    assert stacked.is_shared() and torch.equal(stacked, torch.stack(samples(1)))
    assert pool._buffers == []


def test_a_buffer_is_reused_only_for_batches_it_fits(pool):
    big = _batch_pool.stack(samples(1, n=4))
    address = big.data_ptr()
    del big
    gc.collect()
    small = _batch_pool.stack(samples(1, n=2))  # half the size: a buffer of its own
    assert small.data_ptr() != address
    near = pool.output((4, *SHAPE[:-1], 300), torch.uint8)  # 300/320 of it: fits
    assert near.data_ptr() == address


def test_a_batch_of_another_dtype_keeps_its_values(pool):
    floats = [torch.linspace(0, 1, 400_000).reshape(4, 100_000) + k for k in range(2)]
    stacked = _batch_pool.stack(floats)
    assert stacked.dtype == torch.float32 and torch.equal(stacked, torch.stack(floats))
    received = pickle.loads(send(ClipBatch(stacked, None, [])))
    assert received.clips.dtype == torch.float32 and torch.equal(received.clips, torch.stack(floats))


def test_the_receiver_refuses_a_batch_longer_than_its_buffer(pool):
    stacked = _batch_pool.stack(samples(1))
    sent = _batch_pool.sendable(stacked)
    sent.nbytes *= 4
    with pytest.raises(ValueError, match="does not fit its buffer"):
        pickle.loads(ForkingPickler.dumps(sent))
    assert header_state(stacked.data_ptr()) == _batch_pool.FREE  # refused, and freed


def _send_and_exit(connection):
    """A worker that queues a pool batch and exits before it is received."""
    pool = _batch_pool.WorkerPool()
    _batch_pool._pool = pool
    connection.send_bytes(send(ClipBatch(_batch_pool.stack(samples(3)), None, [])))
    connection.close()
    os._exit(0)


def test_a_batch_from_a_worker_that_died_is_an_error_naming_the_worker():
    import multiprocessing
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    worker = context.Process(target=_send_and_exit, args=(sending,))
    worker.start()
    sending.close()
    sent = receiving.recv_bytes()
    worker.join(30)
    assert worker.exitcode == 0
    with pytest.raises(RuntimeError, match=f"DataLoader worker \\(pid {worker.pid}\\) ended before its batch"):
        pickle.loads(sent)


def test_only_multiprocessing_sends_a_batch_as_its_buffer(pool):
    stacked = _batch_pool.stack(samples(1))
    batch = ClipBatch(stacked, None, [])
    plain = pickle.dumps(batch)
    assert b"_receive" not in plain and torch.equal(pickle.loads(plain).clips, stacked)
    assert copy.copy(batch).clips is stacked and torch.equal(copy.deepcopy(batch).clips, stacked)
    assert pool.take_for_sending(stacked) is not None  # still unsent after all that


# --- DataLoader epochs ------------------------------------------------------------

def dataset(folder, n):
    """n (path, label) samples of (2, 3, 3, 240, 320) clips, over a MiB a batch of 2."""
    paths = [synthetic_clip(folder / f"big{i:02d}.syn", f"frames={8 + i} width=320 height=240 fps=10")
             for i in range(n)]
    return ClipDataset(list(zip(paths, range(n))), SAMPLER, decoder_options=dict(device="synthetic"))


def expected(data, n):
    return [data[i][0] for i in range(n)]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_an_epochs_batches_come_in_a_few_reused_buffers(tmp_path, context):
    n = 24
    data = dataset(tmp_path, n)
    want = expected(data, n)
    loader = DataLoader(data, batch_size=2, num_workers=1, collate_fn=collate_clips, multiprocessing_context=context)
    addresses, got = set(), 0
    for batch in loader:
        assert not batch.clips.is_shared()  # a view of a pool buffer, not a new shared tensor
        addresses.add(batch.clips.data_ptr())
        for clip, label in zip(batch.clips, batch.labels.tolist()):
            assert torch.equal(clip, want[label])
            got += 1
    del batch, clip  # the last batch, and a view of it
    gc.collect()
    assert got == n
    # In flight at once: the 2 tasks the DataLoader keeps out and the 2
    # batches the loop holds while it fetches the next.
    assert len(addresses) <= 4
    for address in addresses:
        assert header_state(address) == _batch_pool.FREE


def test_persistent_workers_reuse_their_buffers_across_epochs_and_a_break(tmp_path):
    n = 16
    data = dataset(tmp_path, n)
    want = expected(data, n)
    loader = DataLoader(data, batch_size=2, num_workers=1, collate_fn=collate_clips, persistent_workers=True)
    addresses = set()
    for epoch in range(3):
        for k, batch in enumerate(loader):
            addresses.add(batch.clips.data_ptr())
            for clip, label in zip(batch.clips, batch.labels.tolist()):
                assert torch.equal(clip, want[label])
            if epoch == 1 and k == 2:
                break  # the batches already in flight are drained when the next epoch starts
    del batch, clip
    gc.collect()
    assert len(addresses) <= 4
    assert all(header_state(address) == _batch_pool.FREE for address in addresses)
    del loader


def test_an_exited_workers_buffers_are_let_go_when_the_next_arrives(tmp_path):
    data = dataset(tmp_path, 4)
    before = set(_batch_pool.mappings._by_inode)
    assert len(list(DataLoader(data, batch_size=2, num_workers=1, collate_fn=collate_clips))) == 2
    first = set(_batch_pool.mappings._by_inode) - before
    assert first  # the loader's worker has exited (the loader joins it); its buffers are still mapped
    for batch in DataLoader(data, batch_size=2, num_workers=1, collate_fn=collate_clips):
        assert not set(_batch_pool.mappings._by_inode) & first


def test_an_epoch_whose_batches_are_all_kept_is_delivered_intact(tmp_path):
    n = 2 * 2 * (_batch_pool.MAX_BUFFERS + 2)  # each of 2 workers makes MAX_BUFFERS + 2 batches of 2
    data = dataset(tmp_path, n)
    batches = list(DataLoader(data, batch_size=2, num_workers=2, collate_fn=collate_clips))
    assert sum(len(b.labels) for b in batches) == n
    # Each worker's buffers all held: its last 2 batches go torch's way.
    assert sum(b.clips.is_shared() for b in batches) == 2 * 2
    want = expected(data, n)
    for batch in batches:
        for clip, label in zip(batch.clips, batch.labels.tolist()):
            assert torch.equal(clip, want[label])
