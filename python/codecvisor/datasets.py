"""codecvisor.datasets: torch Datasets of clips that survive bad files.

    import functools
    from torch.utils.data import DataLoader
    from codecvisor.datasets import ClipDataset, collate_clips
    from codecvisor.samplers import clips_at_random_indices

    dataset = ClipDataset([("a.mp4", 0), ("b.mp4", 1)],
                          functools.partial(clips_at_random_indices, num_clips=2, num_frames_per_clip=8),
                          decoder_options=dict(timeout=10))
    for clips, labels, skipped in DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=collate_clips):
        ...   # clips: (B, 2, 8, 3, H, W) uint8; skipped: the samples that failed

A sample is one source: its decoder is opened in the process that reads it
(a DataLoader worker, never the parent), the sampler draws its clips, and
the sample is ``(transform(clips), label)``; the decoder is closed before
the next sample.

Bad files. Reading a source can fail on the file (missing, corrupt:
FileNotFoundError, VideoError) or on the backend (it crashed twice on the
request, a poison file; it hung past the decoder's ``timeout`` twice; it is
quarantined: BackendError). With ``on_error="skip"`` (the default) such a
sample becomes a ``Skipped`` record, delivered in its place through the
DataLoader, so the count of skipped samples is seen where the training loop
runs, whichever worker or rank read them; ``collate_clips`` sets them
apart in each batch. With ``on_error="raise"`` the exception reaches the
training loop (the DataLoader re-raises it). Anything else, such as a
sampler argument the video cannot satisfy, always raises.

Sharding. ``ClipDataset`` is map-style: the DataLoader spreads its indices
over workers, and a ``DistributedSampler`` over ranks. ``ClipIterableDataset``
shards itself: rank r of a world of w (``torch.distributed`` when
initialised) reads the r-th of every w sources of the epoch's order, and
worker k of n of that rank's DataLoader the k-th of every n of those. Each
source is read by exactly one worker of one rank per epoch (but with
``pad``, which repeats some on another rank, or ``drop_last``, which leaves
some out).
"""

from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

try:
    import torch
    import torch.utils.data
    from torch.utils.data._utils.collate import collate, default_collate_fn_map
except ImportError as e:
    raise ImportError("codecvisor.datasets needs torch (its datasets are torch.utils.data datasets); "
                      "codecvisor.decoders works without it, returning numpy arrays") from e

from . import _batch_pool, _reading, _shared_batch
from ._frame import FrameBatch
from ._reading import Skipped
from .decoders import VideoDecoder


class ClipBatch(NamedTuple):
    """What ``collate_clips`` makes of a batch: the good samples' clips and
    labels, collated as torch's default collate does (None when every
    sample of the batch was skipped), and the skipped ones."""

    clips: Any
    labels: Any
    skipped: List[Skipped]


def _reduce_clip_batch(batch: ClipBatch):
    # Sent from a DataLoader worker to the training process: clips stacked
    # into one of the worker's reusable buffers go as that buffer and a
    # lease (_batch_pool). Only multiprocessing's pickler does this; copies
    # and other pickles of a batch are plain.
    sent = _batch_pool.sendable(batch.clips)
    return ClipBatch, (batch.clips if sent is None else sent, batch.labels, batch.skipped)


ForkingPickler.register(ClipBatch, _reduce_clip_batch)


def _in_worker(tensors) -> bool:
    return torch.utils.data.get_worker_info() is not None and tensors[0].device.type == "cpu"


def _stack(tensors, *, collate_fn_map=None):
    # In a worker the batch goes to the training process in shared memory,
    # new for every batch: populated in one call rather than page by page.
    return _shared_batch.stack_shared(tensors) if _in_worker(tensors) else torch.stack(tensors, 0)


_COLLATE_FNS = {**default_collate_fn_map, torch.Tensor: _stack}


