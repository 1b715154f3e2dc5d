"""What codecvisor.decoders.VideoDecoder reads of a file against torchcodec
and the ffmpeg tools: metadata, approximate mode's estimates, variable
rates, splices, cut recordings and display matrices."""

import copy
import dataclasses
import functools
import inspect
import pathlib
import pickle
import random
import struct
import subprocess
from fractions import Fraction

import numpy as np
import pytest
import torch

import codecvisor
from codecvisor.decoders import VideoDecoder, VideoStreamMetadata
from codecvisor.samplers import clips_at_random_timestamps, clips_at_regular_timestamps

from conftest import FFMPEG, FPS, HEIGHT, SECONDS, WIDTH, backend_restarts, ffmpeg_frames, make_video


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
def test_frames_read_after_a_request_through_a_change_of_range_are_the_clis(tmp_path, threads):
    # A capture whose second part is full range (x264's yuvj420p) after a
    # part that gives none: a request that decodes through the change
    # (frames 19 and 20) goes on in RGB from a new session, and frames of
    # the first part read afterwards are still the CLI's, not converted
    # with the second part's range.
    parts = [make_video(tmp_path / f"{name}.ts", ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}",
                                                  "-frames:v", "20", "-c:v", "libx264", "-pix_fmt", pix_fmt]
                        + offset)
             for name, pix_fmt, offset in (("a", "yuv420p", []), ("b", "yuvj420p", ["-output_ts_offset", "0.88"]))]
    joined = tmp_path / "joined.ts"
    joined.write_bytes(b"".join(open(p, "rb").read() for p in parts))
    want = ffmpeg_frames(str(joined))
    d = VideoDecoder(str(joined), dimension_order="NHWC", num_ffmpeg_threads=threads)
    assert len(d) == len(want) == 40
    assert np.array_equal(d.get_frames_at([19, 20]).data.numpy(), want[19:21])
    for i in (0, 5, 30, 3):
        assert np.array_equal(d[i].numpy(), want[i]), i


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


def test_metadata_is_made_with_torchcodecs_arguments():
    # torchcodec's test_metadata.py builds one with these alone.
    m = VideoStreamMetadata(duration_seconds_from_header=4, bit_rate=123, num_frames_from_header=5,
                            num_frames_from_content=10, begin_stream_seconds_from_header=0,
                            begin_stream_seconds_from_content=0, end_stream_seconds_from_content=4, codec="whatever",
                            width=123, height=321, average_fps_from_header=30, pixel_aspect_ratio=Fraction(1, 1),
                            stream_index=0)
    assert (m.rotation, m.pixel_format, m.color_space, m.color_range) == (None, None, None, None)
    assert (m.num_frames, m.duration_seconds, m.end_stream_seconds, m.average_fps) == (10, 4, 4, 2.5)


def test_metadata_is_made_with_the_newest_torchcodecs_arguments():
    # Its newest releases pass the computed values to the constructor too;
    # each is then the value, as one assigned.
    m = metadata(num_frames_from_header=5, average_fps_from_header=25.0, duration_seconds_from_header=0.2,
                 duration_seconds=0.25, begin_stream_seconds=1.0, end_stream_seconds=1.25, num_frames=6,
                 average_fps=24.0)
    assert (m.duration_seconds, m.begin_stream_seconds, m.end_stream_seconds, m.num_frames, m.average_fps) == \
        (0.25, 1.0, 1.25, 6, 24.0)
    assert dataclasses.replace(m, codec="h264").num_frames == 6
    assert pickle.loads(pickle.dumps(m)) == m
    del m.num_frames
    assert m.num_frames == 5
    # help() and inspect.signature() show them, keyword only, and none of
    # the private fields a pickle carries.
    parameters = inspect.signature(VideoStreamMetadata).parameters
    assert [name for name in parameters if name.startswith("_")] == []
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in
               ("duration_seconds", "begin_stream_seconds", "end_stream_seconds", "num_frames", "average_fps"))
    assert "stream_index" in parameters and "rotation" in parameters


