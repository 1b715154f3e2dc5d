"""codecvisor.datasets and the decoder's timeout: DataLoader epochs over clip
datasets in which one file crashes the backend every time and one hangs it.
The epoch completes, every good clip arrives exactly once, and the bad ones
arrive as Skipped records (or raise, when asked)."""

import collections
import ctypes
import functools
import mmap
import os

import pytest
import torch
from torch.utils.data import DataLoader

import codecvisor
from codecvisor import _shared_batch
from codecvisor.datasets import ClipDataset, ClipIterableDataset, Skipped, collate_clips, share
from codecvisor.decoders import VideoDecoder
from codecvisor.samplers import clips_at_regular_indices

import readme_snippets
from conftest import make_video, synthetic_clip

CRASH, HANG = 6, 17  # the bad ones among 20
SAMPLER = functools.partial(clips_at_regular_indices, num_clips=2, num_frames_per_clip=3)
# A short request timeout only for the clip that hangs (HANG_OPTIONS, given
# to it alone by ShortTimeoutForTheHang): a good clip's request must not
# time out on a loaded machine. Under AddressSanitizer, with six worker
# processes on two cores, a good clip of a dataset whose clips all had 1 s
# was skipped; 3 s for every clip of a dataset was the same bet.
OPTIONS = dict(device="faulty", timeout=30.0)
HANG_OPTIONS = dict(device="faulty", timeout=3.0)


def clips(folder, n=20, bad=((CRASH, "fault=segfault"), (HANG, "fault=hang"))):
    """(path, label) pairs; clip i has 12 + i frames, so its second clip
    starts at frame 9 + i."""
    faults = dict(bad)
    return [(synthetic_clip(folder / f"clip{i:02d}.syn", f"frames={12 + i} width=8 height=4 fps=10 "
                            + faults.get(i, "")), i) for i in range(n)]


def check_clips(data, label):
    """`data` is the (2, 3, 3, 4, 8) clip tensor of sample `label`."""
    assert tuple(data.shape) == (2, 3, 3, 4, 8)
    first_pixels = data[:, :, 0, 0, 0].tolist()
    assert first_pixels == [[0, 7, 14], [7 * (9 + label + k) % 256 for k in range(3)]]


def run_epoch(loader):
    """Labels delivered (with a count each) and skipped records."""
    delivered, skipped = collections.Counter(), []
    for batch in loader:
        skipped += batch.skipped
        if batch.clips is None:
            continue
        for data, label in zip(batch.clips, batch.labels.tolist()):
            check_clips(data, label)
            delivered[label] += 1
    return delivered, skipped


class ShortTimeoutForTheHang:
    """Mixed into a dataset made with OPTIONS: the clip at HANG, alone, is
    read with HANG_OPTIONS (its decoder's request timeout 3 s)."""

    def _read(self, index):
        if index != HANG:
            return super()._read(index)
        given, self.decoder_options = self.decoder_options, dict(HANG_OPTIONS)
        try:
            return super()._read(index)
        finally:
            self.decoder_options = given


class HangingClipDataset(ShortTimeoutForTheHang, ClipDataset):
    pass


class HangingClipIterableDataset(ShortTimeoutForTheHang, ClipIterableDataset):
    pass


def check_bad_ones(skipped, expected=(CRASH, HANG)):
    by_index = {s.index: s for s in skipped}
    assert sorted(by_index) == sorted(expected) and len(skipped) == len(expected)
    if CRASH in by_index:
        crash = by_index[CRASH]
        assert crash.error == "BackendError" and "SIGSEGV" in crash.message, crash
        assert crash.source.endswith(f"clip{CRASH:02d}.syn")
    if HANG in by_index:
        hang = by_index[HANG]
        assert hang.error == "BackendError" and "no answer within 3000 ms" in hang.message, hang
        assert hang.source.endswith(f"clip{HANG:02d}.syn")


# --- the decoder's timeout -------------------------------------------------

def faulty_pid():
    return next(b.pid for b in codecvisor.backends.list() if b.name == "faulty")


