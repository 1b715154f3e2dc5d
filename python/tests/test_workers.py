"""Decoders in threads and in DataLoader worker processes: the GIL is
released while a backend works, and a decoder made in the parent works in
fork and spawn workers without touching the parent's backends."""

import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import hwc, make_video, run_in_threads, synthetic_clip


def test_the_gil_is_released_while_the_backend_works(tmp_path):
    # Each decode sleeps 400 ms in the backend: a thread that ticks every
    # 5 ms can only tick while the call holds the decoder (the binding's
    # test-only counter says when it does) if the call let go of the GIL.
    d = VideoDecoder(synthetic_clip(tmp_path / "slow.syn", "frames=4 width=32 height=24 fps=10 decode_ms=400"),
                     device="synthetic")
    native, inside, stop = d._native, [], threading.Event()

    def tick():
        while not stop.is_set():
            if native._test_call_in_flight():
                inside.append(time.monotonic())
            time.sleep(0.005)

    ticker = threading.Thread(target=tick)
    ticker.start()
    start = time.monotonic()
    d[1]
    end = time.monotonic()
    stop.set()
    ticker.join()
    assert end - start >= 0.4
    assert len(inside) >= 5, f"{len(inside)} ticks during a {end - start:.2f} s call"


def test_decoders_in_threads_return_their_own_frames(video, reference):
    results = {}

    def work(k):
        d = VideoDecoder(video)
        results[k] = hwc(d.get_frames_at(list(range(k, 50, 4))).data)

    errors = run_in_threads(work, 4)
    assert not errors, errors
    for k in range(4):
        np.testing.assert_array_equal(results[k], reference[k::4])


class Frames(Dataset):
    """A dataset that opens its decoder in __init__, in the parent."""

    def __init__(self, video):
        self.decoder = VideoDecoder(video)

    def __len__(self):
        return len(self.decoder)

    def __getitem__(self, i):
        return self.decoder[i], os.getpid()


def cpu_backend_pid():
    return next(b.pid for b in codecvisor.backends.list() if b.name == "cpu")


