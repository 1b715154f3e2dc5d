"""codecvisor.decoders.VideoDecoder's errors: bad arguments, missing streams,
corrupt and oversized files, unreadable paths, timeouts and quarantine, as
the exception types torchcodec raises for the same misuse."""

import errno
import os
import pathlib
import pickle
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import FPS, HEIGHT, WIDTH, make_video, synthetic_clip


def test_bad_arguments(video, tmp_path):
    with pytest.raises(TypeError):
        VideoDecoder(12)
    # An empty path is no file (as open("") says), not the working folder.
    with pytest.raises(FileNotFoundError) as missing:
        VideoDecoder("")
    assert isinstance(missing.value, RuntimeError)
    with pytest.raises(ValueError):
        VideoDecoder(video, dimension_order="CHW")
    with pytest.raises(ValueError):
        VideoDecoder(video, seek_mode="fast")
    with pytest.raises(ValueError):
        VideoDecoder(video, num_ffmpeg_threads=-1)
    # Options out of what the native side takes are ValueErrors that say so.
    for options in (dict(num_ffmpeg_threads=2 ** 32), dict(stream_index=2 ** 31), dict(stream_index="0")):
        with pytest.raises(ValueError, match="should be"):
            VideoDecoder(video, **options)
    # numpy integers are ints.
    assert len(VideoDecoder(video, stream_index=np.int64(0), num_ffmpeg_threads=np.int32(1))) == 50
    # Every wait has a deadline: an infinite or sub-millisecond timeout
    # would be none, or declare a working backend hung and kill it.
    for name in ("timeout", "open_timeout"):
        for seconds in (float("inf"), float("nan"), 0.0005, 0, -1):
            with pytest.raises(ValueError, match=name):
                VideoDecoder(video, **{name: seconds})
    with pytest.raises(ValueError, match="timeout"):
        codecvisor.backends.start("cpu", timeout=float("inf"))
    with pytest.raises(ValueError, match="embedded null byte"):
        VideoDecoder(video + "\0.ignored")
    # A file that cannot be opened is the OSError Python's open() raises and
    # a RuntimeError, as torchcodec's is.
    with pytest.raises(FileNotFoundError) as missing:
        VideoDecoder(str(tmp_path / "missing.mp4"))
    assert isinstance(missing.value, RuntimeError)
    assert missing.value.errno == errno.ENOENT and missing.value.filename == str(tmp_path / "missing.mp4")
    # A file used as a folder, a link loop, a name too long: open()'s errno.
    os.symlink("loop", tmp_path / "loop")
    for path, kind, number in ((video + "/x.mp4", NotADirectoryError, errno.ENOTDIR),
                               (str(tmp_path / "loop"), OSError, errno.ELOOP),
                               (str(tmp_path / ("n" * 300)), OSError, errno.ENAMETOOLONG)):
        with pytest.raises(kind) as bad:
            VideoDecoder(path)
        assert bad.value.errno == number and bad.value.filename == path, bad.value
        assert isinstance(bad.value, RuntimeError), bad.value
    # What Python's own open() would raise, so that `except OSError` and a
    # batch job's on_error="skip" see a path that is no video file.
    (tmp_path / "folder.mp4").mkdir()
    with pytest.raises(IsADirectoryError, match="not a regular file") as folder:
        VideoDecoder(str(tmp_path / "folder.mp4"))
    assert isinstance(folder.value, RuntimeError)
    os.mkfifo(tmp_path / "fifo.mp4")
    with pytest.raises(OSError, match="not a regular file"):
        VideoDecoder(str(tmp_path / "fifo.mp4"))
    with pytest.raises(codecvisor.NoSuchDeviceError) as e:
        VideoDecoder(video, device="acme:0")
    assert "acme" in str(e.value)
    # An empty name is no device (torch.device("") raises), not the default one.
    with pytest.raises(codecvisor.NoSuchDeviceError, match="device must not be empty") as e:
        VideoDecoder(video, device="")
    assert isinstance(e.value, RuntimeError)
    # torchcodec's transforms and custom_frame_mappings: their default is
    # taken, anything else is refused, never ignored.
    assert len(VideoDecoder(video, transforms=None, custom_frame_mappings=None)) == 50
    assert len(VideoDecoder(video, transforms=[])) == 50  # no transforms, as torchcodec takes them
    with pytest.raises(NotImplementedError, match="transforms"):
        VideoDecoder(video, transforms=[lambda frame: frame])
    with pytest.raises(NotImplementedError, match="custom_frame_mappings"):
        VideoDecoder(video, custom_frame_mappings='{"frames": []}')
    # A URL is named as one (backends have no network), not opened as a
    # relative path.
    with pytest.raises(ValueError, match="URL sources are not supported") as url:
        VideoDecoder("https://example.com/clip.mp4")
    assert "example.com/clip.mp4" in str(url.value) and "/tmp" not in str(url.value)


