"""codecvisor.decoders.VideoDecoder against torchcodec's documented behaviour,
with every frame compared byte for byte with the ffmpeg CLI."""

import dataclasses
import errno
import math
import os
import pathlib
import pickle
import struct
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor.decoders import VideoDecoder, VideoStreamMetadata

from conftest import (FFMPEG, FPS, HEIGHT, SECONDS, WIDTH, backend_restarts, ffmpeg_frames, hwc, make_video,
                      synthetic_clip)


def test_metadata_has_torchcodecs_fields(video):
    m = VideoDecoder(video).metadata
    assert (m.width, m.height, m.codec, m.stream_index) == (WIDTH, HEIGHT, "h264", 0)
    assert m.num_frames_from_content == 50 and m.num_frames == 50
    assert m.num_frames_from_header == 50
    assert m.begin_stream_seconds_from_content == 0.0 and m.end_stream_seconds_from_content == pytest.approx(2.0)
    assert m.duration_seconds == pytest.approx(2.0) and m.average_fps == pytest.approx(FPS)
    assert m.average_fps_from_header == pytest.approx(FPS)
    # The header's times too, in exact mode as in torchcodec.
    assert m.duration_seconds_from_header == pytest.approx(2.0) and m.begin_stream_seconds_from_header == 0.0
    assert m.bit_rate > 0 and m.rotation is None  # no display matrix, as torchcodec says it
    assert m.pixel_aspect_ratio == Fraction(1, 1)
    # Colours the encoder left unspecified are None, as torchcodec has them.
    assert (m.color_space, m.color_primaries, m.color_transfer_characteristic) == (None, None, None)
    assert "num_frames: 50" in repr(m)
    # The computed values are fields, as in torchcodec's newest releases:
    # asdict() has them (a log of the metadata), and a pickled decoder's
    # metadata computes them again.
    fields = dataclasses.asdict(m)
    assert (fields["num_frames"], fields["duration_seconds"], fields["average_fps"]) == (
        50, pytest.approx(2.0), pytest.approx(FPS))
    assert fields["begin_stream_seconds"] == 0.0 and fields["end_stream_seconds"] == pytest.approx(2.0)
    assert pickle.loads(pickle.dumps(VideoDecoder(video))).metadata == m


def test_metadata_names_the_colours_the_stream_is_tagged_with(tmp_path):
    path = make_video(tmp_path / "tagged.mp4",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", "0.2", "-c:v",
                       "libx264", "-pix_fmt", "yuv420p", "-color_primaries", "bt470bg", "-color_trc", "smpte170m",
                       "-colorspace", "bt470bg", "-color_range", "tv"])
    m = VideoDecoder(path).metadata
    assert (m.color_primaries, m.color_transfer_characteristic, m.color_space, m.color_range) == (
        "bt470bg", "smpte170m", "bt470bg", "tv")
    assert "color_transfer_characteristic: smpte170m" in repr(m)


def test_metadata_has_the_pixel_aspect_ratio_of_the_frames_as_returned(tmp_path):
    # Anamorphic video (DV's 8:9 pixels, here 4:3): the shape of a pixel as
    # the file says; a quarter turn of the frames inverts it.
    wide = make_video(tmp_path / "wide.mp4", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t",
                                              "0.2", "-c:v", "libx264", "-vf", "setsar=4/3"])
    turned = make_video(tmp_path / "turned.mp4", ["-i", wide, "-c", "copy", "-metadata:s:v:0", "rotate=90"])
    assert VideoDecoder(wide).metadata.pixel_aspect_ratio == Fraction(4, 3)
    assert VideoDecoder(wide, seek_mode="approximate").metadata.pixel_aspect_ratio == Fraction(4, 3)
    assert VideoDecoder(turned).metadata.pixel_aspect_ratio == Fraction(3, 4)
    assert "pixel_aspect_ratio: 4/3" in repr(VideoDecoder(wide).metadata)


