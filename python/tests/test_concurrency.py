"""One decoder and many threads, close() and the context manager, and
Ctrl-C: a request stops at the next frame, in the parent and in a child
forked during one, and a user's own SIGINT handler lets it finish."""

import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import FPS, HEIGHT, WIDTH, backend_restarts, make_video, run_in_threads, synthetic_clip


def test_close_and_context_manager(video):
    with VideoDecoder(video) as d:
        assert d.backend == "cpu"
        d[0]
    with pytest.raises(ValueError):
        d[0]
    d.close()  # twice is harmless


@pytest.fixture(scope="module")
def long_video(tmp_path_factory):
    """12 s of 96x64 at 25 fps (300 frames): requests long enough to overlap."""
    return make_video(tmp_path_factory.mktemp("long") / "long.mp4",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", "12",
                       "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p"])


def test_threads_sharing_one_decoder_take_turns(long_video):
    # A decoder serves one request at a time; Python threads that share one
    # wait for each other (each request is whole and right), never crash.
    reference = VideoDecoder(long_video, dimension_order="NHWC").get_frames_in_range(0, 300).data.numpy()
    d = VideoDecoder(long_video, dimension_order="NHWC")
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        for r in range(6):
            first = (k * 37 + r * 53) % 200
            indices = list(range(first, first + 100, 3))
            np.testing.assert_array_equal(d.get_frames_at(indices).data.numpy(), reference[indices])
            assert d.metadata.num_frames == 300 and d.retries == 0

    errors = run_in_threads(work, 4)
    assert not errors, errors


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.02])
def test_close_while_another_thread_decodes(long_video, delay):
    # close() waits for the request in flight, which ends whole; afterwards
    # the decoder is closed for every thread.
    d = VideoDecoder(long_video)
    outcome, started = [], threading.Event()

    def work():
        started.set()
        try:
            outcome.append(len(d.get_frames_in_range(0, 300)))
        except ValueError as e:  # closed before its turn came
            outcome.append(str(e))

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    time.sleep(delay)
    d.close()
    t.join()
    assert outcome[0] == 300 or "closed" in outcome[0], outcome
    with pytest.raises(ValueError, match="closed"):
        d[0]


def test_close_during_a_first_use_that_opens_the_session(video, monkeypatch):
    # An unpickled (or forked) decoder opens its session on first use:
    # close() meanwhile makes that open end what it opened, and the first
    # use fails as closed. close() used to leave it to the open, which then
    # installed a live session in the closed decoder, which decoded on.
    # The copy's open waits (at most 20 s) for the close() to have returned.
    from codecvisor import _host
    opening, closed, real_open = threading.Event(), threading.Event(), _host.Host.open_path

    def slow_open(self, *args, **kwargs):
        opening.set()
        closed.wait(20)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(_host.Host, "open_path", slow_open)
    closed.set()  # the original's open goes straight on
    d = pickle.loads(pickle.dumps(VideoDecoder(video)))
    opening.clear()  # set by the original's open
    closed.clear()
    outcome = []

    def first_use():
        try:
            outcome.append(tuple(d.get_frame_at(0).data.shape))
        except ValueError as e:
            outcome.append(str(e))

    t = threading.Thread(target=first_use)
    t.start()
    assert opening.wait(20)
    d.close()
    closed.set()
    t.join()
    assert outcome == ["the decoder is closed"], outcome
    with pytest.raises(ValueError, match="closed"):
        d[0]
    assert d._native is None


def _sigint_handler_address():
    # The process's SIGINT handler as the kernel has it (struct sigaction's
    # first field), which Python's signal.getsignal does not show.
    import ctypes
    action = ctypes.create_string_buffer(256)
    assert ctypes.CDLL(None).sigaction(signal.SIGINT, None, action) == 0
    return int.from_bytes(action.raw[:8], "little")


def _a_thread_is_in_pause(pid):
    """Whether a thread of process `pid` is blocked in pause(2), from
    /proc/PID/task/TID/syscall (its first field is the syscall number)."""
    pause = 34  # x86-64's __NR_pause: the only architecture the tests run on
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # the process has ended
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                if f.read().split(" ", 1)[0] == str(pause):
                    return True
        except OSError:  # the thread has ended
            pass
    return False