def test_the_cpu_has_no_index_but_torchs_cpu_0(video):
    # "cpu:1" opened on the cpu as if no index were given.
    with pytest.raises(ValueError, match="the cpu device has no index"):
        VideoDecoder(video, device="cpu:1")
    with VideoDecoder(video, device="cpu:0") as d:
        assert d[0].shape == (3, HEIGHT, WIDTH)


def test_a_missing_stream_is_a_value_error_not_a_device_error(video, tmp_path):
    tone = make_video(tmp_path / "tone.m4a", ["-f", "lavfi", "-i", "sine=duration=1"])
    with pytest.raises(codecvisor.NoSuchStreamError) as e:
        VideoDecoder(tone)
    assert isinstance(e.value, ValueError) and not isinstance(e.value, codecvisor.NoSuchDeviceError)
    assert "has no video stream" in str(e.value), str(e.value)
    with pytest.raises(codecvisor.NoSuchStreamError) as e:
        VideoDecoder(video, stream_index=3)
    assert "has no stream 3: 3 is not a valid stream" in str(e.value), str(e.value)  # torchcodec's phrase too
    # Bytes reach the backend the same way: the same answer.
    with pytest.raises(codecvisor.NoSuchStreamError):
        VideoDecoder(pathlib.Path(tone).read_bytes())
    # A device nobody serves stays a device error, with the backend of
    # another device up.
    with pytest.raises(codecvisor.NoSuchDeviceError):
        VideoDecoder(video, device="acme:0", stream_index=3)


@pytest.mark.parametrize("state, device, started", [
    ("ready", "cpu", True),
    # Died in the moment after it answered: being replaced, still the
    # backend's answer about the video.
    ("restarting", "cpu", True),
    # Started again on demand (a first start never answers NOT_FOUND).
    ("spawning", "cpu:0", True),
    # Never started, could not start, or given up: the device is the problem.
    ("discovered", "cpu", False),
    ("failed", "cpu", False),
    ("quarantined", "cpu", False),
    # Up, but serving another device.
    ("ready", "acme:0", False),
])
def test_a_not_found_is_about_the_stream_once_the_devices_backend_started(state, device, started):
    from codecvisor._open_errors import backend_started
    backends = [{"devices": ["cpu"], "state": state}, {"devices": ["acme"], "state": "failed"}]
    assert backend_started(backends, device) is started

def test_a_header_promising_billions_of_frames_ends_where_the_stream_does(tmp_path):
    # An AVI whose stream header claims 2^31 - 1 frames: approximate mode
    # trusts the count (capped at 2^24), and a range over it ends at the
    # stream's real end (MissingFrameError), not in a raw MemoryError from
    # reserving memory for every promised frame.
    source = make_video(tmp_path / "short.avi", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                 "-t", "2", "-c:v", "mpeg4"])
    data = bytearray(open(source, "rb").read())
    strh = data.find(b"strh")
    struct.pack_into("<I", data, strh + 8 + 32, 0x7FFFFFFF)  # AVIStreamHeader.dwLength
    lying = tmp_path / "lying.avi"
    lying.write_bytes(bytes(data))
    d = VideoDecoder(str(lying), seek_mode="approximate")
    assert len(d) == 1 << 24
    for call in (lambda: d[:], lambda: d.get_frames_in_range(0, len(d)), lambda: d.get_frames_in_range(0, len(d), 7)):
        with pytest.raises(codecvisor.MissingFrameError, match="past the end"):
            call()
    assert len(d.get_frames_in_range(0, 50)) == 50


def test_a_corrupt_file_is_a_clear_error(tmp_path):
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40)
    with pytest.raises(codecvisor.VideoError) as e:
        VideoDecoder(str(garbage))
    assert "garbage.mp4" in str(e.value)


