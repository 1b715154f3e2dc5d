"""Batches and the memory the process may use (the machine's, or its
cgroup's limit: a container started with --memory, or its address-space
limit, `ulimit -v`): a request whose frames
would take more than half of it is a MemoryError before anything is
decoded, and a batch whose frames keep coming past the estimate (a backend
whose rate lies) stops at that half with a MemoryError instead of getting
the process killed by the kernel. The cgroup cases run a Python process in a memory cgroup made
for it (as root here; tools/test.sh makes the hierarchies writable in
Bazel's sandbox)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from codecvisor import _codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import HEIGHT, WIDTH, backend_restarts, synthetic_clip

LIMIT = 2 << 30


def test_more_frames_than_memory_holds_are_refused_before_any_request(video):
    # Each of these would grow a batch past the memory this process may use,
    # and get the process killed by the kernel rather than raise.
    d = VideoDecoder(video)
    d[0]
    restarts = backend_restarts("cpu")
    memory = _codecvisor.usable_memory_bytes()
    count = memory // (WIDTH * HEIGHT * 3) + 1
    for ask in (lambda: d.get_frames_at([0] * count), lambda: d.get_frames_played_at([0.0] * count),
                lambda: d._frames_scattered([0], [0] * count)):
        with pytest.raises(MemoryError, match=f"{count} frames of {WIDTH * HEIGHT * 3} bytes each would take more "
                                              f"than half the {memory >> 20} MiB of memory this process may use"):
            ask()
    assert d.get_frames_in_range(0, 3).data.shape[0] == 3
    assert backend_restarts("cpu") == restarts and d.retries == 0


def test_a_containers_memory_limit_bounds_a_batch(video, monkeypatch):
    # In a container with a memory limit (its cgroup's), the machine's
    # memory is not what the process may use: the limit is. Each frame
    # counts 256 bytes of bookkeeping besides its pixels (ten million 2x2
    # frames fitted by their pixels, and their indices and times took the
    # process past its memory).
    limit = 16 << 20
    most = limit // 2 // (WIDTH * HEIGHT * 3 + 256)
    assert most < limit // 2 // (WIDTH * HEIGHT * 3)
    monkeypatch.setattr(_codecvisor, "usable_memory_bytes", lambda: limit)
    d = VideoDecoder(video)
    assert d.get_frames_at([0] * most).data.shape[0] == most
    with pytest.raises(MemoryError, match=f"{most + 1} frames of {WIDTH * HEIGHT * 3} bytes each would take more "
                                          "than half the 16 MiB of memory this process may use"):
        d.get_frames_at([0] * (most + 1))


def test_a_slice_or_range_larger_than_memory_is_refused_before_any_request(tmp_path):
    # A stream whose scanned frames take more than the memory this process may use:
    # a slice or range of all of them is a MemoryError, not a batch grown
    # until the kernel kills the process.
    memory = _codecvisor.usable_memory_bytes()
    frames = memory // (4096 * 4096 * 3) + 2
    d = VideoDecoder(synthetic_clip(tmp_path / "huge.syn", f"frames={frames} width=4096 height=4096 fps=10"),
                     device="synthetic")
    assert d.metadata.num_frames_from_content == frames
    for ask in (lambda: d[:], lambda: d[::-1], lambda: d.get_frames_in_range(0, frames)):
        with pytest.raises(MemoryError, match=f"{frames} frames of {4096 * 4096 * 3} bytes each"):
            ask()
    assert d[1:3].shape == (2, 3, 4096, 4096)


def memory_cgroup_parent():
    """The directory of this process's memory cgroup (the v1 memory
    hierarchy where one is mounted, else v2) and the name of its limit
    file."""
    with open("/proc/self/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split() for line in f]

    def mount_of(fstype, option=None):
        for m in mounts:
            dash = m.index("-")
            if m[dash + 1] == fstype and (option is None or option in m[dash + 3].split(",")):
                return m[3], m[4]
        return None

    v1 = mount_of("cgroup", "memory")
    for hierarchy, controllers, path in lines:
        if v1 and "memory" in controllers.split(","):
            root, point = v1
            return point + path[len(root):] if root != "/" else point + path, "memory.limit_in_bytes"
    v2 = mount_of("cgroup2")
    for hierarchy, controllers, path in lines:
        if v2 and hierarchy == "0":
            root, point = v2
            return point + (path[len(root):] if root != "/" else path), "memory.max"
    pytest.fail("no memory cgroup hierarchy is mounted")


def remove_cgroup(path):
    """Kills what still runs in the cgroup at `path` (a child the test gave
    up on) and removes it with the cgroups in it (a killed host's
    backends'), deepest first."""
    for _ in range(100):
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(p) for p in f.read().split()]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        inner = [e.path for e in os.scandir(path) if e.is_dir()]
        for child in inner:
            remove_cgroup(child)
        try:
            os.rmdir(path)
            return
        except OSError:  # busy for a moment after its last task is reaped
            time.sleep(0.05)
    os.rmdir(path)


