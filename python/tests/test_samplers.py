"""codecvisor.samplers against torchcodec's documented contract: where clips
start, what each policy fills in, the errors, seeding, and one backend
request per call. Frames come from the synthetic backend, whose frame i has
pts start + i / fps and a first pixel of 7 * i (mod 256), so every frame a
sampler returns names its index twice."""

import functools

import numpy as np
import pytest
import torch

from codecvisor import FrameBatch
from codecvisor.decoders import VideoDecoder
from codecvisor.samplers import (clips_at_random_indices, clips_at_random_timestamps, clips_at_regular_indices,
                                 clips_at_regular_timestamps)

from conftest import HEIGHT, WIDTH, synthetic_clip

FPS = 8  # frame times are exact binary fractions


@pytest.fixture
def make(tmp_path):
    def make(frames, start=0.0, **options):
        path = synthetic_clip(tmp_path / f"v{frames}_{start}.syn",
                              f"frames={frames} width=16 height=8 fps={FPS} start={start}")
        return VideoDecoder(path, device="synthetic", **options)
    return make


def indices(clips: FrameBatch, start=0.0):
    """The frame index of every frame of a 5-D batch, checked by pts and pixels."""
    by_pts = np.rint((clips.pts_seconds.numpy() - start) * FPS).astype(int)
    first_pixel = clips.data[:, :, 0, 0, 0].numpy()
    np.testing.assert_array_equal(first_pixel, (by_pts * 7) % 256)
    np.testing.assert_allclose(clips.duration_seconds.numpy(), 1 / FPS)
    return by_pts.tolist()


def test_regular_indices_span_the_range_with_dilation(make):
    d = make(30)
    clips = clips_at_regular_indices(d, num_clips=3, num_frames_per_clip=4, num_indices_between_frames=2)
    # A clip spans 7 frames, so clips start in [0, 24): at 0, 11 and 23.
    assert tuple(clips.data.shape) == (3, 4, 3, 8, 16)
    assert tuple(clips.pts_seconds.shape) == tuple(clips.duration_seconds.shape) == (3, 4)
    assert indices(clips) == [[0, 2, 4, 6], [11, 13, 15, 17], [23, 25, 27, 29]]


def test_regular_indices_repeat_starts_when_clips_outnumber_them(make):
    clips = clips_at_regular_indices(make(30), num_clips=5, sampling_range_start=0, sampling_range_end=3)
    assert indices(clips) == [[0], [0], [1], [1], [2]]


def test_defaults_are_one_clip_of_one_frame(make):
    assert indices(clips_at_regular_indices(make(30))) == [[0]]
    assert tuple(clips_at_random_indices(make(30)).data.shape) == (1, 1, 3, 8, 16)


def test_random_indices_follow_torchs_global_generator(make):
    d = make(40)
    torch.manual_seed(1234)
    first = clips_at_random_indices(d, num_clips=6, num_frames_per_clip=3, num_indices_between_frames=3)
    torch.manual_seed(1234)
    again = clips_at_random_indices(d, num_clips=6, num_frames_per_clip=3, num_indices_between_frames=3)
    assert torch.equal(first.data, again.data) and torch.equal(first.pts_seconds, again.pts_seconds)
    # The starts are torch.randint's over [0, 40 - 7 + 1), as torchcodec draws them.
    torch.manual_seed(1234)
    starts = torch.randint(0, 34, (6,)).tolist()
    assert indices(first) == [[s, s + 3, s + 6] for s in starts]


