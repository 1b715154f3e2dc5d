"""Every kind of source torchcodec takes (paths, bytes, tensors, file-like
objects, pipes), what a decoder keeps of it, and decoders reopened from it
after a fork or unpickling."""

import io
import os
import pathlib
import pickle
import shutil
import threading

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor import _codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import hwc, make_video, run_in_threads


class TorchcodecFileLike:
    """A file-like object as torchcodec's contract has it: read(size) that
    may return fewer bytes than asked (here at most 64 KiB), and
    seek(offset, whence) with both arguments required."""

    def __init__(self, data):
        self._file = io.BytesIO(data)

    def read(self, size):
        return self._file.read(min(size, 1 << 16))

    def seek(self, offset, whence):
        return self._file.seek(offset, whence)


@pytest.mark.parametrize("kind", ["str", "path", "bytes", "bytearray", "memoryview", "tensor", "array", "file",
                                  "torchcodec_file", "pipe"])
def test_every_source_kind(video, reference, kind):
    data = pathlib.Path(video).read_bytes()
    source = {
        "str": video,
        "path": pathlib.Path(video),
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "tensor": torch.frombuffer(bytearray(data), dtype=torch.uint8),
        "array": np.frombuffer(bytearray(data), dtype=np.uint8),  # what decoders return without torch
        "file": io.BytesIO(data),
        "torchcodec_file": TorchcodecFileLike(data),
        "pipe": None,
    }[kind]
    if kind == "pipe":  # cannot seek: read from where it is
        read_end, write_end = os.pipe()
        threading.Thread(target=lambda: (os.write(write_end, data), os.close(write_end)), daemon=True).start()
        source = open(read_end, "rb")
    d = VideoDecoder(source)
    assert len(d) == 50
    np.testing.assert_array_equal(hwc(d[33]), reference[33])
    # Each decoder reopens (pickled, or in a forked child) the video it was
    # given, even when the caller reuses a buffer for the next file.
    if kind in ("bytearray", "tensor", "array"):
        if kind == "bytearray":
            source[:] = b"\0" * len(source)
        elif kind == "array":
            source[:] = 0
        else:
            source.zero_()
        np.testing.assert_array_equal(hwc(pickle.loads(pickle.dumps(d))[33]), reference[33])



def test_a_file_like_source_that_never_ends_or_overreads_is_an_error(monkeypatch):
    """A read() past its size is a ValueError; a stream with no end stops at
    half the memory this process may use (here 64 MiB of 128) as a MemoryError, instead
    of growing until the kernel kills the process."""

    class Endless:
        def __init__(self, extra=0):
            self.extra = extra

        def read(self, size):
            return b"\0" * (size + self.extra)

        def seek(self, offset, whence=0):
            return 0

    with pytest.raises(ValueError, match=r"Endless.read\(1048576\) returned 1048577 bytes"):
        VideoDecoder(Endless(extra=1))
    monkeypatch.setattr(_codecvisor, "usable_memory_bytes", lambda: 128 << 20)
    with pytest.raises(MemoryError, match=r"Endless: more than 64 MiB read and no end yet"):
        VideoDecoder(Endless())


def test_file_like_sources_as_python_makes_them(video, reference):
    """Streams the io module and its users make: a read() returning a
    memoryview (a zero-copy reader), a seek() raising UnsupportedOperation
    with no seekable() to say so (read from where it is), and a non-blocking
    stream whose read() returns None with no data ready (an error that says
    so, rather than blaming the file's mode)."""
    data = pathlib.Path(video).read_bytes()

    class Views(TorchcodecFileLike):
        def read(self, size):
            return memoryview(super().read(size))

    class NoSeek:
        def __init__(self):
            self._file = io.BytesIO(data)

        def read(self, size):
            return self._file.read(size)

        def seek(self, offset, whence=0):
            raise io.UnsupportedOperation("seek")

    for source in (Views(data), NoSeek()):
        np.testing.assert_array_equal(hwc(VideoDecoder(source)[33]), reference[33])

    class NothingReady(NoSeek):
        def read(self, size):
            return None

    with pytest.raises(TypeError, match="returned None, not bytes: a non-blocking stream"):
        VideoDecoder(NothingReady())


def test_bytes_that_name_a_file_are_a_video_error_that_says_so(video):
    # os.fsencode(path) is bytes, which are the encoded video (as in
    # torchcodec): a file's name does not demux, and the error says why.
    with pytest.raises(codecvisor.VideoError, match="these bytes name a file") as raised:
        VideoDecoder(os.fsencode(video))
    assert "cannot be demuxed" in str(raised.value)


def test_a_file_opened_as_text_is_a_type_error_that_says_so(video):
    # open(path) without "rb": torchcodec's TypeError, whose phrase its
    # tests match, before any read (video bytes are no UTF-8 text, and
    # decoding them as such raised UnicodeDecodeError).
    with open(video) as text:
        with pytest.raises(TypeError, match="binary reading"):
            VideoDecoder(text)