@pytest.fixture
def memory_cgroup():
    parent, limit_file = memory_cgroup_parent()
    path = os.path.join(parent, f"codecvisor-test-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, limit_file), "w") as f:
            f.write(str(LIMIT))
    except OSError as e:
        if os.path.isdir(path):
            os.rmdir(path)
        pytest.fail(f"cannot make a memory cgroup with a limit under {parent}: {e} (the case needs root, or a "
                    "cgroup delegated to this user with the memory controller enabled for its children)")
    try:
        yield path
    finally:
        remove_cgroup(path)


def run_in(cgroup, script):
    """`script` run by this Python in `cgroup`, without torch (numpy arrays:
    a smaller process, so the limit is what the batch meets)."""
    procs = os.path.join(cgroup, "cgroup.procs")

    def join():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    prelude = "import sys; sys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], preexec_fn=join,
                          capture_output=True, text=True, timeout=120)


def test_the_cgroups_limit_is_the_usable_memory(memory_cgroup):
    done = run_in(memory_cgroup, """
        from codecvisor import _codecvisor
        print(_codecvisor.usable_memory_bytes())
    """)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == LIMIT


def test_frames_past_half_the_limit_stop_the_batch_without_the_precheck(memory_cgroup, tmp_path):
    # 12 MiB frames, 400 of them: the range's 40 s at 10 fps would take
    # 4.7 GiB, more than the cgroup's 2 GiB. The estimate from the rate is
    # bypassed, as a backend whose rate lies would: the batch stops the
    # frames at 1 GiB, a MemoryError, where it grew until the kernel killed
    # the process.
    clip = synthetic_clip(tmp_path / "big.syn", "frames=400 width=2048 height=2048 fps=10")
    done = run_in(memory_cgroup, f"""
        from codecvisor.decoders import VideoDecoder
        d = VideoDecoder({clip!r}, device="synthetic", seek_mode="approximate")
        d._check_memory = lambda *args, **kwargs: None
        try:
            d.get_frames_played_in_range(0.0, 40.0)
        except MemoryError as e:
            print("MemoryError:", e)
        print(len(d.get_frames_played_in_range(0.0, 1.0)))
    """)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "MemoryError: the request's frames came to more than" in done.stdout, done.stdout
    assert "more than half the 2048 MiB of memory this process may use" in done.stdout
    assert done.stdout.splitlines()[-1] == "10"  # the decoder goes on


def test_a_time_range_of_a_third_of_the_limit_is_decoded(memory_cgroup, tmp_path):
    # 61 frames of 12 MiB (732 MiB, a third of the cgroup's 2 GiB) for a
    # range that starts inside a frame: one more than its length at the
    # rate, which the batch makes room for without holding its frames twice.
    clip = synthetic_clip(tmp_path / "big.syn", "frames=400 width=2048 height=2048 fps=10")
    done = run_in(memory_cgroup, f"""
        from codecvisor.decoders import VideoDecoder
        d = VideoDecoder({clip!r}, device="synthetic")
        print(len(d.get_frames_played_in_range(0.05, 6.01)))
    """)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split() == ["61"]


def test_a_time_range_larger_than_the_limit_is_refused_before_any_request(memory_cgroup, tmp_path):
    clip = synthetic_clip(tmp_path / "big.syn", "frames=400 width=2048 height=2048 fps=10")
    done = run_in(memory_cgroup, f"""
        from codecvisor.decoders import VideoDecoder
        d = VideoDecoder({clip!r}, device="synthetic", seek_mode="approximate")
        try:
            d.get_frames_played_in_range(0.0, 40.0)
        except MemoryError as e:
            print("MemoryError:", e)
    """)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "401 frames (40.0 s at 10.0 fps) of 12582912 bytes each would take more than half the 2048 MiB" in done.stdout