def collate_clips(samples: Sequence[Any]) -> ClipBatch:
    """collate_fn for a DataLoader over a clip dataset: stacks the good
    samples as torch's default collate does and lists the skipped ones."""
    skipped = [s for s in samples if isinstance(s, Skipped)]
    good = [s for s in samples if not isinstance(s, Skipped)]
    if not good:
        return ClipBatch(None, None, skipped)
    if all(isinstance(s, (tuple, list)) and len(s) == 2 and isinstance(s[0], torch.Tensor) for s in good) \
            and _in_worker([s[0] for s in good]):
        # The clips of a worker's batch go into one of its reusable buffers.
        clips = _batch_pool.stack([s[0] for s in good])
        labels = collate([s[1] for s in good], collate_fn_map=_COLLATE_FNS)
        return ClipBatch(clips, labels, skipped)
    clips, labels = collate(good, collate_fn_map=_COLLATE_FNS)
    return ClipBatch(clips, labels, skipped)


def clip_data(clips: FrameBatch):
    """The default transform: the clips' uint8 tensor alone."""
    return clips.data


class _ClipReader:
    """Reads one sample: open, sample, close; a bad file per `on_error`."""

    def __init__(self, samples: Sequence[Tuple[Any, Any]], sampler: Callable[[VideoDecoder], FrameBatch], *,
                 transform: Callable[[FrameBatch], Any] = clip_data, on_error: str = "skip",
                 decoder_options: Optional[dict] = None):
        _reading.check_on_error(on_error)
        if not callable(sampler):
            raise TypeError(f"sampler should be a callable taking a VideoDecoder, not {type(sampler).__name__}")
        self.samples = list(samples)
        for i, sample in enumerate(self.samples):
            if not isinstance(sample, (tuple, list)) or len(sample) != 2:
                raise ValueError(f"samples[{i}] should be a (source, label) pair, not {sample!r}")
        self.sampler = sampler
        self.transform = transform
        self.on_error = on_error
        self.decoder_options = dict(decoder_options or {})

    def __len__(self) -> int:
        return len(self.samples)

    def _read(self, index: int):
        source, label = self.samples[index]
        clips = _reading.read(index, source, self.sampler, self.on_error, self.decoder_options)
        return clips if isinstance(clips, Skipped) else (self.transform(clips), label)


class ClipDataset(_ClipReader, torch.utils.data.Dataset):
    """A map-style dataset of clips over (source, label) pairs.

    Args:
        samples: (source, label) pairs; a source is anything VideoDecoder
            opens (a path, bytes, a uint8 tensor).
        sampler: called with each source's decoder, returns its clips (a
            FrameBatch), e.g. ``functools.partial(clips_at_random_indices,
            num_clips=2, num_frames_per_clip=8)``. Random samplers draw from
            torch's generator, which the DataLoader seeds in each worker.
        transform: turns the clips into the sample's first element; default
            their data tensor.
        on_error: "skip" (a bad file becomes a Skipped record) or "raise".
        decoder_options: VideoDecoder keyword arguments (device, seek_mode,
            timeout, num_ffmpeg_threads, dimension_order).

    ``dataset[i]`` is ``(transform(clips), label)``, or a Skipped record.
    """

    def __getitem__(self, index: int):
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range for {len(self)} samples")
        return self._read(index % len(self))


def _distributed_rank_and_world() -> Optional[Tuple[int, int]]:
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


def share(num_samples: int, rank: int, world_size: int, worker: int, num_workers: int,
          order: Optional[Sequence[int]] = None) -> List[int]:
    """The indices that worker `worker` of `num_workers` on rank `rank` of
    `world_size` reads, taken from `order` (default 0..num_samples-1): the
    rank's every world_size-th, then the worker's every num_workers-th of
    those. The shares of all workers of all ranks are disjoint and cover
    `order`, whatever number of workers each rank runs."""
    if not (0 <= rank < world_size and 0 <= worker < num_workers):
        raise ValueError(f"rank {rank} of {world_size}, worker {worker} of {num_workers}: out of range")
    order = list(range(num_samples)) if order is None else list(order)
    return order[rank::world_size][worker::num_workers]