def _sigint_once(condition, regardless=False):
    """Starts and returns a thread that sends this process SIGINT once
    condition() holds (asked every 2 ms for at most 20 s); its `.ready`
    says whether the condition held. Where it never did,
    no SIGINT is sent, unless `regardless` (a call that ends only by one)."""
    def send():
        deadline = time.monotonic() + 20
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.002)
        sender.ready = condition()
        if sender.ready or regardless:
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=send)
    sender.ready = False
    sender.start()
    return sender


def test_ctrl_c_stops_a_request_at_the_next_frame(tmp_path):
    # 200 frames of 50 ms each, whose frame 190 crashes the backend: Ctrl-C
    # once the request is under way must end it there, with
    # KeyboardInterrupt, before the backend reaches frame 190 (a request
    # that went on would die there twice and raise BackendError instead).
    # The decoder goes on afterwards.
    clip = synthetic_clip(tmp_path / "slow.syn", "frames=200 width=32 height=24 fps=10 decode_ms=50 "
                                                 "fault=segfault fault_frame=190")
    d = VideoDecoder(clip, device="faulty")
    restarts = backend_restarts("faulty")
    handler = _sigint_handler_address()
    sender = _sigint_once(d._native._test_call_in_flight, regardless=True)
    try:
        with pytest.raises(KeyboardInterrupt):
            d.get_frames_in_range(0, 200)
    finally:
        sender.join()
    assert sender.ready, "the request was never under way"
    assert backend_restarts("faulty") == restarts
    assert _sigint_handler_address() == handler, "the C handler in front of Python's was left installed"
    fresh = VideoDecoder(clip, device="faulty")
    torch.testing.assert_close(d.get_frames_in_range(3, 6).data, fresh.get_frames_in_range(3, 6).data)
    assert backend_restarts("faulty") == restarts and d.retries == 0


def test_ctrl_c_stops_a_request_whose_backend_hangs(tmp_path):
    # Frame 0's decode never returns, while the runner still answers its
    # heartbeats: Ctrl-C used to wait for the request timeout, have the
    # supervisor kill the backend, replay the request the user had
    # interrupted, wait a second timeout (a second kill), and only then
    # raise. The wait on the backend now looks for the signal too: the
    # backend, given 1 s to stop, is killed once as hung (no thread is left
    # stuck in it), KeyboardInterrupt is raised, nothing is replayed, and
    # the decoder goes on on the new backend. (The runner reads no Cancel
    # before a request's first frame: once the request is sent, the backend
    # hangs whenever Ctrl-C comes. It is sent once a thread of the backend
    # is in the fault's pause(): a Ctrl-C before the request is sent would
    # end it unsent, with no backend to kill.)
    clip = synthetic_clip(tmp_path / "hang.syn", "frames=40 width=32 height=24 fps=10 decode_ms=5 "
                                                 "fault=hang fault_frame=0")
    d = VideoDecoder(clip, device="faulty", timeout=60)
    restarts = backend_restarts("faulty")
    pid = next(b.pid for b in codecvisor.backends.list() if b.name == "faulty")
    sender = _sigint_once(lambda: _a_thread_is_in_pause(pid), regardless=True)
    try:
        with pytest.raises(KeyboardInterrupt):
            d.get_frames_in_range(0, 40)
    finally:
        sender.join()
    assert sender.ready, "the request was never under way"
    assert backend_restarts("faulty") == restarts + 1, "killed twice: the interrupted request was replayed"
    assert d.retries == 0, "the interrupted request was replayed"
    assert d.get_frames_in_range(1, 6).data.shape == (5, 3, 24, 32)  # (frame 0 hangs every time)