def test_random_indices_take_a_generator_and_leave_the_global_one_alone(make):
    d = make(40)
    torch.manual_seed(5)
    expected_global = torch.rand(3)
    torch.manual_seed(5)
    a = clips_at_random_indices(d, num_clips=8, num_frames_per_clip=2, generator=torch.Generator().manual_seed(9))
    assert torch.equal(torch.rand(3), expected_global)
    b = clips_at_random_indices(d, num_clips=8, num_frames_per_clip=2, generator=torch.Generator().manual_seed(9))
    c = clips_at_random_indices(d, num_clips=8, num_frames_per_clip=2, generator=torch.Generator().manual_seed(10))
    assert indices(a) == indices(b) != indices(c)
    starts = torch.randint(0, 39, (8,), generator=torch.Generator().manual_seed(9)).tolist()
    assert indices(a) == [[s, s + 1] for s in starts]


def test_random_starts_stay_in_the_sampling_range(make):
    torch.manual_seed(0)
    clips = clips_at_random_indices(make(30), num_clips=50, sampling_range_start=-10, sampling_range_end=-5)
    starts = [clip[0] for clip in indices(clips)]
    assert set(starts) == set(range(20, 25))


@pytest.mark.parametrize("policy, expected", [("repeat_last", [25, 27, 29, 29, 29]), ("wrap", [25, 27, 29, 25, 27])])
def test_policies_fill_a_clip_that_runs_past_the_end(make, policy, expected):
    for sampler in (clips_at_regular_indices, clips_at_random_indices):
        clips = sampler(make(30), num_clips=2, num_frames_per_clip=5, num_indices_between_frames=2,
                        sampling_range_start=25, sampling_range_end=26, policy=policy)
        assert indices(clips) == [expected, expected]


def test_the_error_policy_raises_only_when_a_clip_runs_past_the_end(make):
    d = make(30)
    with pytest.raises(ValueError, match="policy='error'"):
        clips_at_regular_indices(d, num_frames_per_clip=5, num_indices_between_frames=2, sampling_range_start=25,
                                 sampling_range_end=26, policy="error")
    clips = clips_at_regular_indices(d, num_clips=2, num_frames_per_clip=5, num_indices_between_frames=2,
                                     policy="error")
    assert indices(clips) == [[0, 2, 4, 6, 8], [21, 23, 25, 27, 29]]


@pytest.mark.parametrize("policy, tail", [("repeat_last", [9] * 5), ("wrap", [0, 1, 2, 3, 4])])
def test_a_clip_longer_than_the_video(make, policy, tail):
    # The default range shrinks to the first frame; the policy does the rest.
    clips = clips_at_random_indices(make(10), num_clips=2, num_frames_per_clip=15, policy=policy)
    assert indices(clips) == [list(range(10)) + tail] * 2
    with pytest.raises(ValueError, match="policy='error'"):
        clips_at_regular_indices(make(10), num_frames_per_clip=15, policy="error")


def test_a_range_at_the_very_end(make):
    d = make(30)
    assert indices(clips_at_random_indices(d, num_clips=3, sampling_range_start=-1)) == [[29]] * 3
    assert indices(clips_at_regular_indices(d, num_frames_per_clip=3, sampling_range_start=-1,
                                            sampling_range_end=30)) == [[29, 29, 29]]
    assert indices(clips_at_regular_indices(d, num_frames_per_clip=3, sampling_range_start=-1,
                                            sampling_range_end=100, policy="wrap")) == [[29, 29, 29]]
    # A clip of 3 cannot start at the last frame unless the range says so.
    with pytest.raises(ValueError, match="We determined that sampling_range_end should be 28"):
        clips_at_random_indices(d, num_frames_per_clip=3, sampling_range_start=-1)