def test_decoders_and_metadata_pickled_by_an_earlier_version_load(tmp_path):
    # Pickles made before the colour and pixel shape fields, and before the
    # computed values were fields: they load, and a decoder reopens its
    # (colour-tagged) video without calling it changed.
    path = make_video(tmp_path / "tagged.mp4",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", "0.2", "-c:v",
                       "libx264", "-pix_fmt", "yuv420p", "-color_primaries", "bt709", "-color_trc", "bt709",
                       "-colorspace", "bt709"])
    d = VideoDecoder(path)
    added = ("color_primaries", "color_transfer_characteristic", "pixel_aspect_ratio")
    computed = ("duration_seconds", "begin_stream_seconds", "end_stream_seconds", "num_frames", "average_fps")
    state = d.__getstate__()
    state["metadata"] = {k: v for k, v in state["metadata"].items() if k not in added + computed}
    old = VideoDecoder.__new__(VideoDecoder)
    old.__setstate__(state)
    assert old.metadata == d.metadata and len(old) == 5
    assert torch.equal(old[2], d[2])
    m = VideoStreamMetadata.__new__(VideoStreamMetadata)
    m.__setstate__({k: v for k, v in vars(d.metadata).items() if k not in added + computed})
    assert (m.num_frames, m.duration_seconds, m.color_primaries) == (5, d.metadata.duration_seconds, None)
    assert pickle.loads(pickle.dumps(d.metadata)) == d.metadata


def test_frame_reprs_print_torchcodecs_shapes(video):
    d = VideoDecoder(video)
    assert "data (shape): torch.Size([3, 64, 96])" in repr(d.get_frame_at(0))
    assert "data (shape): torch.Size([2, 3, 64, 96])" in repr(d.get_frames_at([0, 1]))


def test_approximate_mode_takes_the_header(video):
    m = VideoDecoder(video, seek_mode="approximate").metadata
    assert m.num_frames_from_content is None and m.begin_stream_seconds_from_content is None
    assert m.num_frames == 50 and m.duration_seconds_from_header == pytest.approx(2.0)


@pytest.fixture(scope="module")
def matroska(tmp_path_factory):
    """The 50 frames of the session's clip in Matroska, whose header has a
    duration and a frame rate but no frame count."""
    return make_video(tmp_path_factory.mktemp("mkv") / "clip.mkv",
                      ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", str(SECONDS),
                       "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p"])


@pytest.mark.parametrize("codec", ["libx264", "mpeg4"])
def test_approximate_mode_times_start_where_an_avis_first_frame_is_shown(tmp_path, codec):
    # AVI with B-frames: its header starts at 0, but the first frame is
    # shown a frame or two later, where approximate mode's frames are named
    # from. The stream's times are those frames' times, as exact mode has
    # them: its last frames are found by time, and a resampled read gives
    # every frame once.
    path = make_video(tmp_path / f"{codec}.avi", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                 "-t", "2", "-c:v", codec, "-bf", "2"])
    exact, approx = VideoDecoder(path), VideoDecoder(path, seek_mode="approximate")
    assert approx.metadata.begin_stream_seconds_from_header == 0
    begin, end = exact.metadata.begin_stream_seconds, exact.metadata.end_stream_seconds
    assert begin > 0
    assert (approx.metadata.begin_stream_seconds, approx.metadata.end_stream_seconds) == pytest.approx((begin, end))
    assert "_begin_nominal" not in repr(approx.metadata)
    want = exact.get_frames_in_range(0, len(exact))
    for batch in (approx.get_all_frames(fps=FPS), approx.get_frames_played_in_range(begin, end)):
        assert torch.equal(batch.data, want.data)
    assert approx.get_frame_played_at(end - 0.001).pts_seconds == pytest.approx(want.pts_seconds[-1].item())