def test_a_hung_backend_is_killed_at_the_deadline(tmp_path):
    hung = VideoDecoder(synthetic_clip(tmp_path / "hang.syn", "frames=5 fault=hang"), device="faulty", timeout=0.5)
    before = faulty_pid()
    with pytest.raises(codecvisor.BackendError) as e:
        hung.get_frame_at(2)
    # Killed (and reaped) at the deadline, twice: once for the request and
    # once for its replay, which makes it a poison request; a new process
    # serves the next one.
    message = str(e.value)
    assert e.value.code == "ABORTED" and message.count("no answer within 500 ms") == 2, message
    with pytest.raises(ProcessLookupError):
        os.kill(before, 0)
    good = VideoDecoder(synthetic_clip(tmp_path / "good.syn", "frames=5"), device="faulty", timeout=30)
    assert good.get_frame_at(2).pts_seconds == pytest.approx(2 / 25)
    assert faulty_pid() not in (None, before)


def test_a_slow_backend_within_the_timeout_is_left_alone(tmp_path):
    # 200 ms a frame against a 20 s timeout: a loaded machine may delay an
    # answer by seconds, never by as much.
    d = VideoDecoder(synthetic_clip(tmp_path / "slow.syn", "frames=3 decode_ms=200"), device="faulty", timeout=20)
    assert len(d.get_frames_at([0, 1, 2])) == 3
    assert d.retries == 0


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_the_timeout_must_be_positive(tmp_path, timeout):
    with pytest.raises(ValueError, match="timeout"):
        VideoDecoder(synthetic_clip(tmp_path / "v.syn", "frames=3"), device="faulty", timeout=timeout)


# --- map-style ----------------------------------------------------------------

def test_an_epoch_with_two_workers_survives_a_crashing_and_a_hanging_file(tmp_path):
    dataset = HangingClipDataset(clips(tmp_path), SAMPLER, decoder_options=OPTIONS)
    loader = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=collate_clips)
    delivered, skipped = run_epoch(loader)
    assert delivered == collections.Counter(set(range(20)) - {CRASH, HANG})
    check_bad_ones(skipped)


def test_the_raise_policy_stops_the_epoch_at_the_bad_file(tmp_path):
    dataset = ClipDataset(clips(tmp_path, n=8), SAMPLER, on_error="raise", decoder_options=OPTIONS)
    loader = DataLoader(dataset, batch_size=2, num_workers=1, collate_fn=collate_clips)
    seen = []
    with pytest.raises(codecvisor.BackendError, match="SIGSEGV"):
        for batch in loader:
            seen += batch.labels.tolist()
    assert seen == list(range(CRASH))


def test_missing_and_corrupt_files_are_skipped_with_their_reason(tmp_path):
    (tmp_path / "junk.mp4").write_bytes(b"not a video at all" * 100)
    good = synthetic_clip(tmp_path / "good.syn", "frames=12 width=8 height=4 fps=10")
    dataset = ClipDataset([(str(tmp_path / "missing.mp4"), 0), (str(tmp_path / "junk.mp4"), 1), (good, 0)], SAMPLER)
    missing, junk = dataset[0], dataset[1]
    assert isinstance(missing, Skipped) and missing.error == "FileNotFoundError" and missing.index == 0
    (tmp_path / "folder.mp4").mkdir()
    folder = ClipDataset([(str(tmp_path / "folder.mp4"), 0)], SAMPLER)[0]
    assert isinstance(folder, Skipped) and folder.error == "IsADirectoryError", folder
    os.symlink("loop", tmp_path / "loop")
    loop = ClipDataset([(str(tmp_path / "loop"), 0)], SAMPLER)[0]
    assert isinstance(loop, Skipped) and loop.error == "OSError" and "symbolic links" in loop.message, loop
    assert isinstance(junk, Skipped) and junk.error == "VideoError" and junk.source.endswith("junk.mp4")
    assert isinstance(ClipDataset([(good, 0)], SAMPLER, decoder_options=dict(device="faulty"))[0], tuple)
    batch = collate_clips([missing, junk])
    assert batch.clips is None and batch.labels is None and batch.skipped == [missing, junk]