@pytest.mark.parametrize("sampler", [clips_at_random_indices, clips_at_regular_indices])
@pytest.mark.parametrize("arguments, message", [
    (dict(num_clips=0), r"num_clips \(0\) must be > 0"),
    (dict(num_clips=-2), r"num_clips \(-2\) must be > 0"),
    (dict(num_frames_per_clip=0), r"num_frames_per_clip \(0\) must be strictly positive"),
    (dict(num_indices_between_frames=0), r"num_indices_between_frames \(0\) must be strictly positive"),
    (dict(sampling_range_start=-31), r"sampling_range_start \(-31\) must be greater than or equal to -30"),
    (dict(policy="clamp"), r"Invalid policy \(clamp\)"),
    (dict(sampling_range_start=30), r"sampling_range_start \(30\) must be smaller than the number of frames"),
    (dict(sampling_range_start=10, sampling_range_end=10), r"must be smaller than sampling_range_end \(10\)"),
    (dict(sampling_range_start=10, sampling_range_end=-25), r"must be smaller than sampling_range_end \(5\)"),
])
def test_index_arguments_are_checked(make, sampler, arguments, message):
    with pytest.raises(ValueError, match=message):
        sampler(make(30), **arguments)


def record_requests(decoder):
    """Records the frames each backend request of the decoder asks for."""
    requests, fetch = [], decoder._frames_scattered

    def spy(distinct, where, by_time):
        requests.append(list(distinct))
        return fetch(distinct, where, by_time)

    decoder._frames_scattered = spy
    return requests


def test_clips_too_large_for_memory_are_refused_before_their_positions_are_listed(make):
    # One frame past half the memory this process may use: each sampler
    # raises the decoder's MemoryError, naming the clips, before it lists a
    # position per frame (hundreds of MiB of Python objects, or for a count
    # ten times larger more memory than the machine has) and before any
    # request.
    from codecvisor import _codecvisor
    d = make(40)
    too_many = _codecvisor.usable_memory_bytes() // 2 // (16 * 8 * 3) + 1
    requests = record_requests(d)
    for sampler, arguments in (
            (clips_at_random_indices, dict(num_frames_per_clip=too_many)),
            (clips_at_regular_indices, dict(num_clips=too_many)),
            (clips_at_random_timestamps, dict(num_frames_per_clip=too_many, sampling_range_end=1.0)),
            (clips_at_regular_timestamps, dict(seconds_between_clip_starts=4.0 / too_many))):
        with pytest.raises(MemoryError, match=r"clips of \d+ frames\).*fewer or shorter clips"):
            sampler(d, **arguments)
    assert requests == []


def test_all_frames_go_in_one_request_for_the_distinct_indices(make):
    d = make(40)
    requests = record_requests(d)
    clips = clips_at_regular_indices(d, num_clips=6, num_frames_per_clip=8, sampling_range_start=4,
                                     sampling_range_end=10)
    # Starts 4, 5, 6, 7, 8, 9: 48 frames, 13 of them distinct.
    assert requests == [list(range(4, 17))]
    assert indices(clips) == [list(range(s, s + 8)) for s in range(4, 10)]
    assert clips.data.is_contiguous()


def test_frames_are_the_decoders_frames(video, reference):
    d = VideoDecoder(video, dimension_order="NHWC")
    clips = clips_at_regular_indices(d, num_clips=4, num_frames_per_clip=5, num_indices_between_frames=3)
    assert tuple(clips.data.shape) == (4, 5, HEIGHT, WIDTH, 3)
    # 50 frames, a clip spans 13: starts in [0, 38), at 0, 12, 24 and 37.
    for clip, start in zip(clips.data.numpy(), (0, 12, 24, 37)):
        np.testing.assert_array_equal(clip, reference[start:start + 13:3])


def test_a_clip_batch_indexes_into_clips_then_frames(make):
    clips = clips_at_regular_indices(make(30), num_clips=2, num_frames_per_clip=3)
    assert isinstance(clips[1], FrameBatch) and tuple(clips[1].data.shape) == (3, 3, 8, 16)
    frame = clips[1][2]  # as torchcodec's: a batch of one frame, its times 0-D
    assert isinstance(frame, FrameBatch) and frame.data.dim() == 3 and frame.pts_seconds.item() == 29 / FPS
    assert [len(clip) for clip in clips] == [3, 3]


# --- by time --------------------------------------------------------------