def test_a_backend_start_leaves_the_processes_memory_as_it_was(video):
    # A training process has GiBs resident. A backend's start (the first
    # one, then a restart after a SIGKILL) shares that memory until the
    # child execs instead of copying it: afterwards the process writes each
    # page without a fault, where a start that copied it left every page
    # copy-on-write, one fault each (seconds for GiBs). Counted on this
    # thread alone, so the host's own threads do not blur the figure.
    script = f"""
        import mmap, os, resource, signal
        import codecvisor
        from codecvisor.decoders import VideoDecoder
        size, page = 64 << 20, mmap.PAGESIZE
        memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # as a heap's or an array's
        memory.madvise(mmap.MADV_NOHUGEPAGE)  # one fault per page, whatever the THP setting
        for i in range(0, size, page):
            memory[i] = 1
        d = VideoDecoder({video!r})
        d[0]
        os.kill(next(b.pid for b in codecvisor.backends.list() if b.name == "cpu"), signal.SIGKILL)
        d[1]
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        for i in range(0, size, page):
            memory[i] = 2
        restarts = next(b.restarts for b in codecvisor.backends.list() if b.name == "cpu")
        print(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before, size // page, restarts)
    """
    prelude = "import sys; sys.modules['torch'] = None\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    # The backend's restarts, not the decoder's replays: whether d[1] found
    # its session dead before or after sending depends on timing.
    faults, pages, restarts = (int(n) for n in done.stdout.split())
    assert restarts == 1, "the kill did not cost a restart"
    assert faults < pages // 16, f"{faults} faults writing {pages} pages after the starts: a start copied the process"


def run_with_address_space(limit, script):
    """`script` run by this Python, without torch, under `ulimit -v`."""
    import resource

    def lower():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    prelude = "import sys; sys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], preexec_fn=lower,
                          capture_output=True, text=True, timeout=120)


def test_an_address_space_limit_bounds_batches_and_a_refused_one_costs_nothing_after(tmp_path):
    # Under `ulimit -v` 3 GiB the usable memory is that limit, not the
    # machine's. A batch whose frames the kernel will not map (the estimate
    # bypassed, as for a backend whose rate lies) is a MemoryError saying
    # so, and the next requests and a new decoder work at once: the batch
    # cache, whose mappings count against the limit, gives them back. Before,
    # the limit was ignored, 1.2 GB was decoded before a bare
    # 'std::bad_alloc', and every request failed for the next 10 s.
    if any(runtime in os.environ.get("LD_PRELOAD", "") for runtime in ("asan", "tsan")):
        pytest.skip("AddressSanitizer and ThreadSanitizer reserve their shadow memory, which no address-space "
                    "limit allows (the plain run checks this)")
    limit = 3 << 30
    clip = synthetic_clip(tmp_path / "big.syn", "frames=400 width=2048 height=2048 fps=10")
    done = run_with_address_space(limit, f"""
        from codecvisor import _codecvisor
        from codecvisor.decoders import VideoDecoder
        print(_codecvisor.usable_memory_bytes())
        d = VideoDecoder({clip!r}, device="synthetic")
        d[0]
        d._check_memory = lambda *args, **kwargs: None
        try:
            d.get_frames_at(list(range(200)))
        except MemoryError as e:
            print("MemoryError:", e)
        print(d[1].shape[1], len(d.get_frames_in_range(0, 5)))
        print(len(VideoDecoder({clip!r}, device="synthetic").get_frames_in_range(0, 5)))
    """)
    assert done.returncode == 0, (done.returncode, done.stderr)
    lines = done.stdout.splitlines()
    assert int(lines[0]) == limit
    assert lines[1].startswith("MemoryError: "), done.stdout
    assert "std::bad_alloc" not in lines[1]
    assert ("the system refused the" in lines[1] or "more than half the 3072 MiB" in lines[1]), lines[1]
    if "the system refused the" in lines[1]:  # the whole request's size, not only the growth refused
        assert f"of 200 ({2048 * 2048 * 3} bytes each, {200 * 2048 * 2048 * 3 >> 20} MiB in all)" in lines[1], lines[1]
    assert lines[2:] == ["2048 5", "5"], done.stdout