def test_approximate_modes_first_frame_is_the_first_with_a_time(tmp_path):
    # Matroska cannot time blocks before its zero: the first 13 frames of
    # this file come untimed, and approximate mode's timeline starts at the
    # first timed one. Frame 0 is that frame on a fresh decoder (read from
    # the first packet) as after a seek, not the first untimed one under
    # its time.
    path = make_video(tmp_path / "before_zero.mkv", ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                     "-t", "1.2", "-c:v", "libx264", "-bf", "2", "-output_ts_offset",
                                                     "-0.5", "-avoid_negative_ts", "disabled"])
    exact = VideoDecoder(path, dimension_order="NHWC")
    first_timed = exact.get_frame_played_at(0.02)
    assert first_timed.pts_seconds == pytest.approx(0.02)
    for ask in (lambda d: d.get_frame_at(0), lambda d: d.get_frames_in_range(0, 1)[0], lambda d: d.get_frames_at([5, 0])[1]):
        d = VideoDecoder(path, dimension_order="NHWC", seek_mode="approximate")
        frame = ask(d)
        assert float(frame.pts_seconds) == pytest.approx(0.02)
        assert torch.equal(frame.data, first_timed.data)
    d = VideoDecoder(path, dimension_order="NHWC", seek_mode="approximate")
    assert torch.equal(d.get_frames_in_range(0, 4).data, exact.get_frames_played_in_range(0.02, 0.18).data)