def test_regular_timestamps_start_every_n_seconds(make):
    d = make(24)  # 3 s
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=1.0, num_frames_per_clip=3)
    # Starts before 3 - 2/8: 0, 1 and 2 s; frames 1/8 s apart.
    assert indices(clips) == [[0, 1, 2], [8, 9, 10], [16, 17, 18]]
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=0.75, num_frames_per_clip=2,
                                        seconds_between_frames=0.5, sampling_range_start=0.5,
                                        sampling_range_end=2.0)
    assert indices(clips) == [[4, 8], [10, 14]]  # 2.0 is past the range


def test_regular_starts_stop_before_an_end_that_a_step_reaches(make):
    # 2.8 + 8 * 0.05 is 3.2, the end the range leaves out, though in binary
    # it rounds to a hair below it: 9 clips came back, the ninth starting a
    # rounding before the end (torchcodec gives 8). So at times far from 0
    # (an MPEG-TS stream's), where the roundings are larger.
    d = make(32)  # 4 s
    for start, end, step, count in ((2.8, 3.2, 0.05, 8), (0.0, 2.7, 0.3, 9), (0.1, 0.4, 0.02, 15), (0.5, 2.0, 0.75, 2)):
        clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=step, sampling_range_start=start,
                                            sampling_range_end=end)
        assert clips.pts_seconds.shape == (count, 1), (start, end, step)
    late = make(32, start=95443.5)
    clips = clips_at_regular_timestamps(late, seconds_between_clip_starts=0.01, sampling_range_start=95443.817,
                                        sampling_range_end=95443.907)
    assert clips.pts_seconds.shape == (9, 1)


def test_the_default_range_keeps_every_clip_inside_the_stream_despite_rounding(tmp_path):
    # 37 frames at 25 fps end at 1.48 s; clips of 30 frames 0.04 s apart may
    # start until 1.48 - 29 * 0.04, which rounds to a hair past 0.32, and a
    # start at 0.32 put its last time on the end itself, where nothing is
    # sampled: the error policy raised, the others padded.
    path = synthetic_clip(tmp_path / "v37.syn", "frames=37 width=16 height=8 fps=25")
    d = VideoDecoder(path, device="synthetic")
    assert d.metadata.end_stream_seconds == 1.48
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=0.01, num_frames_per_clip=30, policy="error")
    assert clips.pts_seconds.shape == (32, 30)  # starts 0, 0.01, ..., 0.31
    frames = np.rint(clips.pts_seconds.numpy() * 25).astype(int)
    assert frames[0, 0] == 0 and frames[-1, -1] == 36  # the last clip ends on the last frame
    np.testing.assert_array_equal(frames[:, -1] - frames[:, 0], 29)  # no clip padded


def test_time_ranges_start_where_the_stream_starts(make):
    d = make(24, start=0.5)  # frames played from 0.5 s to 3.5 s
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=1.5, num_frames_per_clip=2)
    assert indices(clips, start=0.5) == [[0, 1], [12, 13]]
    with pytest.raises(ValueError, match=r"sampling_range_start \(0.25\) must be at least 0.5"):
        clips_at_random_timestamps(d, sampling_range_start=0.25)
    with pytest.raises(ValueError, match=r"sampling_range_end \(0.5\) must be at least 0.5"):
        clips_at_random_timestamps(d, sampling_range_end=0.5)
    with pytest.raises(ValueError, match=r"sampling_range_start \(3.5\) must be smaller than 3.5"):
        clips_at_random_timestamps(d, sampling_range_start=3.5)


def test_a_stream_that_starts_at_no_single_precision_time(make):
    # 1.4 s and 0.1 s round down in single precision, before the stream's
    # first frame: the samplers' times are doubles.
    d = make(24, start=1.4)
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=0.5)
    assert indices(clips, start=1.4) == [[0], [4], [8], [12], [16], [20]]
    torch.manual_seed(5)
    clips = clips_at_random_timestamps(d, num_clips=20, sampling_range_end=1.4 + 1e-9)
    assert indices(clips, start=1.4) == [[0]] * 20
    # A range narrower than single precision's step there still has its start.
    d = make(24, start=0.1)
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=0.25, sampling_range_end=0.1 + 1e-9)
    assert indices(clips, start=0.1) == [[0]]


