"""10,000 decoders opened and let go: no growth in descriptors, threads,
processes or memory."""

import gc
import os

from codecvisor.decoders import VideoDecoder

from conftest import synthetic_clip


def census():
    pid = os.getpid()
    children = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                children += int(fields[1]) == pid  # ppid
            except OSError:
                pass  # gone meanwhile
    with open("/proc/self/status") as f:
        rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    fds = channels = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        fds += 1
        channels += "codecvisor-channel" in target
    return dict(fds=fds, channels=channels, threads=len(os.listdir("/proc/self/task")), children=children,
                rss_kib=rss_kib)


def test_ten_thousand_decoders_leave_nothing_behind(tmp_path):
    clip = synthetic_clip(tmp_path / "clip.syn", "frames=4 width=32 height=24 fps=10")

    def churn(n):
        for i in range(n):
            d = VideoDecoder(clip, device="synthetic")
            assert d[i % 4].shape == (3, 24, 32)
            if i % 2:
                d.close()  # the other half is let go to the garbage collector
            del d
        gc.collect()

    churn(500)  # warm up: the backend process, its threads, allocator pools
    before = census()
    churn(10_000)
    after = census()
    # Channel memfds: the backend's control channel, and the regions of up
    # to 2 closed sessions that it keeps for its next ones
    # (ipc/region_cache.h), 0 to 2 depending on when its runner let go of
    # the last ones. Every other descriptor is exactly as before.
    assert after["fds"] - after["channels"] == before["fds"] - before["channels"], (before, after)
    assert 1 <= before["channels"] <= 3 and 1 <= after["channels"] <= 3, (before, after)
    assert after["threads"] == before["threads"], (before, after)
    assert after["children"] == before["children"] == 1, (before, after)  # the synthetic backend's process
    assert after["rss_kib"] - before["rss_kib"] < 16 * 1024, (before, after)


def test_a_decoder_whose_call_raised_goes_when_let_go(tmp_path):
    # No cycle collection here: reference counting alone must free it, as it
    # frees a decoder whose calls all succeeded. The raised error used to
    # be held by a local of the frame its traceback holds, which kept the
    # decoder, its session and its descriptors until the cycle collector ran.
    import weakref
    clip = synthetic_clip(tmp_path / "clip.syn", "frames=4 width=32 height=24 fps=10")
    gc.collect()
    gc.disable()
    try:
        for call in (lambda d: d.get_frames_at([10**6]), lambda d: d[10**6], lambda d: d.get_frame_played_at(99.0)):
            d = VideoDecoder(clip, device="synthetic")
            try:
                call(d)
            except IndexError:
                pass
            gone = weakref.ref(d)
            del d
            assert gone() is None
    finally:
        gc.enable()
