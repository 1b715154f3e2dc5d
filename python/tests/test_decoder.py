"""codecvisor.decoders.VideoDecoder's access methods against torchcodec's
documented behaviour, with every frame compared byte for byte with the
ffmpeg CLI."""

import copy
import decimal
import math
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor.decoders import VideoDecoder

from conftest import FFMPEG, FPS, HEIGHT, WIDTH, ffmpeg_frames, hwc, make_video


def test_every_frame_is_ffmpegs(video, reference):
    d = VideoDecoder(video)
    batch = d.get_frames_in_range(0, len(d))
    assert batch.data.dtype == torch.uint8 and tuple(batch.data.shape) == (50, 3, HEIGHT, WIDTH)
    assert batch.data.is_contiguous()
    np.testing.assert_array_equal(hwc(batch.data), reference)
    assert batch.pts_seconds.dtype == torch.float64
    np.testing.assert_allclose(batch.pts_seconds.numpy(), np.arange(50) / FPS)
    np.testing.assert_allclose(batch.duration_seconds.numpy(), np.full(50, 1 / FPS))



@pytest.mark.parametrize("gop", [5, 1])
def test_frames_that_share_a_pts_are_each_returned(tmp_path, gop):
    # Frames two by two with one pts (0, 0, 80, 80 ... ms in Matroska), as
    # a muxer that rounds times together writes them: each is a frame of
    # its own, in the decoder's order, as the ffmpeg CLI gives them. Key
    # frames every 5 frames fall on the first or the second of a pair; every
    # frame a key frame makes pairs of key frames one seek can land on.
    path = make_video(tmp_path / "pairs.mkv",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", "1",
                       "-vf", "setpts='floor(N/2)*2/25/TB'", "-fps_mode", "passthrough", "-c:v", "libx264",
                       "-g", str(gop), "-bf", "0"])
    reference = ffmpeg_frames(path)
    # (26 frames: the last pair's pts, 0.96 s, is before the 1 s cut.)
    assert len(reference) == 26 and not np.array_equal(reference[0], reference[1])
    d = VideoDecoder(path, dimension_order="NHWC")
    assert len(d) == 26
    batch = d.get_frames_in_range(0, 26)
    np.testing.assert_array_equal(batch.data.numpy(), reference)
    np.testing.assert_allclose(batch.pts_seconds.numpy(), [n // 2 * 0.08 for n in range(26)])
    # Out of order, each alone (a seek each), and a second of a pair
    # right after its first.
    for i in [13, 3, 25, 1, 0, 1, 8, 7, 24, 11, 10]:
        np.testing.assert_array_equal(d[i].numpy(), reference[i], err_msg=f"frame {i}")
    # Each alone, from a new decoder: the first request seeks.
    for i in [25, 24, 11, 10]:
        np.testing.assert_array_equal(VideoDecoder(path, dimension_order="NHWC")[i].numpy(), reference[i],
                                      err_msg=f"frame {i} alone")
    # Approximate time ranges read on over both frames of a pair, and a
    # time finds the pair's second, as exact mode does.
    a = VideoDecoder(path, seek_mode="approximate", dimension_order="NHWC")
    for start, stop in [(0.0, 0.5), (0.1, 0.96), (0.16, 0.17), (0.5, a.metadata.end_stream_seconds)]:
        got, want = a.get_frames_played_in_range(start, stop), d.get_frames_played_in_range(start, stop)
        assert got.pts_seconds.tolist() == want.pts_seconds.tolist(), (start, stop)
        np.testing.assert_array_equal(got.data.numpy(), want.data.numpy(), err_msg=f"{start}-{stop}")
    np.testing.assert_array_equal(a.get_frame_played_at(0.17).data.numpy(), reference[5])

@pytest.fixture(scope="module")
def wide_video(tmp_path_factory):
    """30 frames of 638x360: a 20 MB batch, which is filled with
    non-temporal stores, in rows of 1914 bytes (no multiple of 16)."""
    path = make_video(tmp_path_factory.mktemp("wide") / "wide.mp4",
                      ["-f", "lavfi", "-i", "testsrc2=size=638x360:rate=25", "-t", "1.2", "-c:v", "libx264",
                       "-g", "12", "-pix_fmt", "yuv420p"])
    raw = subprocess.run(FFMPEG[:-1] + ["-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], check=True,
                         capture_output=True).stdout
    return path, np.frombuffer(raw, np.uint8).reshape(-1, 360, 638, 3)


@pytest.mark.parametrize("order", ["NHWC", "NCHW"])
def test_a_width_that_is_no_multiple_of_16_is_ffmpegs(tmp_path_factory, order):
    """854x480: swscale's 4:2:0 conversion writes rows in blocks of 8 pixels,
    and into rows with no room for the last block it leaves 6 columns out."""
    path = make_video(tmp_path_factory.mktemp("w854") / "w854.mp4",
                      ["-f", "lavfi", "-i", "testsrc2=size=854x480:rate=25", "-frames:v", "3", "-c:v", "libx264",
                       "-pix_fmt", "yuv420p"])
    raw = subprocess.run(FFMPEG[:-1] + ["-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], check=True,
                         capture_output=True).stdout
    reference = np.frombuffer(raw, np.uint8).reshape(-1, 480, 854, 3)
    assert len(reference) == 3
    with VideoDecoder(path, dimension_order=order) as d:
        batch = d.get_frames_in_range(0, 3).data
        np.testing.assert_array_equal(batch.numpy() if order == "NHWC" else hwc(batch), reference)
        single = d[2].data
        np.testing.assert_array_equal(single.numpy() if order == "NHWC" else hwc(single), reference[2])


@pytest.mark.parametrize("order", ["NHWC", "NCHW"])
def test_a_batch_over_8_mib_is_ffmpegs(wide_video, order):
    path, reference = wide_video
    assert len(reference) == 30
    with VideoDecoder(path, dimension_order=order) as d:
        batch = d.get_frames_in_range(0, 30).data
        assert batch.numel() >= 8 << 20
        got = batch.numpy() if order == "NHWC" else hwc(batch)
        np.testing.assert_array_equal(got, reference)
        # Repeated frames (copies of the first copy) too: 15 frames, 10 MB.
        indices = [29, 3] * 6 + [17, 29, 0]
        repeated = d.get_frames_at(indices).data
        assert repeated.numel() >= 8 << 20
        got = repeated.numpy() if order == "NHWC" else hwc(repeated)
        np.testing.assert_array_equal(got, reference[indices])


def test_nhwc_is_interleaved(video, reference):
    d = VideoDecoder(video, dimension_order="NHWC")
    assert tuple(d[3].shape) == (HEIGHT, WIDTH, 3)
    np.testing.assert_array_equal(d[3].numpy(), reference[3])
    np.testing.assert_array_equal(d[0:50:7].numpy(), reference[0:50:7])


def test_indexing_like_a_sequence(video, reference):
    d = VideoDecoder(video)
    assert len(d) == 50
    np.testing.assert_array_equal(hwc(d[0]), reference[0])
    np.testing.assert_array_equal(hwc(d[-1]), reference[-1])
    np.testing.assert_array_equal(hwc(d[10:20:3]), reference[10:20:3])
    np.testing.assert_array_equal(hwc(d[-5:]), reference[-5:])
    np.testing.assert_array_equal(hwc(d[40:10:-10]), reference[40:10:-10])
    assert tuple(d[30:10].shape) == (0, 3, HEIGHT, WIDTH)
    np.testing.assert_array_equal(hwc(d[np.int64(7)]), reference[7])
    for bad in (50, -51):
        with pytest.raises(IndexError):
            d[bad]
    with pytest.raises(TypeError):
        d["0"]


def test_frames_asked_out_of_order_are_decoded_in_stream_order(video, reference, monkeypatch):
    # As torchcodec does: one request for the distinct frames, ascending,
    # each decoded once, and the batch in the order asked. Sent as asked,
    # each frame before the last sought back to its key frame and decoded
    # forward again (a reversed slice of a one-GOP clip: 27x the time).
    d = VideoDecoder(video)
    calls, real = [], VideoDecoder._call

    def spy(self, method, *args):
        calls.append((method,) + args)
        return real(self, method, *args)

    monkeypatch.setattr(VideoDecoder, "_call", spy)
    b = d.get_frames_at([30, 2, -1, 2, 17])
    np.testing.assert_array_equal(hwc(b.data), reference[[30, 2, -1, 2, 17]])
    assert [round(t * FPS) for t in b.pts_seconds.tolist()] == [30, 2, 49, 2, 17]
    assert calls.pop() == ("frames_at_scattered", [2, 17, 30, 49], [2, 0, 3, 0, 1])
    np.testing.assert_array_equal(hwc(d[40:10:-10]), reference[40:10:-10])
    assert calls.pop() == ("frames_at_scattered", [20, 30, 40], [2, 1, 0])
    played = d.get_frames_played_at([1.0, 0.2, 1.0])
    np.testing.assert_array_equal(hwc(played.data), reference[[round(1.0 * FPS), round(0.2 * FPS), round(1.0 * FPS)]])
    assert calls.pop() == ("frames_played_at_scattered", [0.2, 1.0], [1, 0, 1])
    # Already in order: the plain request.
    np.testing.assert_array_equal(hwc(d.get_frames_at([1, 4]).data), reference[[1, 4]])
    assert calls.pop() == ("frames_at", [1, 4])


def test_frame_and_batch_accessors(video, reference):
    d = VideoDecoder(video)
    f = d.get_frame_at(12)
    assert isinstance(f, codecvisor.Frame)
    assert f.pts_seconds == pytest.approx(12 / FPS) and f.duration_seconds == pytest.approx(1 / FPS)
    np.testing.assert_array_equal(hwc(f.data), reference[12])
    data, pts, duration = f
    assert pts == f.pts_seconds

    b = d.get_frames_at([5, 1, 5, 49])
    assert isinstance(b, codecvisor.FrameBatch) and len(b) == 4
    np.testing.assert_array_equal(hwc(b.data), reference[[5, 1, 5, 49]])
    # As torchcodec's: an item of a batch is a batch of one frame's data
    # (3-D) with 0-D time tensors, whatever integer indexes it.
    for key in (1, np.int64(1), torch.tensor(1)):
        one = b[key]
        assert isinstance(one, codecvisor.FrameBatch) and one.data.dim() == 3
        assert one.pts_seconds.dim() == 0 and one.pts_seconds.item() == pytest.approx(1 / FPS)
    assert len(b[1:3]) == 2
    assert all(isinstance(x, codecvisor.FrameBatch) for x in b)
    assert [round(x.pts_seconds.item() * FPS) for x in b] == [5, 1, 5, 49]
    # And they check their shapes as torchcodec's do.
    with pytest.raises(ValueError, match="3-dimensional"):
        codecvisor.Frame(b.data, 0.0, 0.04)
    with pytest.raises(ValueError, match="leading dimensions of the inputs do not match"):
        codecvisor.FrameBatch(b.data, b.pts_seconds[:2], b.duration_seconds)
    # A subclass's repr names it, as torchcodec's dataclasses do.
    class Clip(codecvisor.FrameBatch):
        pass
    assert repr(Clip(b.data, b.pts_seconds, b.duration_seconds)).startswith("Clip:\n  data (shape)")
    assert repr(b).startswith("FrameBatch:\n")

    r = d.get_frames_in_range(10, 20, 5)
    np.testing.assert_array_equal(hwc(r.data), reference[[10, 15]])
    assert len(d.get_frames_in_range(45, 1000)) == 5  # stop past the end is clamped


@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
def test_times_are_ticks_times_the_time_base_rounded_once(tmp_path, seek_mode):
    # 17920 ticks of 1/12800 s: 1.4 s exactly as torchcodec computes it
    # (pts * num / den). pts * (num / den) is 1.4000000000000001, and the
    # stream's own start, 1.4, was refused as before its beginning.
    path = make_video(tmp_path / "late.mp4", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                              "-t", "1", "-c:v", "libx264", "-output_ts_offset", "1.4"])
    d = VideoDecoder(path, seek_mode=seek_mode)
    assert d.metadata.begin_stream_seconds == 1.4 == 17920 * 1 / 12800
    assert d.get_frame_at(0).pts_seconds == 1.4
    assert d.get_frame_played_at(1.4).pts_seconds == 1.4
    assert d.get_frames_played_at([1.4]).pts_seconds.tolist() == [1.4]
    assert d.get_frames_played_in_range(1.4, 1.48).pts_seconds.tolist() == [1.4, 1.44]
    assert d.get_frame_at(10).pts_seconds == 1.8 == (17920 + 10 * 512) / 12800


@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
def test_a_time_a_hair_before_a_frames_finds_it_in_a_coarse_time_base(tmp_path, seek_mode):
    # MJPEG in AVI: a time base of 1/25 s. Frame times as float32 (0.08 is
    # 0.0799999982) round up to the frame they name, as a time a hair before
    # one does, in either mode (exact mode's host check once called that
    # frame a forgery: "which a frame starting after it cannot be").
    path = make_video(tmp_path / "coarse.avi", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate=25",
                                                "-t", "1", "-c:v", "mjpeg", "-f", "avi"])
    d = VideoDecoder(path, seek_mode=seek_mode)
    times = torch.arange(10, dtype=torch.float32) / 25
    assert d.get_frames_played_at(times).pts_seconds.tolist() == pytest.approx([i / 25 for i in range(10)])
    assert d.get_frame_played_at(0.08 - 2e-8).pts_seconds == pytest.approx(0.08)
    assert d.get_frames_played_in_range(0.12 - 2e-8, 0.2).pts_seconds.tolist() == pytest.approx([0.12, 0.16])


def test_time_access_is_half_open(video, reference):
    d = VideoDecoder(video)
    f = d.get_frame_played_at(0.5)
    np.testing.assert_array_equal(hwc(f.data), reference[12])
    f = d.get_frame_played_at(0.519)  # still frame 12 (0.48 + 0.04 > 0.519)
    assert f.pts_seconds == pytest.approx(0.48)
    b = d.get_frames_played_at([0.0, 1.0, 1.99])
    np.testing.assert_array_equal(hwc(b.data), reference[[0, 25, 49]])
    r = d.get_frames_played_in_range(1.0, 1.2)
    np.testing.assert_allclose(r.pts_seconds.numpy(), [1.0, 1.04, 1.08, 1.12, 1.16])
    assert len(d.get_frames_played_in_range(1.0, 1.0)) == 0
    # The messages have the phrases torchcodec's tests match ("Invalid pts
    # in seconds" of one time, "must be less than" and "must be greater
    # than or equal to" of several) and say the range.
    with pytest.raises(IndexError, match=r"^Invalid pts in seconds: 2\.0\. It must be greater than or equal to 0\.0 "
                                         r"and must be less than 2\.0\.$"):
        d.get_frame_played_at(2.0)  # the end is excluded
    with pytest.raises(IndexError, match="Invalid pts in seconds: -0.1. It must be greater than or equal to 0.0"):
        d.get_frame_played_at(-0.1)
    with pytest.raises(IndexError, match="must be less than 2.0") as several:
        d.get_frames_played_at([0.5, 5.0])
    assert isinstance(several.value, RuntimeError)  # what torchcodec raises there
    with pytest.raises(RuntimeError, match="must be greater than or equal to 0.0"):
        d.get_frames_played_at([-1])
    with pytest.raises(ValueError):
        d.get_frames_played_in_range(1.0, 0.5)
    with pytest.raises(ValueError):
        d.get_frames_played_in_range(1.0, 2.5)
    # A range starting at the end is refused, and the message says the start
    # must be before the end; an empty one is empty wherever it is, as
    # torchcodec checks that first (a sliding window's last, say).
    with pytest.raises(ValueError, match=r"greater than or equal to 0\.0 and less than 2\.0\.$"):
        d.get_frames_played_in_range(2.0, 2.5)
    for t in (2.0, 3.0, -1.0):
        assert tuple(d.get_frames_played_in_range(t, t).data.shape) == (0, 3, HEIGHT, WIDTH)
        assert len(d.get_frames_played_in_range(t, t, fps=5)) == 0
    assert len(d.get_frames_played_in_range(math.inf, math.inf, fps=5)) == 0


def test_editing_the_metadata_leaves_the_decoders_checks_and_results(video, reference):
    # decoder.metadata is the user's to edit (torchcodec's sampler tests set
    # its fields to None); the decoder checks times and sizes its results
    # by the stream's values at open, as torchcodec's decoder keeps its own:
    # an end of None there does not send times past the end to the backend.
    d = VideoDecoder(video, dimension_order="NHWC")
    m = d.metadata
    m.begin_stream_seconds_from_content = m.end_stream_seconds_from_content = None
    m.duration_seconds_from_header = m.num_frames_from_header = m.average_fps_from_header = None
    m.width = m.height = None
    assert (m.end_stream_seconds, m.average_fps) == (None, None)
    with pytest.raises(IndexError, match=r"^Invalid pts in seconds: 2\.5\. .* must be less than 2\.0\.$"):
        d.get_frame_played_at(2.5)
    with pytest.raises(IndexError, match="must be less than 2.0"):
        d.get_frames_played_at([0.5, 5.0])
    with pytest.raises(ValueError, match=r"Invalid stop seconds: 2\.5\. It must be less than or equal to 2\.0"):
        d.get_frames_played_in_range(1.0, 2.5)
    r = d.get_frames_played_in_range(1.0, 1.2)
    np.testing.assert_array_equal(r.data.numpy(), reference[25:30])
    assert d.get_all_frames(fps=50).pts_seconds.tolist() == [i * (1 / 50) for i in range(100)]
    assert tuple(d.get_frames_played_in_range(1.0, 1.0).data.shape) == (0, HEIGHT, WIDTH, 3)
    m.begin_stream_seconds, m.end_stream_seconds = -5.0, 100.0  # assigned, as torchcodec's newest releases allow
    with pytest.raises(IndexError, match="must be greater than or equal to 0.0"):
        d.get_frame_played_at(-1.0)
    # A pickled copy keeps the user's edits, and reopens the video without
    # taking them for a changed video.
    e = pickle.loads(pickle.dumps(d))
    assert e.metadata == m and e.metadata.end_stream_seconds == 100.0
    np.testing.assert_array_equal(e.get_frame_played_at(1.0).data.numpy(), reference[25])
    with pytest.raises(IndexError, match="must be less than 2.0"):
        e.get_frame_played_at(2.5)
    # A copy's metadata is its own, as a pickled copy's is.
    c = copy.copy(d)
    assert c.metadata == d.metadata and c.metadata is not d.metadata
    c.metadata.num_frames_from_header = 7
    assert d.metadata.num_frames_from_header != 7


def test_a_range_of_indices_has_a_slices_bounds(video, reference):
    # torchcodec's get_frames_in_range takes slice syntax: negative indices
    # from the end, bounds past it capped, None for the end, and an empty
    # range is an empty batch.
    d = VideoDecoder(video, dimension_order="NHWC")
    for start, stop, step, want in [(-3, 1000, 1, [47, 48, 49]), (-3, None, 1, [47, 48, 49]),
                                    (45, 1000, 2, [45, 47, 49]), (-100, 2, 1, [0, 1]), (0, -47, 1, [0, 1, 2]),
                                    (10, 5, 1, []), (50, 60, 1, []), (7, 7, 1, [])]:
        b = d.get_frames_in_range(start, stop, step)
        assert b.data.shape == (len(want), HEIGHT, WIDTH, 3), (start, stop, step)
        np.testing.assert_array_equal(b.data.numpy(), reference[want])
        assert b.pts_seconds.tolist() == pytest.approx([i / FPS for i in want])


def test_a_time_range_resampled_to_a_frame_rate(video, reference):
    # fps: the frame played at start + i / fps for round((stop - start) * fps)
    # outputs, as torchcodec resamples (torchvision's index rule for a
    # constant-rate video: floor(i * rate / fps)).
    d = VideoDecoder(video, dimension_order="NHWC")
    for fps, start, stop in [(5, 0.0, 1.0), (10, 0.4, 1.3), (24, 0.0, 2.0), (29.97, 0.0, 2.0), (75, 0.0, 0.04),
                             (60, 1.0, 2.0)]:
        b = d.get_frames_played_in_range(start, stop, fps=fps)
        count = math.floor((stop - start) * fps + 0.5)
        want = [min(math.floor((start + i / fps) * FPS + 1e-9), 49) for i in range(count)]
        assert len(b) == len(want), fps
        np.testing.assert_array_equal(b.data.numpy(), reference[want])
        # Each output's time is its place on the grid, start + i * (1 / fps)
        # as torchcodec computes it, and its duration 1 / fps, not the
        # source frame's: a frame repeated (75 fps from 25) is at each of
        # its times.
        assert b.pts_seconds.dtype == b.duration_seconds.dtype == torch.float64
        assert b.pts_seconds.tolist() == [start + i * (1 / fps) for i in range(count)], fps
        assert b.duration_seconds.tolist() == [1 / fps] * count, fps
    assert d.get_all_frames(fps=50).pts_seconds.tolist() == [i * (1 / 50) for i in range(100)]
    # A count that ends in a half rounds up, as C's round(): the frame at
    # the range's start is in it (Python's round() made this batch empty).
    assert d.get_frames_played_in_range(0.0, 0.5, fps=1).pts_seconds.tolist() == [0.0]
    assert len(d.get_frames_played_in_range(0.0, 0.25, fps=10)) == 3
    np.testing.assert_array_equal(d.get_frames_played_in_range(0.0, 1.0, fps=None).data.numpy(), reference[:25])
    np.testing.assert_array_equal(d.get_all_frames().data.numpy(), reference)
    every_other = d.get_all_frames(fps=FPS / 2)
    np.testing.assert_array_equal(every_other.data.numpy(), reference[::2])
    for fps in (0, -10, math.nan, math.inf):
        with pytest.raises(ValueError, match="fps must be positive") as bad:
            d.get_frames_played_in_range(0.0, 1.0, fps=fps)
        assert isinstance(bad.value, RuntimeError)  # what torchcodec raises there
    with pytest.raises(ValueError, match="Invalid stop seconds"):
        d.get_frames_played_in_range(0.0, 3.0, fps=5)
    # More frames than memory could hold are refused before any time is
    # listed (a list of 2e13 times filled the memory first).
    with pytest.raises(MemoryError, match=r"20000000000000 frames \(2.0 s at 10000000000000.0 fps\) of 18432 bytes"):
        d.get_frames_played_in_range(0.0, 2.0, fps=1e13)
    with pytest.raises(MemoryError, match=r": 2e\+300 frames \(2.0 s at 1e\+300 fps\)"):  # a count shown short
        d.get_frames_played_in_range(0.0, 2.0, fps=1e300)
    with pytest.raises(MemoryError, match=r"2.0 s at 1e\+308 fps is more frames than any memory holds"):
        d.get_frames_played_in_range(0.0, 2.0, fps=1e308)
    # A 0-d tensor or array is a rate, as a start or stop is a time.
    assert len(d.get_frames_played_in_range(torch.tensor(0.0), 1.0, fps=torch.tensor(5.0))) == 5
    assert len(d.get_frames_played_in_range(0.0, np.float64(1.0), fps=np.array(5))) == 5
    # Times that are not numbers are torchcodec's ValueError.
    for seconds in (["bad"], [None], torch.zeros(2, 2)):
        with pytest.raises(ValueError, match="Couldn't convert timestamps input to a tensor"):
            d.get_frames_played_at(seconds)
    assert d.get_frames_played_at(torch.tensor([0.0, 1.0])).pts_seconds.tolist() == [0.0, 1.0]
    # A list of 0-d tensors or arrays (list(tensor), as torchcodec's own
    # samplers build them) is a list of times.
    assert d.get_frames_played_at(list(torch.tensor([0.0, 1.0]))).pts_seconds.tolist() == [0.0, 1.0]
    assert d.get_frames_played_at([np.array(1.0), np.float32(0.0)]).pts_seconds.tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="Couldn't convert timestamps"):
        d.get_frames_played_at([torch.tensor(True)])


def test_range_misuse_raises_torchcodecs_errors(video):
    d = VideoDecoder(video)
    # IndexErrors whose messages have the phrases torchcodec's tests match.
    for call in (lambda: d.get_frame_at(50), lambda: d.get_frames_at([0, 50]), lambda: d[50]):
        with pytest.raises(IndexError, match="Invalid frame index=50 for stream 0: it must be less than 50"):
            call()
    for call in (lambda: d.get_frame_at(-51), lambda: d.get_frames_at([-51]), lambda: d[-51]):
        with pytest.raises(IndexError, match="negative indices must have an absolute value less than the number "
                                             "of frames, 50"):
            call()
    # A step of 0 is torchcodec's ValueError (slice's), a negative one its
    # RuntimeError; both are IndexErrors as they were here before.
    with pytest.raises(ValueError, match=r"Step \(0\) must be greater than 0") as zero:
        d.get_frames_in_range(0, 10, 0)
    with pytest.raises(RuntimeError, match=r"Step \(-1\) must be greater than 0") as negative:
        d.get_frames_in_range(0, 10, -1)
    assert isinstance(zero.value, IndexError) and isinstance(negative.value, IndexError)
    # A NaN bound is named as such (not "start must be <= stop (nan)").
    for start, stop in [(0.0, math.nan), (math.nan, 1.0)]:
        with pytest.raises(ValueError, match="It must be a number"):
            d.get_frames_played_in_range(start, stop)
    with pytest.raises(IndexError):
        d.get_frame_played_at(math.nan)
    # One time is a number (or a 0-d tensor): not a bool, a string or
    # several times, each a TypeError that says so.
    for seconds in (torch.tensor(1.0), torch.tensor([1.0]), np.array([1.0]), decimal.Decimal("1.0")):
        assert d.get_frame_played_at(seconds).pts_seconds == 1.0, seconds
    for seconds in (True, "1.0", torch.tensor([1.0, 2.0])):
        with pytest.raises(TypeError, match="a time in seconds must be a number"):
            d.get_frame_played_at(seconds)
    with pytest.raises(TypeError, match="a time in seconds must be a number"):
        d.get_frames_played_in_range("0", 1.0)
    # Indices are one dimension of integers, however they come.
    with pytest.raises(ValueError, match=r"frame indices must be 1-D, not an array of shape \(1, 2\)"):
        d.get_frames_at(np.array([[1, 2]]))
    with pytest.raises(TypeError, match="frame indices must be a sequence of integers, not str"):
        d.get_frames_at("12")


def test_a_closed_decoder_answers_nothing(video):
    # Every call of a closed decoder is the same ValueError, also one that
    # asks for no frame; a copy or a pickle of it is closed too.
    d = VideoDecoder(video)
    d.close()
    for call in (lambda: d.get_frames_in_range(0, 0), lambda: d.get_frames_in_range(5, 1), lambda: d[5:1],
                 lambda: d.get_frames_at([]), lambda: d.get_frames_played_in_range(1.0, 1.0), lambda: d[0],
                 lambda: d.get_frames_played_at([]), lambda: pickle.loads(pickle.dumps(d))[0],
                 lambda: copy.copy(d).get_frame_at(0)):
        with pytest.raises(ValueError, match="the decoder is closed"):
            call()
    assert len(pickle.loads(pickle.dumps(d))) == 50


def test_a_frame_index_is_an_integer_of_any_kind(video, reference):
    d = VideoDecoder(video, dimension_order="NHWC")
    # A float is not frame 1 (int() truncated it): torchcodec's ops take ints.
    # It is a TypeError, and the RuntimeError torchcodec raises.
    for call in (lambda: d.get_frame_at(1.5), lambda: d.get_frames_at([0, 2.0]),
                 lambda: d.get_frames_in_range(0, 4.5), lambda: d.get_frames_at(np.array([1.5]))):
        with pytest.raises(TypeError, match="A frame index must be an integer.*Long but found Float") as error:
            call()
        assert isinstance(error.value, RuntimeError)
    # A tensor of indices is converted to int64 first, as torchcodec does: a
    # float tensor (torch.linspace's) truncates toward zero.
    np.testing.assert_array_equal(d.get_frames_at(torch.tensor([1.5, 3.99])).data.numpy(), reference[[1, 3]])
    np.testing.assert_array_equal(d.get_frames_at(torch.linspace(0, 49, 4)).data.numpy(), reference[[0, 16, 32, 49]])
    with pytest.raises(ValueError, match="must be finite"):
        d.get_frames_at(torch.tensor([0.0, math.nan]))
    with pytest.raises(IndexError, match="out of bounds of any stream"):
        d.get_frames_at(torch.tensor([1e20]))
    with pytest.raises(ValueError, match="must be 1-D"):
        d.get_frames_at(torch.zeros(2, 2, dtype=torch.int64))
    # Integers of numpy and torch are indices.
    np.testing.assert_array_equal(d.get_frame_at(np.int64(3)).data.numpy(), reference[3])
    np.testing.assert_array_equal(d.get_frame_at(torch.tensor(4)).data.numpy(), reference[4])
    np.testing.assert_array_equal(d.get_frames_at(np.array([5, 1])).data.numpy(), reference[[5, 1]])
    np.testing.assert_array_equal(d.get_frames_at(torch.tensor([6, 2])).data.numpy(), reference[[6, 2]])
    np.testing.assert_array_equal(d.get_frames_in_range(np.int32(1), torch.tensor(3)).data.numpy(), reference[1:3])
    # Past what 64 bits hold: out of range (IndexError), not pybind's TypeError.
    for call in (lambda: d.get_frames_at([2 ** 63]), lambda: d.get_frame_at(-2 ** 70)):
        with pytest.raises(IndexError, match="out of bounds"):
            call()
    # A step longer than the stream takes one frame, as any longer step does.
    np.testing.assert_array_equal(d.get_frames_in_range(3, 10, 2 ** 63).data.numpy(), reference[[3]])
    # A start past what 64 bits hold is past the end, as a stop there is.
    assert len(d.get_frames_in_range(2 ** 63, None)) == 0 and len(d[2 ** 63:]) == 0
    np.testing.assert_array_equal(d[2::2 ** 64].numpy(), reference[[2]])
    np.testing.assert_array_equal(d[-1::-2 ** 64].numpy(), reference[[49]])



def test_pickles_as_source_and_options(video, reference):
    for source in (video, pathlib.Path(video).read_bytes()):
        d = VideoDecoder(source, dimension_order="NHWC", seek_mode="approximate")
        e = pickle.loads(pickle.dumps(d))
        assert e.metadata == d.metadata
        np.testing.assert_array_equal(e[4].numpy(), reference[4])


def test_without_torch_frames_are_numpy_arrays(video, reference):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np\n"
        "from codecvisor.decoders import VideoDecoder\n"
        f"d = VideoDecoder({video!r}, dimension_order='NHWC')\n"
        "b = d.get_frames_at([0, 7])\n"
        "assert isinstance(b.data, np.ndarray) and b.data.dtype == np.uint8, type(b.data)\n"
        "sys.stdout.buffer.write(b.data.tobytes())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    got = np.frombuffer(run.stdout, np.uint8).reshape(2, HEIGHT, WIDTH, 3)
    np.testing.assert_array_equal(got, reference[[0, 7]])