def test_approximate_mode_names_a_splice_in_seconds(tmp_path):
    # Two recordings with B-frames joined byte for byte (an MPEG-TS capture
    # restarted): the header times the first; past its end the times go back.
    # Approximate mode cannot name frames across that and says so, in
    # seconds (it said "between pts 241200 and 133200"); exact mode reads it.
    parts = [make_video(tmp_path / f"{n}.ts", ["-f", "lavfi", "-i", f"{src}=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                "-t", "1.2", "-c:v", "libx264", "-g", "10", "-bf", "2"])
             for n, src in (("a", "testsrc2"), ("b", "testsrc"))]
    joined = tmp_path / "joined.ts"
    joined.write_bytes(b"".join(pathlib.Path(p).read_bytes() for p in parts))
    d = VideoDecoder(str(joined), seek_mode="approximate")
    begin, end = d.metadata.begin_stream_seconds, d.metadata.end_stream_seconds
    assert len(d.get_frames_in_range(0, len(d))) == 30
    with pytest.raises(codecvisor.VideoError, match=r"the stream's timestamps go back from 2\.68 s to 1\.48 s "
                                                      r"\(a splice\).*exact mode identifies frames"):
        d.get_frames_played_in_range(begin, end)
    assert len(VideoDecoder(str(joined)).get_frames_in_range(0, 60)) == 60


def test_approximate_mode_estimates_a_count_the_header_lacks(matroska):
    # As torchcodec: duration x frame rate; and the estimate is a count the
    # backend serves, every frame of it the exact mode's.
    d = VideoDecoder(matroska, seek_mode="approximate", dimension_order="NHWC")
    m = d.metadata
    assert m.num_frames_from_header is None and m.num_frames_from_content is None
    assert m.duration_seconds_from_header == pytest.approx(2.0) and m.average_fps_from_header == pytest.approx(FPS)
    # No stream bit rate in Matroska: 0.0, as torchcodec reports it (the
    # stream's codec parameters' value), so arithmetic on it still works.
    assert m.bit_rate == 0.0
    assert m.num_frames == 50 and len(d) == 50 and "num_frames: 50" in repr(m)
    exact = VideoDecoder(matroska, dimension_order="NHWC")
    np.testing.assert_array_equal(d.get_frames_in_range(0, len(d)).data.numpy(),
                                  exact.get_frames_in_range(0, 50).data.numpy())
    np.testing.assert_array_equal(d[-1].numpy(), exact[49].numpy())
    with pytest.raises(IndexError):
        d[50]



def test_an_approximate_time_range_in_a_gap_of_a_variable_rate_video(tmp_path):
    # 50 frames, 25 a second, but frame 20 on comes 1.04 s late: 0.0 ...
    # 0.76, then 1.84 ... 3.00. The header's average rate (about 16.4 a
    # second) puts the index played at 0.9 s inside the gap, where an
    # approximate seek by index would find the frame at 1.84 s.
    gap = make_video(tmp_path / "gap.mp4",
                     ["-f", "lavfi", "-t", str(SECONDS), "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                      "-vf", "setpts='if(lt(N,20),N,N+26)/25/TB'", "-fps_mode", "vfr", "-c:v", "libx264"])
    # Exact mode knows the frame at 0.76 s plays until 1.84 s.
    exact = VideoDecoder(gap)
    assert len(exact) == 50
    assert exact.get_frames_played_in_range(0.9, 1.5).pts_seconds.tolist() == [pytest.approx(0.76)]
    d = VideoDecoder(gap, seek_mode="approximate")
    restarts = backend_restarts("cpu")
    # A range starts at the frame playing at its start, found by time, and
    # reads on from it until a frame starts at or after its stop.
    for start, stop in [(0.9, 1.5), (0.9, 1.9), (0.3, 0.5), (1.86, 2.0), (0.0, 0.2), (2.9, d.metadata.end_stream_seconds)]:
        got = d.get_frames_played_in_range(start, stop)
        want = exact.get_frames_played_in_range(start, stop)
        assert got.pts_seconds.tolist() == want.pts_seconds.tolist(), (start, stop)
        assert torch.equal(got.data, want.data), (start, stop)
    assert d.get_frames_played_in_range(0.9, 1.9).pts_seconds.tolist() == pytest.approx([0.76, 1.84, 1.88])
    assert backend_restarts("cpu") == restarts


@pytest.mark.parametrize("container", ["mp4", "mkv"])
def test_an_approximate_time_finds_the_frame_playing_then_in_a_variable_rate_video(tmp_path, container):
    # 40 frames, 25 a second, with a 0.6 s pause after every tenth: the
    # header's average rate puts most times' nominal index on another frame.
    # Matroska's frame durations do not cover the pauses; MP4's do.
    pausing = make_video(tmp_path / f"pausing.{container}",
                         ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate=25", "-frames:v", "40",
                          "-vf", "setpts='N+floor(N/10)*15'", "-fps_mode", "passthrough", "-c:v", "libx264",
                          "-bf", "2", "-g", "30"])
    exact = VideoDecoder(pausing, dimension_order="NHWC")
    d = VideoDecoder(pausing, seek_mode="approximate", dimension_order="NHWC")
    m = exact.metadata
    times = [m.begin_stream_seconds + k / 20 for k in range(int((m.end_stream_seconds - m.begin_stream_seconds) * 20))]
    restarts = backend_restarts("cpu")
    for t in times[::-1] + times:  # seeks back, then decoding on
        got, want = d.get_frame_played_at(t), exact.get_frame_played_at(t)
        assert got.pts_seconds == want.pts_seconds, t
        assert torch.equal(got.data, want.data), t
    batch, want = d.get_frames_played_at(times), exact.get_frames_played_at(times)
    assert batch.pts_seconds.tolist() == want.pts_seconds.tolist()
    assert torch.equal(batch.data, want.data)
    assert backend_restarts("cpu") == restarts


@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
def test_the_streams_begin_plays_its_first_frame_when_the_container_has_no_presentation_times(tmp_path, seek_mode):
    # MPEG-4 with B-frames in AVI: packets carry decode times only, and the
    # decoder shows its first frame a frame after the header's start (0).
    # Whatever begin the metadata gives (the header's in approximate mode,
    # the first frame's in exact mode), the frame played there is frame 0.
    avi = make_video(tmp_path / "bframes.avi", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                "-frames:v", "30", "-c:v", "mpeg4", "-bf", "2", "-g", "10"])
    d = VideoDecoder(avi, seek_mode=seek_mode, dimension_order="NHWC")
    m = d.metadata
    first = d[0]
    at_begin = d.get_frame_played_at(m.begin_stream_seconds)
    assert torch.equal(at_begin.data, first)
    in_range = d.get_frames_played_in_range(m.begin_stream_seconds, m.begin_stream_seconds + 0.1)
    assert torch.equal(in_range.data[0], first)
    assert in_range.pts_seconds.tolist() == d.get_frames_in_range(0, len(in_range)).pts_seconds.tolist()
    with pytest.raises(IndexError):
        d.get_frame_played_at(m.begin_stream_seconds - 0.001)


def test_recordings_concatenated_byte_for_byte_read_in_file_order(tmp_path):
    # `cat a.ts b.ts`: the second recording's times start again at the
    # first's. Every frame is the CLI's of its place in the file, in order
    # and at random, and times increase with the index.
    parts = [make_video(tmp_path / f"{name}.ts", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                  "-vf", vf, "-t", "1", "-c:v", "libx264", "-bf", "2", "-g", "10"])
             for name, vf in (("a", "null"), ("b", "negate"))]
    joined = tmp_path / "joined.ts"
    joined.write_bytes(b"".join(open(p, "rb").read() for p in parts))
    want = ffmpeg_frames(str(joined))
    d = VideoDecoder(str(joined), dimension_order="NHWC")
    assert len(d) == len(want) == 50
    every = d[:]
    assert np.array_equal(every.numpy(), want)
    pts = d.get_frames_in_range(0, len(d)).pts_seconds.tolist()
    assert pts == sorted(pts) and len(set(pts)) == len(pts)
    for i in np.random.default_rng(3).permutation(len(d)):
        assert np.array_equal(d[int(i)].numpy(), want[i]), i


@pytest.mark.parametrize("threads", [1, 0])
@pytest.mark.parametrize("codec", ["libx264", "libx265"])
def test_a_recording_cut_inside_a_gop_is_the_clis_frames(tmp_path, codec, threads):
    # A program stream cut 12,000 bytes in (a capture that starts mid-GOP):
    # the pictures whose references are cut off make no frame, and those
    # HEVC's decoder does make before the first key frame come from a
    # decoder opened afresh. Through the package both ways the backend
    # delivers: native frames decoded into its frame pool (1 thread), and
    # RGB with frame threads (0: FFmpeg's count).
    extra = (["-x265-params", "log-level=error:frame-threads=1:pools=none"] if codec == "libx265"
             else ["-threads", "1"])
    whole = make_video(tmp_path / "whole.mpg", ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                "-t", "4", "-c:v", codec, *extra, "-bf", "3", "-g", "25", "-f", "vob"])
    cut = tmp_path / "cut.mpg"
    cut.write_bytes(open(whole, "rb").read()[12000:])
    want = ffmpeg_frames(str(cut))
    d = VideoDecoder(str(cut), dimension_order="NHWC", num_ffmpeg_threads=threads)
    assert 0 < len(d) == len(want) < 100
    assert np.array_equal(d[:].numpy(), want)
    for i in np.random.default_rng(5).permutation(len(d)):
        assert np.array_equal(d[int(i)].numpy(), want[i]), i