def test_a_file_like_source_is_held_once_while_it_is_read():
    """A file-like object's contents are read into one buffer that becomes
    the decoder's copy: reading a 32 MiB stream in torchcodec's small reads
    never holds it twice."""
    import tracemalloc

    from codecvisor._sources import _read_source

    size = 32 << 20
    for source in (io.BytesIO(bytes(range(256)) * (size // 256)), TorchcodecFileLike(b"\x5a" * size)):
        tracemalloc.start()
        try:
            kind, contents = _read_source(source)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert kind == "bytes" and len(contents) == size
        assert peak < 1.25 * size, f"reading {size} bytes held {peak} at once"
        del contents

def test_threads_first_using_an_unpickled_decoder_all_get_their_frames(video, reference):
    # An unpickled decoder opens on first use: threads that use it at once
    # wait for that open; none finds it "closed" meanwhile.
    state = pickle.dumps(VideoDecoder(video))
    for _ in range(5):
        d = pickle.loads(state)
        barrier = threading.Barrier(8)
        frames = {}

        def work(k):
            barrier.wait()
            frames[k] = hwc(d[k:k + 1])

        assert run_in_threads(work, 8) == []
        for k in range(8):
            np.testing.assert_array_equal(frames[k], reference[k:k + 1])


def test_a_forked_or_unpickled_decoder_reopens_the_same_file(video, reference, tmp_path, monkeypatch):
    shutil.copy(video, tmp_path / "clip.mp4")
    monkeypatch.chdir(tmp_path)
    d = VideoDecoder("clip.mp4")
    state = pickle.dumps(d)
    # Another folder with a file of the same name: the path was the one in
    # the folder the decoder was made in.
    other = tmp_path / "other"
    other.mkdir()
    make_video(other / "clip.mp4", ["-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-t", "1"])
    monkeypatch.chdir(other)
    np.testing.assert_array_equal(hwc(pickle.loads(state)[7]), reference[7])
    # The file replaced by another video: an error, not the other's frames;
    # on first use (as in a forked child), so that a DataLoader worker
    # started by spawn, which unpickles as it starts, raises it in the
    # training loop. Every use says it again, not "closed". Its metadata
    # is the one it was made with.
    shutil.copy(other / "clip.mp4", tmp_path / "clip.mp4")
    unpickled = pickle.loads(state)
    assert len(unpickled) == 50 and unpickled.metadata == d.metadata
    for _ in range(2):
        with pytest.raises(codecvisor.VideoError,
                           match=r"the video changed since the decoder was made.*width: 96 -> 32"):
            unpickled[0]
    unpickled.close()
    with pytest.raises(ValueError, match="the decoder is closed"):
        unpickled[0]
    pid = os.fork()
    if pid == 0:  # the child reopens on first use
        try:
            d[0]
            os._exit(1)
        except codecvisor.VideoError as e:
            os._exit(0 if "the video changed" in str(e) else 2)
        except BaseException:
            os._exit(3)
    assert os.waitpid(pid, 0)[1] == 0


def test_a_file_replaced_by_one_with_the_same_metadata_is_found_changed_on_this_machine(tmp_path):
    # Another file at the path whose metadata are the same (here the same
    # bytes, a copy; in the wild a re-encode with the same settings, or an
    # edit in place): the metadata check alone would hand its frames out.
    first = make_video(tmp_path / "a.mp4", ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=25", "-frames:v", "10",
                                            "-c:v", "libx264", "-g", "5"])
    path = tmp_path / "clip.mp4"
    shutil.copy(first, path)
    d = VideoDecoder(str(path))
    state = pickle.dumps(d)
    shutil.copy(first, tmp_path / "b.mp4")
    os.replace(tmp_path / "b.mp4", path)
    unpickled = pickle.loads(state)
    assert unpickled.metadata == d.metadata
    with pytest.raises(codecvisor.VideoError, match=r"the file is another or was rewritten \(its inode"):
        unpickled[0]
    # Identities taken on another machine (another boot) are not
    # comparable: the metadata alone decide there.
    from codecvisor import _sources
    here = _sources.file_identity(path)
    assert _sources.identity_change(("another boot",) + here[1:], here) == ""
    assert _sources.identity_change(here, here) == ""


def test_a_file_name_that_is_not_utf8(video, reference, tmp_path):
    # Legal on Linux; Python names it with surrogate escapes.
    good = os.fsdecode(bytes(tmp_path) + b"/clip\xff.mp4")
    shutil.copy(video, good)
    for source in (good, pathlib.Path(good)):
        np.testing.assert_array_equal(hwc(VideoDecoder(source)[7]), reference[7])
    # Its errors name it too, its odd byte escaped.
    bad = os.fsdecode(bytes(tmp_path) + b"/bad\xfe.mp4")
    pathlib.Path(bad).write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40)
    with pytest.raises(codecvisor.VideoError, match=r"bad\\xfe\.mp4"):
        VideoDecoder(bad)
    with pytest.raises(FileNotFoundError):
        VideoDecoder(os.fsdecode(bytes(tmp_path) + b"/missing\xfd.mp4"))