def test_a_time_range_within_a_rounding_of_the_end_is_refused(make):
    # A start 1e-10 s before the end is at the end, where no frame plays:
    # the samplers raised IndexError (repeat_last) or ZeroDivisionError
    # (wrap) from a clip with no frame.
    d = make(24)
    end = d.metadata.end_stream_seconds
    for sampler in (clips_at_random_timestamps, functools.partial(clips_at_regular_timestamps,
                                                                  seconds_between_clip_starts=1)):
        for policy in ("repeat_last", "wrap"):
            with pytest.raises(ValueError, match=r"must be smaller than .* \(the stream's end, less 1e-09 s\)"):
                sampler(d, sampling_range_start=end - 1e-10, sampling_range_end=end, policy=policy)
    # A range whose end is the stream's draws no start in its last nanosecond.
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=1e-9, sampling_range_start=end - 3e-9)
    assert indices(clips) and set(i for clip in indices(clips) for i in clip) == {23}


def test_time_samplers_need_the_streams_start_and_end(make):
    for field, edge in (("begin_stream_seconds", "start"), ("end_stream_seconds", "end")):
        d = make(24)
        setattr(d.metadata, field, None)
        with pytest.raises(ValueError, match=f"Could not infer stream {edge} from video metadata"):
            clips_at_random_timestamps(d)


@pytest.mark.parametrize("policy, expected", [("repeat_last", [20, 22, 22, 22]), ("wrap", [20, 22, 20, 22])])
def test_time_policies_replace_times_past_the_end(make, policy, expected):
    # Sampled at 2.5, 2.75, then 3.0 and 3.25, which are past the end.
    clips = clips_at_regular_timestamps(make(24), seconds_between_clip_starts=1, num_frames_per_clip=4,
                                        seconds_between_frames=0.25, sampling_range_start=2.5,
                                        sampling_range_end=2.6, policy=policy)
    assert indices(clips) == [expected]
    with pytest.raises(ValueError, match="policy='error'"):
        clips_at_regular_timestamps(make(24), seconds_between_clip_starts=1, num_frames_per_clip=4,
                                    seconds_between_frames=0.25, sampling_range_start=2.5, sampling_range_end=2.6,
                                    policy="error")


def test_random_timestamps_are_seeded_and_in_range(make):
    d = make(24)
    torch.manual_seed(77)
    first = clips_at_random_timestamps(d, num_clips=20, num_frames_per_clip=2, seconds_between_frames=0.5)
    torch.manual_seed(77)
    again = clips_at_random_timestamps(d, num_clips=20, num_frames_per_clip=2, seconds_between_frames=0.5)
    assert indices(first) == indices(again)
    # Clips start in [0, 3 - 0.5) s, drawn as torchcodec draws them.
    torch.manual_seed(77)
    starts = (torch.rand(20) * 2.5).tolist()
    assert [clip[0] for clip in indices(first)] == [int(s * FPS) for s in starts]
    assert all(clip[1] == clip[0] + 4 for clip in indices(first))
    g = clips_at_random_timestamps(d, num_clips=20, generator=torch.Generator().manual_seed(3))
    assert indices(g) == indices(clips_at_random_timestamps(d, num_clips=20,
                                                            generator=torch.Generator().manual_seed(3)))