def test_computed_values_follow_the_fields_they_come_from(video):
    # As torchcodec's @property values: a field edited changes the values
    # computed from it, on a copy without touching the original; torchcodec's
    # sampler tests edit them so and expect its samplers' errors.
    d = VideoDecoder(video)
    m = copy.copy(d.metadata)
    assert m == d.metadata
    m.end_stream_seconds_from_content = None
    m.duration_seconds_from_header = None
    m.num_frames_from_header = None
    assert (m.duration_seconds, m.end_stream_seconds, m.num_frames) == (None, None, 50)
    assert d.metadata.end_stream_seconds == pytest.approx(2.0) and m != d.metadata
    assert "end_stream_seconds: None" in repr(m) and dataclasses.asdict(m)["end_stream_seconds"] is None
    assert pickle.loads(pickle.dumps(m)) == m
    original, d.metadata = d.metadata, m
    samplers = (clips_at_random_timestamps,
                functools.partial(clips_at_regular_timestamps, seconds_between_clip_starts=1))
    for sampler in samplers:
        with pytest.raises(ValueError, match="Could not infer stream end from video metadata"):
            sampler(d)
    d.metadata = copy.copy(original)
    d.metadata.end_stream_seconds_from_content = None
    d.metadata.average_fps_from_header = None
    assert d.metadata.average_fps is None
    for sampler in samplers:
        with pytest.raises(ValueError, match="Could not infer average fps"):
            sampler(d)
    # Assigned, as torchcodec's newest releases (whose computed values are
    # fields) let one and their sampler tests do, a value is that value
    # until deleted, on that metadata alone.
    d.metadata = original
    m = copy.copy(original)
    m.end_stream_seconds = None
    assert m.end_stream_seconds is None and original.end_stream_seconds == pytest.approx(2.0)
    assert pickle.loads(pickle.dumps(m)).end_stream_seconds is None
    del m.end_stream_seconds
    assert m.end_stream_seconds == pytest.approx(2.0) and m == original
    # A metadata pickled when the computed values were kept: they are
    # computed again from its fields.
    old = VideoStreamMetadata.__new__(VideoStreamMetadata)
    old.__setstate__({**vars(original), "num_frames": 7, "end_stream_seconds": 9.0})
    assert old == original and (old.num_frames, old.end_stream_seconds) == (50, pytest.approx(2.0))


def test_replace_keeps_an_assigned_value_and_a_subclass_computes_its_own(video):
    # dataclasses.replace() keeps a value assigned to a computed one, as it
    # keeps the fields; so does a metadata made again from asdict()'s
    # fields (a pickled decoder's). Each copy's assignments are its own.
    m = VideoDecoder(video).metadata
    fields = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}
    m.end_stream_seconds = None
    r = dataclasses.replace(m, codec="other")
    assert (r.end_stream_seconds, r.codec, r.num_frames) == (None, "other", 50)
    r.end_stream_seconds = 3.0
    assert m.end_stream_seconds is None
    del r.end_stream_seconds
    assert r.end_stream_seconds == pytest.approx(2.0) and m.end_stream_seconds is None
    again = VideoStreamMetadata._from_fields(dataclasses.asdict(m))
    assert again.end_stream_seconds is None and again == m and not again._unknown
    # A subclass's own way to compute a value is the one used, by the
    # values computed from it too.

    class Counted(VideoStreamMetadata):
        def _count(self):
            return 7

    c = Counted(**fields)
    assert (c.num_frames, c.average_fps) == (7, pytest.approx(3.5))



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


def test_a_damaged_hevc_file_gives_the_same_frames_whatever_the_backend_decoded_before(tmp_path):
    # HEVC conceals nothing: what a damaged slice leaves unwritten keeps
    # the bytes the picture's memory held, an earlier frame's.
    encode = ["-c:v", "libx265", "-x265-params", "log-level=error:keyint=25:bframes=3:pools=1:frame-threads=1",
              "-pix_fmt", "yuv420p", "-threads", "1", "-fflags", "+bitexact"]
    clean = make_video(tmp_path / "clean.mkv",
                       ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "75"] + encode)
    other = make_video(tmp_path / "other.mkv",
                       ["-f", "lavfi", "-i", "mandelbrot=size=320x240:rate=25", "-frames:v", "75"] + encode)
    data = bytearray(pathlib.Path(clean).read_bytes())
    rng = random.Random(1)
    for _ in range(20):
        at = rng.randrange(len(data) * 3 // 10, len(data) * 7 // 10)
        data[at] ^= 1 << rng.randrange(8)
    damaged = tmp_path / "damaged.mkv"
    damaged.write_bytes(bytes(data))

    decodable = []
    with VideoDecoder(damaged) as d:
        for i in range(len(d)):
            try:
                d.get_frame_at(i)
                decodable.append(i)
            except codecvisor.VideoError:
                pass
    with VideoDecoder(clean) as d:
        untouched = d.get_frames_at(decodable).data
    results = []
    for _ in range(3):
        with VideoDecoder(damaged) as d:
            results.append(d.get_frames_at(decodable).data)
        # Leaves other pictures in the frame pool's slots.
        with VideoDecoder(other) as d:
            d.get_frames_in_range(0, len(d))
    changed = [i for k, i in enumerate(decodable) if not torch.equal(results[0][k], untouched[k])]
    assert changed, "the damage changed no frame that decodes: the test would test nothing"

    def zeroed(frames):
        # Pixels of zero Y, U and V samples, as limited-range BT.601 makes
        # them: RGB (0, about 135, 0).
        r, g, b = frames[:, 0].int(), frames[:, 1].int(), frames[:, 2].int()
        return int(((r <= 2) & (b <= 2) & (g >= 130) & (g <= 140)).sum())

    # The damage left areas unwritten, and they are cleared (188,471 such
    # pixels here; 2,833 from fresh slots without the clearing; none in the
    # clean frames).
    assert zeroed(untouched) == 0
    assert zeroed(results[0]) >= 10_000
    for later in results[1:]:
        differ = [i for k, i in enumerate(decodable) if not torch.equal(results[0][k], later[k])]
        assert not differ, f"frames {differ} differ from the same request's before"
