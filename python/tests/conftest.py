"""Shared fixtures: videos made with the ffmpeg CLI, and its rgb24 decode of
them as the reference every frame is compared with, byte for byte."""

import atexit
import os
import shutil
import subprocess
import tempfile
import threading

import numpy as np
import pytest

def runfile(path):
    return os.path.join(os.environ["TEST_SRCDIR"], "codecvisor", path)


# The synthetic and faulty test backends, for every test in this process
# (read when the process's Host is made, on first use).
os.environ.setdefault("CODECVISOR_BACKEND_PATH", runfile("backends/testing"))
# The suites crash backends on purpose: their record goes to a folder of
# the run's own, never to the user's history (`codecvisor backends`), also
# when pytest runs outside Bazel, whose HOME is the test's. The folder is
# the test's own under Bazel (TEST_TMPDIR) and is removed at exit.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="codecvisor-test-state-", dir=os.environ.get("TEST_TMPDIR"))
atexit.register(shutil.rmtree, os.environ["XDG_STATE_HOME"], ignore_errors=True)

FFMPEG = ["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-y"]
WIDTH, HEIGHT, FPS, SECONDS = 96, 64, 25, 2


def hwc(tensor):
    """A CHW frame or NCHW batch tensor as HWC / NHWC numpy."""
    return tensor.permute(1, 2, 0).numpy() if tensor.dim() == 3 else tensor.permute(0, 2, 3, 1).numpy()


def backend_restarts(name):
    """How many times this process's host has restarted backend `name`."""
    import codecvisor  # on first use: tests set the environment it reads first
    return next(b.restarts for b in codecvisor.backends.list() if b.name == name)


def make_video(path, args):
    subprocess.run(FFMPEG + args + [str(path)], check=True)
    return str(path)


def run_in_threads(work, count):
    """work(k) in `count` threads at once, k = 0 .. count-1; the exceptions
    they raised."""
    errors = []

    def run(k):
        try:
            work(k)
        except Exception as e:  # noqa: BLE001 (returned to the test)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def ffmpeg_frames(path):
    """Every frame of the video as ffmpeg's CLI converts it: (N, H, W, 3) uint8."""
    raw = subprocess.run(FFMPEG[:-1] + ["-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-fps_mode", "passthrough",
                                        "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, HEIGHT, WIDTH, 3)


@pytest.fixture(scope="session")
def video(tmp_path_factory):
    """2 s of 96x64 H.264 at 25 fps, a keyframe every 10 frames."""
    return make_video(tmp_path_factory.mktemp("videos") / "clip.mp4",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", str(SECONDS),
                       "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p"])


@pytest.fixture(scope="session")
def reference(video):
    return ffmpeg_frames(video)


def synthetic_clip(path, description):
    """A clip for the synthetic backend: 'frames=40 width=32 height=24 fps=10 ...'."""
    path.write_text("synthetic " + description)
    return str(path)