@pytest.mark.parametrize("name, matrix", [
    ("hflip", (-0x10000, 0, 0, 0, 0x10000, 0, WIDTH << 16, 0, 0x40000000)),
    ("vflip", (0x10000, 0, 0, 0, -0x10000, 0, 0, HEIGHT << 16, 0x40000000)),
    ("transpose", (0, 0x10000, 0, 0x10000, 0, 0, 0, 0, 0x40000000)),
])
def test_a_mirroring_display_matrix_gives_the_clis_frames(tmp_path, video, name, matrix):
    # A recording mirrored by its display matrix (a front camera's), written
    # into the MP4 track header (FFmpeg 5.1 cannot write one): the frames are
    # the CLI's, mirrored (and for a transpose, with the sides swapped).
    data = bytearray(open(video, "rb").read())
    at = data.find(b"tkhd") + 4 + 4 + 20 + 8 + 8  # a version 0 track header's matrix
    data[at:at + 36] = struct.pack(">9i", *matrix)
    mirrored = tmp_path / f"{name}.mp4"
    mirrored.write_bytes(bytes(data))
    raw = subprocess.run(FFMPEG[:-1] + ["-i", str(mirrored), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    swap = name == "transpose"
    want = np.frombuffer(raw, np.uint8).reshape(-1, WIDTH if swap else HEIGHT, HEIGHT if swap else WIDTH, 3)
    d = VideoDecoder(str(mirrored), dimension_order="NHWC")
    assert (d.metadata.width, d.metadata.height) == ((HEIGHT, WIDTH) if swap else (WIDTH, HEIGHT))
    assert np.array_equal(d[:].numpy(), want)
    if not swap:
        assert not np.array_equal(want, ffmpeg_frames(video)), "the CLI did not mirror the frames"


def test_a_frame_the_count_promises_but_the_file_lacks_is_a_missing_frame(tmp_path):
    # Approximate mode counts the 100 frames the header of an MP4 cut in half
    # lists: a frame past the cut is a MissingFrameError (an IndexError and
    # a VideoError); an index past the count is a plain IndexError.
    whole = make_video(tmp_path / "whole.mp4", ["-f", "lavfi", "-i", f"testsrc=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                "-frames:v", "100", "-c:v", "libx264", "-g", "10",
                                                "-movflags", "+faststart"])
    data = open(whole, "rb").read()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[:len(data) // 2])
    d = VideoDecoder(str(cut), seek_mode="approximate")
    assert len(d) == 100
    for ask in (lambda: d[95], lambda: d.get_frames_at([1, 95]), lambda: d.get_frames_in_range(90, 100),
                lambda: d.get_frame_played_at(3.9)):
        with pytest.raises(codecvisor.MissingFrameError) as raised:
            ask()
        assert isinstance(raised.value, IndexError) and isinstance(raised.value, codecvisor.VideoError)
    assert d[0].shape == (3, HEIGHT, WIDTH)
    for past in (lambda: d.get_frames_at([100]), lambda: d[100]):
        with pytest.raises(IndexError) as raised:
            past()
        assert not isinstance(raised.value, codecvisor.MissingFrameError)


def metadata(**fields):
    """Metadata with `fields` and every other field None."""
    every = {f.name: None for f in dataclasses.fields(VideoStreamMetadata) if f.init}
    every.update(stream_index=0, **fields)
    return VideoStreamMetadata(**every)


def test_num_frames_estimate_rounds_half_away_from_zero():
    # 2.5 frames: 3, as C's round (Python's round() would give 2).
    assert metadata(average_fps_from_header=2.0, duration_seconds_from_header=1.25).num_frames == 3
    assert metadata(average_fps_from_header=25.0, duration_seconds_from_header=2.0).num_frames == 50
    assert metadata(average_fps_from_header=30.0, duration_seconds_from_header=0.01).num_frames == 0  # 0.3
    assert metadata(average_fps_from_header=25.0, duration_seconds_from_header=None).num_frames is None
    # Capped as the backend caps a stream's frames.
    assert metadata(average_fps_from_header=1e6, duration_seconds_from_header=1e6).num_frames == 1 << 24
    assert metadata(num_frames_from_header=7, average_fps_from_header=25.0,
                    duration_seconds_from_header=2.0).num_frames == 7


def test_duration_falls_back_as_torchcodecs():
    assert metadata(begin_stream_seconds_from_content=0.5, end_stream_seconds_from_content=2.5,
                    duration_seconds_from_header=9.0).duration_seconds == 2.0
    assert metadata(duration_seconds_from_header=9.0, num_frames_from_header=50,
                    average_fps_from_header=25.0).duration_seconds == 9.0
    assert metadata(num_frames_from_header=50, average_fps_from_header=25.0).duration_seconds == 2.0
    assert metadata(num_frames_from_header=50).duration_seconds is None


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
    with pytest.raises(ValueError, match="leading dimensions"):
        codecvisor.FrameBatch(b.data, b.pts_seconds[:2], b.duration_seconds)

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
    with pytest.raises(IndexError):
        d.get_frame_played_at(2.0)  # the end is excluded
    with pytest.raises(IndexError):
        d.get_frame_played_at(-0.1)
    with pytest.raises(IndexError) as several:
        d.get_frames_played_at([0.5, 5.0])
    assert isinstance(several.value, RuntimeError)  # what torchcodec raises there
    with pytest.raises(ValueError):
        d.get_frames_played_in_range(1.0, 0.5)
    with pytest.raises(ValueError):
        d.get_frames_played_in_range(1.0, 2.5)
    # A range starting at the end is refused, empty or not, and the message
    # says the start must be before the end.
    with pytest.raises(ValueError, match=r"greater than or equal to 0\.0 and less than 2\.0\.$"):
        d.get_frames_played_in_range(2.0, 2.0)


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
        assert b.pts_seconds.tolist() == pytest.approx([i / FPS for i in want])
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
    # Times that are not numbers are torchcodec's ValueError.
    for seconds in (["bad"], [None], torch.zeros(2, 2)):
        with pytest.raises(ValueError, match="Couldn't convert timestamps"):
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


def test_a_frame_index_is_an_integer_of_any_kind(video, reference):
    d = VideoDecoder(video, dimension_order="NHWC")
    # A float is not frame 1 (int() truncated it): torchcodec's ops take ints.
    # It is a TypeError, and the RuntimeError torchcodec raises.
    for call in (lambda: d.get_frame_at(1.5), lambda: d.get_frames_at([0, 2.0]),
                 lambda: d.get_frames_in_range(0, 4.5), lambda: d.get_frames_at(np.array([1.5]))):
        with pytest.raises(TypeError, match="A frame index must be an integer") as error:
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


def test_a_missing_stream_is_a_value_error_not_a_device_error(video, tmp_path):
    tone = make_video(tmp_path / "tone.m4a", ["-f", "lavfi", "-i", "sine=duration=1"])
    with pytest.raises(codecvisor.NoSuchStreamError) as e:
        VideoDecoder(tone)
    assert isinstance(e.value, ValueError) and not isinstance(e.value, codecvisor.NoSuchDeviceError)
    assert "has no video stream" in str(e.value), str(e.value)
    with pytest.raises(codecvisor.NoSuchStreamError) as e:
        VideoDecoder(video, stream_index=3)
    assert "has no stream 3" in str(e.value), str(e.value)
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
    from codecvisor.decoders import _backend_started
    backends = [{"devices": ["cpu"], "state": state}, {"devices": ["acme"], "state": "failed"}]
    assert _backend_started(backends, device) is started

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


@pytest.mark.parametrize("pix_fmt, codec", [("yuv420p10le", "libx265"), ("yuv420p", "libvpx-vp9")])
def test_a_rotated_video_is_the_clis_autorotated_frames(tmp_path, pix_fmt, codec):
    # A phone's portrait video: a display matrix of a quarter turn, here on
    # 10-bit 4:2:0 (HDR HEVC), whose chroma swscale interpolates, and on an
    # odd size. `ffmpeg -i F -pix_fmt rgb24` rotates the decoder's pixels,
    # then converts.
    coded = make_video(tmp_path / "coded.mkv", ["-f", "lavfi", "-i", "testsrc2=size=98x54:rate=10,crop=97:53:0:0",
                                                "-frames:v", "6",
                                                "-c:v", codec, "-pix_fmt", pix_fmt])
    rotated = make_video(tmp_path / "rotated.mp4", ["-i", coded, "-c", "copy", "-metadata:s:v:0", "rotate=90"])
    raw = subprocess.run(FFMPEG[:-1] + ["-i", rotated, "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         check=True, capture_output=True).stdout
    coded_size = [int(v) for v in subprocess.run(
        ["/usr/bin/ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of",
         "csv=p=0", coded], check=True, capture_output=True, text=True).stdout.split(",")]
    width, height = coded_size[1], coded_size[0]  # turned a quarter
    want = np.frombuffer(raw, np.uint8).reshape(6, height, width, 3)
    for threads in (1, 0):
        d = VideoDecoder(rotated, dimension_order="NHWC", num_ffmpeg_threads=threads)
        assert (d.metadata.width, d.metadata.height, d.metadata.rotation) == (width, height, 90)
        assert np.array_equal(d[:].data.numpy(), want), threads
        nchw = VideoDecoder(rotated, num_ffmpeg_threads=threads)[:].data
        assert np.array_equal(nchw.permute(0, 2, 3, 1).numpy(), want)


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
    # A quarantine lasts as long as the process's host; backends.reset is
    # the way out that its message names.
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
    good = VideoDecoder(synthetic_clip(tmp_path / "good.syn", "frames=5 width=8 height=4 fps=10"), device="faulty",
                        open_timeout=0.5)
    assert pickle.loads(pickle.dumps(good))[1].shape == (3, 4, 8)


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