def test_a_file_cut_short_is_skipped_in_approximate_mode(tmp_path):
    # An MP4 whose index (moov first) lists 100 frames but whose data stops
    # after about half of them: approximate mode counts the header's 100,
    # and a clip past the cut finds no frame. The file is skipped, as exact
    # mode's count would have kept the clip inside it; the next file is read.
    whole = make_video(tmp_path / "whole.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v",
                                                "100", "-c:v", "libx264", "-g", "10", "-movflags", "+faststart"])
    data = open(whole, "rb").read()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[:len(data) // 2])
    good = make_video(tmp_path / "good.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "12",
                                               "-c:v", "libx264"])
    late = functools.partial(clips_at_regular_indices, num_clips=2, num_frames_per_clip=3, sampling_range_start=80)
    sampler = lambda d: late(d) if len(d) == 100 else SAMPLER(d)
    skipped, kept = ClipDataset([(str(cut), 0), (good, 1)], sampler,
                                decoder_options=dict(seek_mode="approximate"))
    assert isinstance(skipped, Skipped) and skipped.error == "MissingFrameError", skipped
    assert "past the end" in skipped.message
    assert kept[1] == 1
    with pytest.raises(IndexError):
        ClipDataset([(str(cut), 0)], sampler, decoder_options=dict(seek_mode="approximate"), on_error="raise")[0]


def test_a_device_no_backend_serves_raises_at_once(tmp_path):
    # A configuration error every file would meet, not a bad file: skipping
    # each would train on nothing.
    good = synthetic_clip(tmp_path / "good.syn", "frames=12 width=8 height=4 fps=10")
    dataset = ClipDataset([(good, 0), (good, 1)], SAMPLER, decoder_options=dict(device="nosuchdevice"))
    with pytest.raises(codecvisor.NoSuchDeviceError):
        dataset[0]


def test_a_video_the_backend_does_not_decode_is_skipped(tmp_path):
    # 16400 px wide, past the cpu backend's 16384 per side.
    wide = make_video(tmp_path / "wide.mkv", ["-f", "lavfi", "-i", "color=red:size=16400x16:rate=5", "-frames:v", "3",
                                              "-c:v", "ffv1"])
    good = make_video(tmp_path / "good.mkv", ["-f", "lavfi", "-i", "testsrc2=size=32x16:rate=5", "-frames:v", "12",
                                              "-c:v", "ffv1"])
    skipped, kept = ClipDataset([(wide, 0), (good, 1)], SAMPLER)
    assert isinstance(skipped, Skipped) and skipped.error == "UnsupportedVideoError", skipped
    assert "larger than this backend decodes" in skipped.message
    assert kept[1] == 1
    with pytest.raises(codecvisor.UnsupportedVideoError):
        ClipDataset([(wide, 0)], SAMPLER, on_error="raise")[0]


def test_poison_files_in_a_row_skip_only_themselves(tmp_path):
    # Three poison files crash the faulty backend six times in a few
    # milliseconds, past its restart budget (5 per minute), but each was
    # judged poison and its crashes left the budget: the good files after
    # them are decoded.
    pairs = clips(tmp_path, n=6, bad=[(i, "fault=segfault") for i in range(3)])
    # Unbatched, each sample arrives as it is: a (clips, label) pair or a Skipped record.
    loader = DataLoader(ClipDataset(pairs, SAMPLER, decoder_options=OPTIONS), batch_size=None, num_workers=1)
    samples = list(loader)
    assert all(isinstance(s, Skipped) and "poison" in s.message for s in samples[:3]), samples[:3]
    for data, label in samples[3:]:
        check_clips(data, label)
    assert [label for _, label in samples[3:]] == [3, 4, 5]


def test_a_quarantined_backend_skips_what_follows(tmp_path):
    # Nine poison files in a row, with no good one between: the faulty
    # backend (8 poison requests in a row allowed) crashes again after the
    # eighth and is quarantined, and the good files after them are skipped
    # too, counted.
    pairs = clips(tmp_path, n=12, bad=[(i, "fault=segfault") for i in range(9)])
    loader = DataLoader(ClipDataset(pairs, SAMPLER, decoder_options=OPTIONS), batch_size=None, num_workers=1)
    skipped = list(loader)
    assert all(isinstance(s, Skipped) for s in skipped) and [s.index for s in skipped] == list(range(12))
    assert "quarantined" in skipped[-1].message, skipped[-1]