def test_an_empty_file_is_an_empty_video_as_empty_bytes_are(tmp_path):
    # The files QA helper: b"" was an EmptyVideoError, an empty file on
    # disk a VideoError saying it could not be demuxed.
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(codecvisor.EmptyVideoError, match="empty.mp4: the file is empty"):
        VideoDecoder(empty)
    with pytest.raises(codecvisor.EmptyVideoError, match="no bytes to decode"):
        VideoDecoder(b"")


def test_a_file_that_says_it_is_empty_but_has_bytes_is_read_and_the_kernels_are_refused(tmp_path):
    # procfs, sysfs and some FUSE filesystems give a size of 0 for files
    # with contents: the bytes decide whether a file is empty.
    from codecvisor._open_errors import is_empty_file
    assert not is_empty_file("/proc/self/status")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    assert is_empty_file(empty)
    # The kernel's files are no videos, and some would hand the backend
    # this process's state: refused as what Python's own open() of a
    # file that is not a video's would be, an OSError.
    for path in ("/proc/self/status", "/proc/self/mem"):
        with pytest.raises(OSError, match="one of the kernel's") as e:
            VideoDecoder(path)
        assert not isinstance(e.value, codecvisor.EmptyVideoError), e.value


def test_frames_larger_than_the_backend_decodes_are_an_unsupported_video(tmp_path):
    # 16400 px wide: past the cpu backend's 16384 per side. A property of the
    # file, as a codec without a decoder is: a VideoError (which a batch job
    # skips: test_dataset) and a ValueError.
    wide = str(tmp_path / "wide.mkv")
    make_video(wide, ["-f", "lavfi", "-i", "color=red:size=16400x16:rate=5", "-frames:v", "3", "-c:v", "ffv1"])
    with pytest.raises(codecvisor.UnsupportedVideoError, match="16400x16 are larger than this backend decodes") as e:
        VideoDecoder(wide)
    assert isinstance(e.value, codecvisor.VideoError) and isinstance(e.value, ValueError)
    assert e.value.code == "UNIMPLEMENTED" and "wide.mkv" in str(e.value)


def test_a_host_under_a_lower_hard_limit_still_decodes(video):
    # A cluster's `ulimit -n` (or `-v`) below the cpu backend's own limit
    # (open_files 1024; memory_mb 8 GiB): the backend keeps the host's lower
    # limit instead of failing to raise it ("the sandbox cannot be set up
    # here"). RLIMIT_NOFILE, not RLIMIT_AS: a sanitizer's runtime cannot run
    # under an address-space limit at all.
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))\n"
            "from codecvisor.decoders import VideoDecoder\n"
            "print(tuple(VideoDecoder(sys.argv[1])[3].shape))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", code, video], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str((3, HEIGHT, WIDTH))


def _state(name):
    return next(b.state for b in codecvisor.backends.list() if b.name == name)


def test_reset_lifts_a_quarantine_in_this_process(tmp_path):
    # A quarantine lasts a minute or more; backends.reset is the way out
    # at once that its message names.
    poison = synthetic_clip(tmp_path / "poison.syn", "frames=5 fault=segfault fault_frame=0")
    good = synthetic_clip(tmp_path / "good.syn", "frames=5 width=8 height=4 fps=10")
    try:
        # Each poison request crashes it twice and is judged poison; a crash
        # after 8 in a row (faulty.toml's max_poison_in_a_row, the default)
        # quarantines.
        for _ in range(12):
            with pytest.raises(codecvisor.BackendError):
                VideoDecoder(poison, device="faulty")[0]
            if _state("faulty") == "quarantined":
                break
        assert _state("faulty") == "quarantined"
        with pytest.raises(codecvisor.BackendError, match=r'codecvisor\.backends\.reset\("faulty"\)'):
            VideoDecoder(good, device="faulty")
    finally:
        codecvisor.backends.reset("faulty")
    assert _state("faulty") == "discovered"
    assert VideoDecoder(good, device="faulty")[2].shape == (3, 4, 8)
    with pytest.raises(codecvisor.NoSuchDeviceError):
        codecvisor.backends.reset("nosuchbackend")