def test_a_time_clip_one_frame_longer_than_the_video_is_refused(tmp_path):
    # n + 1 frames at 24 fps span the whole of an n-frame video: the latest
    # start is 0 give or take a rounding (1e-17 for these n), which the
    # search for it stepped down from at 1e-33 a step, for ever.
    for n in (5, 7, 10, 14, 17):
        d = VideoDecoder(synthetic_clip(tmp_path / f"v{n}.syn", f"frames={n} width=16 height=8 fps=24"),
                         device="synthetic")
        for sample in (lambda: clips_at_random_timestamps(d, num_frames_per_clip=n + 1),
                       lambda: clips_at_regular_timestamps(d, seconds_between_clip_starts=0.1,
                                                           num_frames_per_clip=n + 1)):
            with pytest.raises(ValueError, match="We determined that sampling_range_end should be"):
                sample()
        assert len(clips_at_random_timestamps(d, num_frames_per_clip=n)) == 1


def test_a_time_clip_longer_than_the_video(make):
    # 30 frames 1/8 s apart need 3.75 s: no start leaves room, so the default range is empty.
    with pytest.raises(ValueError, match="We determined that sampling_range_end should be"):
        clips_at_random_timestamps(make(24), num_frames_per_clip=30)
    clips = clips_at_random_timestamps(make(24), num_frames_per_clip=30, sampling_range_end=0.01)
    assert indices(clips) == [list(range(24)) + [23] * 6]


@pytest.mark.parametrize("call, message", [
    (lambda d: clips_at_random_timestamps(d, num_clips=0), r"num_clips \(0\) must be > 0"),
    (lambda d: clips_at_random_timestamps(d, num_frames_per_clip=0), r"num_frames_per_clip \(0\) must be strictly positive"),
    (lambda d: clips_at_random_timestamps(d, policy="nearest"), r"Invalid policy \(nearest\)"),
    (lambda d: clips_at_random_timestamps(d, seconds_between_frames=0), r"seconds_between_frames \(0\) must be strictly positive"),
    (lambda d: clips_at_random_timestamps(d, seconds_between_frames=float("nan")),
     r"seconds_between_frames \(nan\) must be strictly positive"),
    (lambda d: clips_at_random_timestamps(d, seconds_between_frames=float("inf")),
     r"seconds_between_frames \(inf\) must be finite"),
    (lambda d: clips_at_regular_timestamps(d, seconds_between_clip_starts=float("nan")),
     r"seconds_between_clip_starts \(nan\) must be > 0"),
    (lambda d: clips_at_random_timestamps(d, sampling_range_start=float("nan")),
     r"sampling_range_start \(nan\) must be a number"),
    (lambda d: clips_at_regular_timestamps(d, seconds_between_clip_starts=0),
     r"seconds_between_clip_starts \(0\) must be > 0"),
    (lambda d: clips_at_regular_timestamps(d, seconds_between_clip_starts=1, sampling_range_start=2,
                                           sampling_range_end=1), r"must be smaller than sampling_range_end \(1\)"),
])
def test_time_arguments_are_checked(make, call, message):
    with pytest.raises(ValueError, match=message):
        call(make(24))


def test_time_samplers_send_one_request(make):
    d = make(24)
    requests = record_requests(d)
    clips = clips_at_regular_timestamps(d, seconds_between_clip_starts=0.25, num_frames_per_clip=4,
                                        sampling_range_end=1.0)
    assert len(requests) == 1 and requests[0] == sorted(set(requests[0]))
    assert requests[0] == [i / FPS for i in range(10)]
    assert indices(clips) == [[s, s + 1, s + 2, s + 3] for s in (0, 2, 4, 6)]


def test_the_scatter_hook_checks_its_map(make):
    d = make(10)
    with pytest.raises(ValueError, match="not asked for"):
        d._frames_scattered([1, 2], [0, 2])
    batch = d._frames_scattered([3, 5], [1, 0, 1, 1])
    assert np.rint(batch.pts_seconds.numpy() * FPS).tolist() == [5, 3, 5, 5]
    assert batch.data[:, 0, 0, 0].tolist() == [35, 21, 35, 35] and batch.data.is_contiguous()