def test_samples_are_checked(tmp_path):
    with pytest.raises(ValueError, match="on_error"):
        ClipDataset([], SAMPLER, on_error="ignore")
    with pytest.raises(ValueError, match=r"samples\[1\] should be a \(source, label\) pair"):
        ClipDataset([("a.mp4", 0), "b.mp4"], SAMPLER)
    with pytest.raises(TypeError, match="sampler"):
        ClipDataset([("a.mp4", 0)], "clips_at_random_indices")
    with pytest.raises(IndexError):
        ClipDataset([("a.mp4", 0)], SAMPLER)[1]


# --- batches made in a worker ---------------------------------------------------

def clip_and_times(clips):
    return {"data": clips.data, "pts": clips.pts_seconds}


def test_a_workers_batches_collate_as_torchs_default_collate(tmp_path):
    dataset = ClipDataset(clips(tmp_path, n=6, bad=()), SAMPLER, transform=clip_and_times, decoder_options=OPTIONS)
    batches = list(DataLoader(dataset, batch_size=3, num_workers=1, collate_fn=collate_clips))
    assert len(batches) == 2
    for k, batch in enumerate(batches):
        want, labels = torch.utils.data.default_collate([dataset[i] for i in range(3 * k, 3 * k + 3)])
        assert batch.skipped == [] and batch.labels.tolist() == labels.tolist() == [3 * k, 3 * k + 1, 3 * k + 2]
        assert batch.clips.keys() == want.keys()
        for key in want:
            assert batch.clips[key].dtype == want[key].dtype and torch.equal(batch.clips[key], want[key])