def test_a_process_leaves_its_backends_failures_for_codecvisor_backends(tmp_path):
    # A training run's crashes are there for `codecvisor backends` to show
    # after it ended: the process's Host adds them to the per-user history
    # as it goes, at exit, from the main process and from a forked
    # DataLoader-style worker alike.
    import tomllib
    poison = synthetic_clip(tmp_path / "poison.syn", "frames=5 fault=segfault fault_frame=0")
    code = ("import multiprocessing, sys\n"
            "import codecvisor\n"
            "from codecvisor.decoders import VideoDecoder\n"
            "def crash():\n"
            "    try:\n"
            "        VideoDecoder(sys.argv[1], device='faulty')[0]\n"
            "    except codecvisor.BackendError:\n"
            "        pass\n"
            "    else:\n"
            "        sys.exit('the poison clip decoded')\n"
            "if sys.argv[2] == 'fork':\n"
            "    codecvisor.backends.list()  # the parent's host exists before the fork\n"
            "    p = multiprocessing.get_context('fork').Process(target=crash)\n"
            "    p.start(); p.join(); sys.exit(p.exitcode)\n"
            "crash()\n")
    for where in ("main", "fork"):
        state = tmp_path / where
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), XDG_STATE_HOME=str(state))
        done = subprocess.run([sys.executable, "-c", code, poison, where], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        with open(state / "codecvisor" / "backends.toml", "rb") as f:
            record = tomllib.load(f)["backend"]["faulty"]
        # The poison request crashed it twice (the first try and the replay).
        assert record["restarts"] == 2, (where, record)
        assert "SIGSEGV" in record["last_exit"], (where, record)
        assert record["manifest"].endswith("faulty.toml"), (where, record)


def test_a_path_the_user_cannot_read_is_a_permission_error(video, monkeypatch):
    # The host's open(2) fails with EACCES for a user who may not read the
    # file; run as root here, so the user's view of it is faked.
    from codecvisor import _codecvisor, _errors
    error = _codecvisor.StatusError(f"open({video}): Permission denied")
    error.code = "PERMISSION_DENIED"
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    translated = _errors.translate(error, video)
    assert isinstance(translated, PermissionError) and translated.filename == video, translated
    monkeypatch.setattr(os, "access", lambda path, mode: True)  # then it is the backend's refusal
    assert isinstance(_errors.translate(error, video), codecvisor.BackendError)


def test_a_path_in_a_folder_the_user_cannot_search_is_a_permission_error(video, monkeypatch):
    # A folder on the way that the user may not search (mode 700, another
    # owner): the file cannot even be looked at, as Python's open() finds
    # too. Run as root here, so that user's view of it is faked.
    from codecvisor import _codecvisor, _errors
    error = _codecvisor.StatusError(f"open({video}): Permission denied")
    error.code = "PERMISSION_DENIED"
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) == video:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    translated = _errors.translate(error, video)
    assert isinstance(translated, PermissionError) and translated.filename == video, translated
    assert isinstance(translated, RuntimeError)  # as torchcodec's open error is


def test_open_timeout_bounds_an_open_the_backend_never_answers(tmp_path):
    # A backend that hangs in open is killed after open_timeout (default
    # 120 s), tried once more, and the open is poison.
    clip = synthetic_clip(tmp_path / "hang.syn", "frames=5 fault=hang_open")
    with pytest.raises(codecvisor.BackendError, match="no answer within 500 ms") as e:
        VideoDecoder(clip, device="faulty", open_timeout=0.5)
    assert "opening the file" in str(e.value), e.value
    with pytest.raises(ValueError, match="open_timeout"):
        VideoDecoder(clip, device="faulty", open_timeout=0)
    # A good file's open is left alone, and a copy keeps the option (it
    # reopens with it). 20 s: a good open on a loaded machine may take more
    # than 0.5 s, which only the hung one must exceed.
    good = VideoDecoder(synthetic_clip(tmp_path / "good.syn", "frames=5 width=8 height=4 fps=10"), device="faulty",
                        open_timeout=20)
    copy = pickle.loads(pickle.dumps(good))
    assert copy._options["open_timeout"] == 20.0
    assert copy[1].shape == (3, 4, 8)