class ClipIterableDataset(_ClipReader, torch.utils.data.IterableDataset):
    """An iterable dataset of clips that shards itself over ranks and
    DataLoader workers: each source is read by exactly one worker of one
    rank per epoch (unless ``pad`` or ``drop_last``). Arguments as
    ``ClipDataset``'s, plus:

        shuffle: visit the sources in a new order each epoch, the same on
            every rank (a permutation seeded by ``seed + epoch``).
        seed: the shuffle's seed.
        rank, world_size: this process's place; default that of the
            initialised ``torch.distributed`` process group (captured when
            the dataset is pickled to spawned workers), else 0 of 1.
        pad: give every rank the same number of samples, as
            ``DistributedSampler`` does by default: the order is extended
            with its own first samples, which another rank reads too.
        drop_last: give every rank the same number of samples by leaving
            out the order's last ``len(samples) % world_size``.

    Call ``set_epoch(epoch)`` before each epoch when shuffling. Without
    ``pad`` or ``drop_last``, ranks get shares that differ in size by at
    most one, so a DistributedDataParallel job, whose every step waits for
    all ranks, needs one of them. A DataLoader's persistent
    workers (``persistent_workers=True``) keep the copy of the dataset they
    started with and never see a later ``set_epoch``: each of them takes
    the epoch set when they started, then one more for every epoch after,
    so epochs numbered one after another give every worker the order
    ``order()`` gives in the training process.
    """

    def __init__(self, samples, sampler, *, transform=clip_data, on_error="skip", decoder_options=None,
                 shuffle: bool = False, seed: int = 0, rank: Optional[int] = None,
                 world_size: Optional[int] = None, pad: bool = False, drop_last: bool = False):
        super().__init__(samples, sampler, transform=transform, on_error=on_error, decoder_options=decoder_options)
        if (rank is None) != (world_size is None):
            raise ValueError("pass both rank and world_size, or neither")
        if pad and drop_last:
            raise ValueError("pad and drop_last exclude each other: pad repeats samples, drop_last leaves some out")
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self.pad, self.drop_last = pad, drop_last
        self._place = None if rank is None else (rank, world_size)
        self._inherited_place = None
        self._worker_epochs = 0  # epochs this copy has read in a DataLoader worker

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _epoch(self) -> int:
        # In a worker, the epochs this copy read before this one: a
        # persistent worker's copy reads every epoch, a new worker's none.
        in_worker = torch.utils.data.get_worker_info() is not None
        return self.epoch + (self._worker_epochs if in_worker else 0)

    def rank_and_world(self) -> Tuple[int, int]:
        return self._place or _distributed_rank_and_world() or self._inherited_place or (0, 1)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_inherited_place"] = self.rank_and_world()  # a spawned worker has no process group
        return state

    def order(self) -> List[int]:
        """This epoch's order of all sample indices (the same on every rank)."""
        if not self.shuffle:
            return list(range(len(self.samples)))
        generator = torch.Generator().manual_seed(self.seed + self._epoch())
        return torch.randperm(len(self.samples), generator=generator).tolist()

    def _ranks_order(self, order: List[int], world: int) -> List[int]:
        """`order` made a multiple of `world` long by pad or drop_last."""
        over = len(order) % world
        if self.drop_last:
            return order[:len(order) - over]
        if self.pad and over and order:
            missing = world - over
            return order + (order * (missing // len(order) + 1))[:missing]
        return order

    def indices(self) -> List[int]:
        """The sample indices this process (a worker, or the main process
        without workers) reads this epoch."""
        rank, world = self.rank_and_world()
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        order = self._ranks_order(self.order(), world)
        return share(len(order), rank, world, worker, workers, order)

    def __len__(self) -> int:
        """The samples this rank reads an epoch (its workers together), as
        torch sizes ``len(loader)`` from it: its every world_size-th."""
        rank, world = self.rank_and_world()
        return len(range(rank, len(self._ranks_order(list(range(len(self.samples))), world)), world))

    def __iter__(self) -> Iterator[Any]:
        indices = self.indices()
        if torch.utils.data.get_worker_info() is not None:
            self._worker_epochs += 1
        for index in indices:
            yield self._read(index)


__all__ = ["ClipBatch", "ClipDataset", "ClipIterableDataset", "Skipped", "clip_data", "collate_clips", "share"]