def test_ctrl_c_stops_a_request_in_a_child_forked_during_one(tmp_path):
    # A thread forks while the main thread is in a request (its Ctrl-C
    # watch installed): the child, whose main thread is the forking one,
    # starts with Python's own handler, and its requests stop at Ctrl-C
    # again (the watch the child inherited was never removed, so every
    # later one stood aside and Ctrl-C waited for the whole request).
    handler = _sigint_handler_address()
    slow = synthetic_clip(tmp_path / "slow.syn", "frames=40 width=32 height=24 fps=10 decode_ms=50")
    crashing = synthetic_clip(tmp_path / "crash.syn", "frames=200 width=32 height=24 fps=10 decode_ms=50 "
                                                      "fault=segfault fault_frame=190")
    d = VideoDecoder(slow, device="faulty")
    d[0]
    native, outcome = d._native, {}

    def fork_during_the_request():
        deadline = time.monotonic() + 20
        while not native._test_call_in_flight() and time.monotonic() < deadline:
            time.sleep(0.002)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if _sigint_handler_address() != handler:
                    code |= 1
                child = VideoDecoder(crashing, device="faulty")
                sender = _sigint_once(child._native._test_call_in_flight, regardless=True)
                try:
                    child.get_frames_in_range(0, 200)
                    code |= 2
                except KeyboardInterrupt:
                    pass
                sender.join()
                if not sender.ready or backend_restarts("faulty") != 0:  # the request went on to frame 190
                    code |= 2
            except BaseException:  # noqa: BLE001 (the exit code says it)
                code |= 4
            os._exit(code)
        outcome["status"] = os.waitpid(pid, 0)[1]

    forker = threading.Thread(target=fork_during_the_request)
    forker.start()
    assert len(d.get_frames_in_range(0, 40)) == 40
    forker.join()
    assert os.waitstatus_to_exitcode(outcome["status"]) == 0, \
        "1: the child's SIGINT handler was the parent's watch, 2: Ctrl-C did not stop its request, 4: it raised"


def _interrupted_while_another_thread_decodes(tmp_path, call):
    """Runs call(d) on the main thread while another thread's request holds
    decoder d for 80 frames of 50 ms, with Ctrl-C once call(d) waits for
    it: `call` must end with KeyboardInterrupt while the other request
    still runs. Returns d once that request has ended."""
    clip = synthetic_clip(tmp_path / "slow.syn", "frames=80 width=32 height=24 fps=10 decode_ms=50")
    d = VideoDecoder(clip, device="faulty")
    native, other_done = d._native, threading.Event()  # (close() lets go of d._native before it waits)

    def other():
        d.get_frames_in_range(0, 80)
        other_done.set()

    worker = threading.Thread(target=other)
    worker.start()
    deadline = time.monotonic() + 20
    while not native._test_call_in_flight() and time.monotonic() < deadline:
        time.sleep(0.002)
    sender = None
    try:
        assert native._test_call_in_flight(), "the other thread's request never held the decoder"
        sender = _sigint_once(lambda: native._test_calls_waiting() > 0)
        with pytest.raises(KeyboardInterrupt):
            call(d)
        assert native._test_call_in_flight() and not other_done.is_set(), \
            "the interrupt waited for the other thread's request"
    finally:
        if sender is not None:
            sender.join()
        worker.join()
    assert sender.ready, "call(d) never waited for the other thread's request"
    assert other_done.is_set()
    return d


def test_ctrl_c_ends_a_wait_for_another_threads_request(tmp_path):
    # A request on the main thread waits for the other's (were its request
    # first, it would stop at its next frame); the decoder goes on.
    d = _interrupted_while_another_thread_decodes(tmp_path, lambda d: d.get_frames_in_range(0, 80))
    assert len(d.get_frames_in_range(0, 2)) == 2


def test_ctrl_c_ends_a_close_waiting_for_another_threads_request(tmp_path):
    # close() waits for the request in flight; Ctrl-C meanwhile raised only
    # once that request had ended. It ends the wait; the decoder is closed
    # (its session ends with that request).
    d = _interrupted_while_another_thread_decodes(tmp_path, lambda d: d.close())
    with pytest.raises(ValueError, match="closed"):
        d[0]


@pytest.mark.parametrize("read", [lambda d: d.backend, lambda d: d.retries])
def test_ctrl_c_ends_a_property_read_waiting_for_another_threads_request(tmp_path, read):
    # backend and retries ask the decoder, under its lock: Ctrl-C raised
    # only once the other thread's request had ended (up to 4 s later).
    d = _interrupted_while_another_thread_decodes(tmp_path, read)
    assert d.backend == "faulty" and d.retries == 0


def test_a_sigint_handler_of_the_users_own_lets_the_request_finish(tmp_path):
    # Only Python's default handler (KeyboardInterrupt) cancels a request: a
    # handler of the user's own may not raise, and runs once it has ended.
    clip = synthetic_clip(tmp_path / "slow.syn", "frames=12 width=32 height=24 fps=10 decode_ms=50")
    d = VideoDecoder(clip, device="synthetic")
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        batch = d.get_frames_in_range(0, 12)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]
    assert batch.data.shape[0] == 12
