"""The interpreter exits while other threads are inside decoder calls: a
daemon thread (or one that Ctrl-C left running) is ended by Python where it
takes the GIL back, and must stop there without aborting the process
("terminate called ... FATAL: exception not rethrown") or freeing Python
objects without the GIL ("Fatal Python error")."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import make_video

RUNS = 5

# argv: video, scenario. In each, threads decode in a loop (requests a few
# hundred frames long, decoders opened and closed) as the process ends.
# Frames come as numpy arrays: torch (1.13) releases and takes back the GIL
# in its own tensor deallocation, which aborts the same way there.
CHILD = r"""
import sys; sys.modules["torch"] = None
import os, signal, threading, time
from codecvisor.decoders import VideoDecoder

path, scenario = sys.argv[1], sys.argv[2]
decoders = []  # each decode() thread's decoder, once it has it

def decode(d=None):
    d = d or VideoDecoder(path, num_ffmpeg_threads=1)
    decoders.append(d)
    while True:
        d.get_frames_in_range(0, 300)

def reopen(k):
    data = open(path, "rb").read()
    while True:
        with VideoDecoder(data if k % 2 else path, num_ffmpeg_threads=1) as d:
            d.get_frames_in_range(0, 300, 10)

def in_requests(count):
    # `count` decode() threads have their decoders, each in a request (the
    # decoder's lock held: binding's test-only counter, not taking the lock)
    return len(decoders) == count and all(d._native._test_call_in_flight() for d in decoders)

def wait_until(condition, what):
    # Polls condition() for at most 60 s (the subprocess has 120); where it
    # never held, says so on stdout, which the test reads: the process did
    # not end as it means.
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            print(f"never {what}", flush=True)
            return
        time.sleep(0.002)

def interrupt_once(condition, what):
    # Ctrl-C (SIGINT to this process, from a daemon thread) once condition()
    # holds, or after 20 s whatever holds, saying so.
    def send():
        wait_until(condition, what)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=send, daemon=True).start()

if scenario == "exit":
    threading.Thread(target=decode, daemon=True).start()
    wait_until(lambda: in_requests(1), "a request under way")
elif scenario == "many":  # opening and closing; one decoder shared
    # The threads make the process's first requests at once: numpy's C API,
    # which each batch needs, is looked up as the extension loads (looked
    # up on first use, under a static guard, threads racing to it deadlocked).
    shared = VideoDecoder(path, num_ffmpeg_threads=1)
    for k in range(2):
        threading.Thread(target=decode, daemon=True).start()
        threading.Thread(target=decode, args=(shared,), daemon=True).start()
        threading.Thread(target=reopen, args=(k,), daemon=True).start()
    # Each decoder in a request, and a thread waiting for the shared one's.
    wait_until(lambda: in_requests(4) and shared._native._test_calls_waiting() > 0,
               "every decoder in a request with one waiting")
elif scenario == "ctrl_c":  # the main thread interrupted in its own request
    threading.Thread(target=decode, daemon=True).start()
    wait_until(lambda: in_requests(1), "the thread's request under way")
    mine = VideoDecoder(path, num_ffmpeg_threads=1)
    interrupt_once(mine._native._test_call_in_flight, "the main thread's request under way")
    decode(mine)
elif scenario == "ctrl_c_at_exit":  # Ctrl-C cuts short the wait for a non-daemon thread
    threading.Thread(target=decode).start()
    wait_until(lambda: in_requests(1), "the thread's request under way")
    main = threading.main_thread()

    def exit_waits_for_the_thread():
        # The main thread has stopped (past its code) and waits in
        # threading._shutdown, as the interpreter exits, for the other
        # thread, which is in a request.
        frame = sys._current_frames().get(main.ident)
        return (not main.is_alive() and frame is not None and frame.f_code is threading._shutdown.__code__
                and in_requests(1))

    interrupt_once(exit_waits_for_the_thread, "the exit waiting for a thread in a request")
    print("main done", flush=True)
    sys.exit(0)
print("main done", flush=True)
"""


@pytest.fixture(scope="module")
def long_video(tmp_path_factory):
    """12 s of 160x120 H.264 at 25 fps: 300 frames."""
    return make_video(tmp_path_factory.mktemp("videos") / "long.mp4",
                      ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "12", "-c:v", "libx264",
                       "-g", "50", "-pix_fmt", "yuv420p"])


# The exit status each scenario ends with: an uncaught KeyboardInterrupt
# ends the process with SIGINT; one that only cut the wait for threads short
# does not change it. Each ends once its threads are in requests (the
# child's stdout says where they never were within 20 s).
@pytest.mark.parametrize("scenario, status, stdout", [
    ("exit", 0, "main done\n"),
    ("many", 0, "main done\n"),
    ("ctrl_c", -signal.SIGINT, ""),
    ("ctrl_c_at_exit", 0, "main done\n"),
])
def test_process_exits_cleanly_while_a_thread_decodes(long_video, scenario, status, stdout):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for run in range(RUNS):
        done = subprocess.run([sys.executable, "-c", CHILD, long_video, scenario], env=env, capture_output=True,
                              text=True, timeout=120)
        for abort in ("terminate", "FATAL", "Fatal Python error"):
            assert abort not in done.stderr, f"run {run}: {done.stderr}"
        assert done.returncode == status, f"run {run}: exit status {done.returncode}\n{done.stderr}"
        assert done.stdout == stdout, f"run {run}: {done.stdout}\n{done.stderr}"


def test_a_dataloader_worker_waits_at_exit_for_its_queue_feeders(monkeypatch):
    # A spawn worker's queue feeder that drops a batch (a from_numpy tensor)
    # while the interpreter finalizes aborts the worker (torch's deleter
    # takes the GIL back through a noexcept frame): 2 of 10 spawn workers
    # abandoned mid-epoch dumped core. At exit, a worker joins its feeders
    # first; any other process leaves them be.
    import multiprocessing
    import threading
    import time

    import torch.utils.data

    from codecvisor import _tensor

    def feeders():
        return [t for t in threading.enumerate() if t.name == "QueueFeederThread" and t.is_alive()]

    queue = multiprocessing.get_context("spawn").Queue()
    for _ in range(8):  # past what the pipe holds: the feeder blocks until they are read
        queue.put(bytes(1 << 16))
    # The first put() started the feeder (Thread.start() returns once it
    # runs), which runs until the queue is closed: no wait needed.
    assert feeders(), "the queue has a feeder thread"
    started = time.monotonic()
    _tensor.let_queue_feeders_finish(timeout=30.0)  # not a worker: returns at once
    assert time.monotonic() - started < 20  # (a wait for the feeder: 30 s)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())
    started = time.monotonic()
    # A feeder that cannot finish is waited for a while: Thread.join(0.5)
    # returns no sooner than 0.5 s on the monotonic clock.
    _tensor.let_queue_feeders_finish(timeout=0.5)
    assert 0.4 < time.monotonic() - started < 10 and feeders()
    for _ in range(8):
        queue.get(timeout=60)
    queue.close()
    _tensor.let_queue_feeders_finish(timeout=60.0)
    assert not feeders()