def test_a_forked_child_does_not_hold_its_parents_decoders_descriptors(video, reference):
    # A dataset that opened its decoders in __init__: each held four
    # descriptors in every fork worker for the worker's life (the video,
    # the channel's memfd, socket and pidfd), so that 250 decoders under
    # `ulimit -n 1024` left a worker none. The child lets go of them at the
    # fork, and each decoder still reopens there on first use.
    decoders = [VideoDecoder(video) for _ in range(30)]
    parent_fds = len(os.listdir("/proc/self/fd"))
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        code = 1
        try:
            fds = len(os.listdir("/proc/self/fd"))
            same = bool((hwc(decoders[3][5:6]) == reference[5:6]).all())
            os.write(write_end, f"{fds} {same}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as report:
        fds, same = report.read().split()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert same == "True"
    assert int(fds) <= parent_fds - 3 * len(decoders), (fds, parent_fds)
    # The parent's decoders are untouched.
    np.testing.assert_array_equal(hwc(decoders[3][7:8]), reference[7:8])


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_parents_decoder_works_in_dataloader_workers(video, reference, method):
    dataset = Frames(video)
    np.testing.assert_array_equal(hwc(dataset.decoder[0:1]), reference[0:1])
    parent_backend = cpu_backend_pid()
    assert parent_backend is not None
    loader = DataLoader(dataset, batch_size=5, num_workers=2, multiprocessing_context=method)
    frames, pids = [], set()
    for batch, pid in loader:
        frames.append(batch)
        pids.update(pid.tolist())
    np.testing.assert_array_equal(hwc(torch.cat(frames)), reference)
    assert len(pids) == 2 and os.getpid() not in pids
    # The parent's decoder and backend process are untouched.
    assert cpu_backend_pid() == parent_backend
    np.testing.assert_array_equal(hwc(dataset.decoder[7:8]), reference[7:8])


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_whose_video_was_replaced_raises_in_the_training_loop(video, tmp_path, method):
    # The decoder reopens in the worker on first use, under spawn as under
    # fork: the error reaches the loop with its message, not as a worker
    # that "exited unexpectedly" while it unpickled the dataset.
    clip = tmp_path / "clip.mp4"
    shutil.copy(video, clip)
    dataset = Frames(str(clip))
    make_video(tmp_path / "other.mp4", ["-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-t", "1"])
    os.replace(tmp_path / "other.mp4", clip)
    loader = DataLoader(dataset, batch_size=5, num_workers=2, multiprocessing_context=method, timeout=120)
    batches = iter(loader)
    try:
        with pytest.raises(Exception, match=r"the video changed since the decoder was made.*width: 96 -> 32") as e:
            next(batches)
    finally:
        # Now, not when the cycle through the raised error's traceback is
        # collected: until then torch's SIGCHLD handler still watched these
        # workers, and a spawned one that found its loader gone as it
        # started (exit code 1) failed whichever DataLoader ran next.
        batches._shutdown_workers()
    assert "exited unexpectedly" not in str(e.value)


def test_workers_forked_while_a_parent_thread_uses_the_same_decoder(video, reference):
    # The parent's thread holds the decoder's lock through most of each
    # request, so the forks happen with it held: each worker opens its own
    # decoder and never waits on the inherited lock (the loader's timeout
    # turns a wait into a failure).
    dataset = Frames(video)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            dataset.decoder.get_frames_in_range(0, 50)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        for _ in range(3):
            loader = DataLoader(dataset, batch_size=5, num_workers=2, multiprocessing_context="fork", timeout=60)
            np.testing.assert_array_equal(hwc(torch.cat([batch for batch, _ in loader])), reference)
    finally:
        stop.set()
        thread.join()


class Poisoned(Dataset):
    def __init__(self, clip):
        self.clip = clip
        self.decoder = None

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if self.decoder is None:
            self.decoder = VideoDecoder(self.clip, device="faulty")
        return self.decoder[i]


def test_a_poison_frame_in_a_worker_is_a_clear_exception(tmp_path):
    # Frame 5 crashes the faulty backend every time: after a replay it is
    # poison, and the training loop gets BackendError, not a dead worker.
    clip = synthetic_clip(tmp_path / "poison.syn", "frames=8 width=32 height=24 fps=10 fault=segfault fault_frame=5")
    loader = DataLoader(Poisoned(clip), batch_size=1, num_workers=1, multiprocessing_context="fork")
    seen = []
    with pytest.raises(codecvisor.BackendError) as e:
        for batch in loader:
            seen.append(batch)
    assert len(seen) == 5
    message = str(e.value)
    assert "SIGSEGV" in message and "poison" in message and "poison.syn" in message, message


ZOMBIES = r"""
import ctypes, os, sys, time
import torch.utils.data._utils
from torch.utils.data import DataLoader, Dataset
from codecvisor.decoders import VideoDecoder
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: as a container's PID 1 is
# The DataLoader SIGTERMs a worker still running this long after it was
# told to stop (5 s by default), and its backend would then come to this
# process: the workers' own exit is on trial, however slow the machine.
torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL = 120

def stat(pid):
    # (state, parent, start time) of process pid; None once it is reaped
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), int(fields[19])

def children():
    # (pid, start time) of each child of this process (a worker's: its backends)
    return [(int(p), s[2]) for p in os.listdir("/proc") if p.isdigit() and (s := stat(p)) and s[1] == os.getpid()]

def zombies():
    return sum(s[0] == "Z" for _, s in ((p, stat(p)) for p, _ in children()) if s)

def running(pid, start):
    # Whether that process (not one that took its pid since) has not exited
    s = stat(pid)
    return s is not None and s[2] == start and s[0] != "Z"

class Frames(Dataset):
    def __len__(self): return 4
    def __getitem__(self, i):
        with VideoDecoder(sys.argv[1]) as d:
            frame = d[i]
        return frame, children()

def as_is(batch):
    return batch

if __name__ == "__main__":
    backends = set()  # the workers' backends, as each worker saw them
    for epoch in range(2):
        for batch in DataLoader(Frames(), batch_size=2, num_workers=2, multiprocessing_context=sys.argv[2],
                                collate_fn=as_is):
            backends.update(b for _, seen in batch for b in seen)
    # Each has exited (a zombie, unreaped, is exited) or is gone (reaped by
    # its worker): what the kernel hands over after the workers' exit (a
    # backend a worker left to it) has arrived then.
    deadline = time.monotonic() + 20
    while any(running(*b) for b in backends) and time.monotonic() < deadline:
        time.sleep(0.01)
    print(zombies(), sum(running(*b) for b in backends), len(backends))
"""


@pytest.mark.parametrize("start_method", ["fork", "forkserver"])
def test_workers_stop_and_reap_their_backends(video, tmp_path, start_method):
    # A trainer that is a subreaper (a container's PID 1) inherits whatever
    # its workers leave. Each fork- or forkserver-started worker ended with
    # os._exit and left its backend to the kernel: one zombie per worker
    # per epoch. (A forkserver's worker imports codecvisor after its fork.)
    script = tmp_path / "zombies.py"
    script.write_text(ZOMBIES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(script), video, start_method], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    # zombies, backends still running 20 s after the epochs, backends seen
    # (each epoch's two workers started one each at least)
    found, running, seen = map(int, done.stdout.split())
    assert found == 0 and running == 0 and seen >= 4, done.stdout