def resident_pages(tensor):
    """(pages of `tensor`'s memory that exist, pages it spans), by mincore."""
    libc = ctypes.CDLL(None, use_errno=True)
    start = tensor.data_ptr() - tensor.data_ptr() % mmap.PAGESIZE
    length = tensor.data_ptr() + tensor.numel() * tensor.element_size() - start
    vec = (ctypes.c_ubyte * ((length + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
    assert libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(length), vec) == 0, ctypes.get_errno()
    return sum(b & 1 for b in vec), len(vec)


def new_shared(numel):
    return torch.empty(0, dtype=torch.int32).set_(torch.IntStorage._new_shared(numel))


@pytest.mark.skipif(tuple(map(int, os.uname().release.split(".")[:2])) < (5, 14),
                    reason="MADV_POPULATE_WRITE needs Linux 5.14")
def test_a_shared_batch_is_stacked_on_pages_made_in_one_call():
    made, spanned = resident_pages(new_shared(300_000))
    assert made < spanned // 2  # a new shared tensor's pages fault in when first written
    populated = new_shared(300_000)
    assert _shared_batch.populate(populated.data_ptr(), 4 * 300_000)
    made, spanned = resident_pages(populated)
    assert made == spanned > 250
    samples = [torch.arange(k, k + 150_000, dtype=torch.int32).reshape(3, 50_000) for k in range(4)]
    stacked = _shared_batch.stack_shared(samples)
    assert stacked.is_shared() and torch.equal(stacked, torch.stack(samples))


# --- iterable -------------------------------------------------------------------

def test_shares_are_disjoint_and_cover_the_dataset():
    order = torch.randperm(23, generator=torch.Generator().manual_seed(1)).tolist()
    for world, workers_per_rank in [(1, [1]), (2, [2, 2]), (3, [1, 2, 4]), (4, [3, 1, 2, 2])]:
        shares = [share(23, r, world, k, n, order) for r, n in enumerate(workers_per_rank) for k in range(n)]
        flat = [i for s in shares for i in s]
        assert sorted(flat) == list(range(23)), (world, workers_per_rank)
    with pytest.raises(ValueError):
        share(10, 2, 2, 0, 1)


def test_an_iterable_epoch_with_two_workers_reads_each_file_once(tmp_path):
    dataset = HangingClipIterableDataset(clips(tmp_path), SAMPLER, decoder_options=OPTIONS, shuffle=True, seed=3)
    loader = DataLoader(dataset, batch_size=3, num_workers=2, collate_fn=collate_clips)
    for epoch in range(2):
        dataset.set_epoch(epoch)
        delivered, skipped = run_epoch(loader)
        assert delivered == collections.Counter(set(range(20)) - {CRASH, HANG})
        check_bad_ones(skipped)
    assert dataset.order() != ClipIterableDataset(clips(tmp_path), SAMPLER, shuffle=True, seed=3).order()


@pytest.mark.parametrize("persistent", [False, True])
def test_each_epoch_reads_its_own_order_with_persistent_workers_too(tmp_path, persistent):
    # Persistent workers never see set_epoch; they advance an epoch each
    # time they are resumed, so numbered epochs read order() all the same.
    dataset = ClipIterableDataset(clips(tmp_path, n=10, bad=()), SAMPLER, decoder_options=OPTIONS, shuffle=True,
                                  seed=5)
    loader = DataLoader(dataset, batch_size=None, num_workers=1, persistent_workers=persistent)
    orders = []
    for epoch in range(3):
        dataset.set_epoch(epoch)
        assert [label for _, label in loader] == dataset.order(), f"epoch {epoch}"
        orders.append(dataset.order())
    assert orders[0] != orders[1] != orders[2]


def test_an_iterable_dataset_reads_its_ranks_share(tmp_path):
    pairs = clips(tmp_path, n=10, bad=())
    for rank in range(2):
        dataset = ClipIterableDataset(pairs, SAMPLER, decoder_options=OPTIONS, rank=rank, world_size=2)
        assert dataset.indices() == list(range(rank, 10, 2))
        labels = [label for _, label in DataLoader(dataset, batch_size=None, num_workers=2)]
        assert sorted(labels) == list(range(rank, 10, 2))


def test_an_iterable_datasets_length_is_its_ranks_share(tmp_path):
    # torch sizes len(loader) from it (LR schedules, progress bars): it was
    # the whole dataset's on every rank, world_size times too many.
    pairs = clips(tmp_path, n=11, bad=())
    lengths = []
    for rank in range(2):
        dataset = ClipIterableDataset(pairs, SAMPLER, decoder_options=OPTIONS, rank=rank, world_size=2)
        lengths.append(len(dataset))
        assert len(dataset) == len(dataset.indices())
        assert len(DataLoader(dataset, batch_size=2)) == -(-len(dataset) // 2)
        assert len(dataset.order()) == 11  # the order still covers every sample
    assert lengths == [6, 5]
    assert len(ClipIterableDataset(pairs, SAMPLER, decoder_options=OPTIONS)) == 11


def test_an_iterable_dataset_can_give_every_rank_as_many(tmp_path):
    # A DistributedDataParallel step waits for every rank: ranks reading 6
    # and 5 samples leave one waiting for ever at the end of the epoch.
    # pad repeats the order's first samples (DistributedSampler's default),
    # drop_last leaves the last out; with 3 workers on each rank.
    pairs = clips(tmp_path, n=11, bad=())
    for options, expected in ((dict(pad=True), [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 0]]),
                              (dict(drop_last=True), [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]])):
        read = []
        for rank in range(2):
            dataset = ClipIterableDataset(pairs, SAMPLER, decoder_options=OPTIONS, rank=rank, world_size=2, **options)
            loader = DataLoader(dataset, batch_size=2, num_workers=3)
            labels = [label for _, labels in loader for label in labels.tolist()]
            assert sorted(labels) == sorted(expected[rank]), (options, rank)
            assert len(dataset) == len(labels) and len(loader) == 3, (options, rank)
            read.append(labels)
        assert len(read[0]) == len(read[1]), options
    # More ranks than samples: padding wraps round the order again.
    padded = [ClipIterableDataset(pairs[:2], SAMPLER, rank=r, world_size=5, pad=True).indices() for r in range(5)]
    assert padded == [[0], [1], [0], [1], [0]]
    with pytest.raises(ValueError, match="exclude each other"):
        ClipIterableDataset(pairs, SAMPLER, pad=True, drop_last=True)


def test_the_readmes_dataloader_snippet(video, tmp_path):
    paths = [video] * 5 + [str(tmp_path / "missing.mp4")]
    namespace = readme_snippets.run(readme_snippets.DATALOADER, dict(paths=paths, labels=list(range(6))))
    assert [(s.index, s.error) for s in namespace["skipped"]] == [(5, "FileNotFoundError")]
    assert tuple(namespace["clips"].shape[1:]) == (2, 8, 3, 64, 96)