def test_the_hosts_warnings_are_python_warnings_once_per_process(video):
    # What the host warns of as it starts (here a CODECVISOR_* value it
    # cannot read) is a CodecvisorWarning, once however many decoders are
    # made; a filter silences it, and a forked child whose parent warned
    # does not warn again.
    script = (
        "import os, sys, warnings\n"
        "import codecvisor\n"
        "from codecvisor.decoders import VideoDecoder\n"
        "if sys.argv[2] == 'ignore':\n"
        "    warnings.filterwarnings('ignore', category=codecvisor.CodecvisorWarning)\n"
        "if sys.argv[2] == 'error':\n"
        "    warnings.simplefilter('error', codecvisor.CodecvisorWarning)\n"
        "    try:\n"
        "        VideoDecoder(sys.argv[1])\n"
        "    except codecvisor.CodecvisorWarning:\n"
        "        print('raised once')\n"
        "for _ in range(3):\n"
        "    VideoDecoder(sys.argv[1])[0]\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    try:\n"
        "        VideoDecoder(sys.argv[1])[0]\n"
        "    except codecvisor.CodecvisorWarning:\n"
        "        os._exit(3)  # as an error: the child's own host raises it once too\n"
        "    os._exit(0)\n"
        "assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == (3 if sys.argv[2] == 'error' else 0)\n"
        "print(codecvisor.backends.warnings())\n")
    env = dict(os.environ, CODECVISOR_BACKEND_LOG_LEVEL="loud",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    shown = subprocess.run([sys.executable, "-c", script, video, "default"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.count("CodecvisorWarning: codecvisor: CODECVISOR_BACKEND_LOG_LEVEL") == 1, shown.stderr
    # Blamed on the user's line that made the host (the script's), not on
    # codecvisor's own.
    assert re.search(r"^<string>:\d+: CodecvisorWarning", shown.stderr, re.M), shown.stderr
    assert "CODECVISOR_BACKEND_LOG_LEVEL" in shown.stdout
    silenced = subprocess.run([sys.executable, "-c", script, video, "ignore"], env=env, capture_output=True,
                              text=True, timeout=120)
    assert silenced.returncode == 0, silenced.stderr
    assert "CodecvisorWarning" not in silenced.stderr, silenced.stderr
    # Turned into an error (-W error), it fails the call that made the
    # host, and only that one.
    raised = subprocess.run([sys.executable, "-c", script, video, "error"], env=env, capture_output=True, text=True,
                            timeout=120)
    assert raised.returncode == 0, raised.stderr
    assert raised.stdout.startswith("raised once\n"), raised.stdout


def test_an_interpreter_or_numpy_the_extension_was_not_built_for_is_named_before_it_loads(tmp_path):
    from codecvisor import _built_for, _environment
    assert _environment.interpreter_problem(_built_for.PYTHON, sys.implementation.name, sys.version_info) == ""
    other = (3, 13, 0, "final", 0)
    said = _environment.interpreter_problem((3, 11), "cpython", other)
    assert said.startswith("codecvisor's extension module is built for CPython 3.11") and "cpython 3.13" in said
    assert "pypy" in _environment.interpreter_problem((3, 11), "pypy", sys.version_info)
    assert _environment.numpy_problem(np.__version__) == ""
    assert _environment.numpy_problem("1.26.4") == ""
    assert "install numpy<2" in _environment.numpy_problem("2.1.0")
    # As `import codecvisor` meets it: a numpy 2 found first on the path.
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '2.0.0'\n")
    run = subprocess.run([sys.executable, "-c", "import codecvisor"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent)] + sys.path)))
    assert run.returncode != 0 and "this is numpy 2.0.0: install numpy<2" in run.stderr, run.stderr


def test_annotations_resolve_and_the_bench_starts_without_docstrings():
    import typing
    hints = typing.get_type_hints(VideoDecoder.__init__)
    assert torch.Tensor in typing.get_args(hints["source"]) and bytes in typing.get_args(hints["source"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for module in ("codecvisor.bench", "codecvisor._bench_training"):
        run = subprocess.run([sys.executable, "-OO", "-m", module, "--help"], capture_output=True, text=True,
                             timeout=120, env=env)
        assert run.returncode == 0 and "usage:" in run.stdout, (module, run.stderr)


def test_the_torch_only_modules_say_so_without_torch():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = ("import sys; sys.modules['torch'] = None\n"  # as if torch were not installed
            "import codecvisor\n"
            "try:\n"
            "    import codecvisor.samplers\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert "codecvisor.samplers needs torch" in run.stdout, run.stdout + run.stderr
