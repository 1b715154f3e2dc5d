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
    from codecvisor import _host
    opening, real_open = threading.Event(), _host.Host.open_path

    def slow_open(self, *args, **kwargs):
        opening.set()
        time.sleep(0.3)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(_host.Host, "open_path", slow_open)
    d = pickle.loads(pickle.dumps(VideoDecoder(video)))
    opening.clear()  # set by the original's open
    outcome = []

    def first_use():
        try:
            outcome.append(tuple(d.get_frame_at(0).data.shape))
        except ValueError as e:
            outcome.append(str(e))

    t = threading.Thread(target=first_use)
    t.start()
    assert opening.wait(10)
    d.close()
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


def test_ctrl_c_stops_a_request_at_the_next_frame(tmp_path):
    # 40 frames of 50 ms each, whose frame 30 crashes the backend: Ctrl-C
    # 0.3 s in must end the request there, with KeyboardInterrupt, before
    # the backend reaches frame 30 (a request that went on would die there
    # twice and raise BackendError instead). The decoder goes on afterwards.
    clip = synthetic_clip(tmp_path / "slow.syn", "frames=40 width=32 height=24 fps=10 decode_ms=50 "
                                                 "fault=segfault fault_frame=30")
    d = VideoDecoder(clip, device="faulty")
    restarts = backend_restarts("faulty")
    handler = _sigint_handler_address()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            d.get_frames_in_range(0, 40)
    finally:
        timer.join()
    assert backend_restarts("faulty") == restarts
    assert _sigint_handler_address() == handler, "the C handler in front of Python's was left installed"
    fresh = VideoDecoder(clip, device="faulty")
    torch.testing.assert_close(d.get_frames_in_range(3, 6).data, fresh.get_frames_in_range(3, 6).data)
    assert backend_restarts("faulty") == restarts and d.retries == 0


def test_ctrl_c_stops_a_request_whose_backend_hangs(tmp_path):
    # Frame 20's decode never returns, while the runner still answers its
    # heartbeats: Ctrl-C used to wait for the request timeout, have the
    # supervisor kill the backend, replay the request the user had
    # interrupted, wait a second timeout (a second kill), and only then
    # raise. The wait on the backend now looks for the signal too: the
    # backend, given 1 s to stop, is killed once as hung (no thread is left
    # stuck in it), KeyboardInterrupt is raised, nothing is replayed, and
    # the decoder goes on on the new backend.
    clip = synthetic_clip(tmp_path / "hang.syn", "frames=40 width=32 height=24 fps=10 decode_ms=5 "
                                                 "fault=hang fault_frame=20")
    d = VideoDecoder(clip, device="faulty", timeout=60)
    restarts = backend_restarts("faulty")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            d.get_frames_in_range(0, 40)
    finally:
        timer.join()
    assert backend_restarts("faulty") == restarts + 1, "killed twice: the interrupted request was replayed"
    assert d.retries == 0, "the interrupted request was replayed"
    assert d.get_frames_in_range(0, 5).data.shape == (5, 3, 24, 32)


def test_ctrl_c_stops_a_request_in_a_child_forked_during_one(tmp_path):
    # A thread forks while the main thread is in a request (its Ctrl-C
    # watch installed): the child, whose main thread is the forking one,
    # starts with Python's own handler, and its requests stop at Ctrl-C
    # again (the watch the child inherited was never removed, so every
    # later one stood aside and Ctrl-C waited for the whole request).
    handler = _sigint_handler_address()
    slow = synthetic_clip(tmp_path / "slow.syn", "frames=40 width=32 height=24 fps=10 decode_ms=50")
    crashing = synthetic_clip(tmp_path / "crash.syn", "frames=40 width=32 height=24 fps=10 decode_ms=50 "
                                                      "fault=segfault fault_frame=30")
    d = VideoDecoder(slow, device="faulty")
    d[0]
    outcome = {}

    def fork_during_the_request():
        time.sleep(0.3)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if _sigint_handler_address() != handler:
                    code |= 1
                child = VideoDecoder(crashing, device="faulty")
                timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
                timer.start()
                try:
                    child.get_frames_in_range(0, 40)
                    code |= 2
                except KeyboardInterrupt:
                    pass
                timer.join()
                if backend_restarts("faulty") != 0:  # the request went on to frame 30
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
    decoder d for 80 frames of 50 ms, with Ctrl-C 0.3 s in: `call` must end
    with KeyboardInterrupt while the other request still runs. Returns d
    once that request has ended."""
    clip = synthetic_clip(tmp_path / "slow.syn", "frames=80 width=32 height=24 fps=10 decode_ms=50")
    d = VideoDecoder(clip, device="faulty")
    started, other_done = threading.Event(), threading.Event()

    def other():
        started.set()
        d.get_frames_in_range(0, 80)
        other_done.set()

    worker = threading.Thread(target=other)
    worker.start()
    started.wait()
    time.sleep(0.1)  # its request under way
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call(d)
        assert not other_done.is_set(), "the interrupt waited for the other thread's request"
    finally:
        timer.join()
        worker.join()
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
    # only once the other thread's request had ended (2.7-4.7 s later).
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
