"""Training-pipeline figures for codecvisor's Python bench: clip sampling,
DataLoader epochs and Dask jobs, each side by side with a baseline in the
same run (bench.side_by_side: rounds alternate who goes first).

- clips_at_random_indices, 8 clips x 8 frames of a 1080p and a 360p clip,
  in clips/s, against the same clips fetched by one get_frames_at call per
  clip, and against PyAV seeking to each clip and decoding forward.
- A DataLoader epoch over 200 short clips (ClipDataset, 2 random clips of
  8 frames per video) with 2 workers against 0 workers, in samples/s.
- The CPU of stacking one such batch into a new shared tensor (torch's
  collate in a worker), the same with its pages made first, into memory
  written before, and into a reused pool buffer (collate_clips in a
  worker).
- codecvisor.dask.map_videos over 40 of them (per-video channel
  means of every 5th frame) on a LocalCluster of 2 worker processes
  against 1, in files/s.

Each result has bench's keys: ``codecvisor`` is the rate of the first side
and ``other`` that of the baseline, which ``baseline`` names. For the
sampler against per-clip calls and for the DataLoader epochs,
``cpu_seconds`` also gives the CPU seconds a call or an epoch takes in
each kind of process: the main one, the DataLoader workers, and the
backends (the codecvisor-backend children of either), from /proc (the
median over rounds).

    python3 -m codecvisor._bench_training [--rounds 3] [--quick] [--figures sampling,stack,epoch,dask] [--json]
"""

import argparse
import functools
import json
import logging
import statistics
import sys
import tempfile
import time

import numpy as np

from . import bench
from .decoders import VideoDecoder

CLIPS, FRAMES = 8, 8
EPOCH_CLIPS = 2  # clips per sample in the DataLoader epoch
SAMPLED = ("1080p", "360p")  # of bench.CLIP_SIZES
FIGURES = ("sampling", "stack", "epoch", "dask")
# One decoder thread on both sides: PyAV's log callback takes the GIL from
# FFmpeg's frame threads, which deadlocks when a seek makes them log.
THREADS = 1


# --- clip sampling -----------------------------------------------------------

def _clips(decoder, seed):
    """The frame indices clips_at_random_indices fetches after
    torch.manual_seed(seed), clip by clip, found without decoding."""
    import torch
    from .samplers import _index_positions
    torch.manual_seed(seed)
    flat = _index_positions(decoder, random=True, num_clips=CLIPS, num_frames_per_clip=FRAMES)
    return [flat[c * FRAMES:(c + 1) * FRAMES] for c in range(CLIPS)]


def _pyav_clips(path, clips):
    """Each clip by seeking to the keyframe before its first frame and decoding forward."""
    container, stream = bench.pyav_open(path, THREADS)
    fps, tb = stream.average_rate, stream.time_base
    got = 0
    for clip in clips:
        wanted = {int(round(i / fps / tb)) for i in clip}
        container.seek(min(wanted), stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            if frame.pts in wanted:
                frame.to_ndarray(format="rgb24")
                wanted.discard(frame.pts)
            if not wanted or frame.pts > max(wanted):
                break
        got += 1
    container.close()
    return got


def _sampler_side(path):
    """Round k: clips_at_random_indices after torch.manual_seed(k)."""
    import torch
    from .samplers import clips_at_random_indices
    decoder = VideoDecoder(path, num_ffmpeg_threads=THREADS)
    seeds = iter(range(10_000))

    def side():
        torch.manual_seed(next(seeds))
        start = time.perf_counter()
        n = len(clips_at_random_indices(decoder, num_clips=CLIPS, num_frames_per_clip=FRAMES))
        return n, time.perf_counter() - start
    return side, decoder


def _per_clip_side(path):
    """Round k: the clips of seed k, one get_frames_at call each."""
    decoder = VideoDecoder(path, num_ffmpeg_threads=THREADS)
    seeds = iter(range(10_000))

    def side():
        clips = _clips(decoder, next(seeds))
        start = time.perf_counter()
        for clip in clips:
            decoder.get_frames_at(clip)
        return len(clips), time.perf_counter() - start
    return side, decoder


def _pyav_side(path, planner):
    """Round k: the clips of seed k, PyAV seeking to each."""
    seeds = iter(range(10_000))

    def side():
        clips = _clips(planner, next(seeds))
        start = time.perf_counter()
        n = _pyav_clips(path, clips)
        return n, time.perf_counter() - start
    return side


def _sampling(report, rounds, label, path):
    # Round k of every side fetches the same clips (seed k), each side from
    # its own decoder, so that no side finds frames another side just decoded.
    sampler, sampler_decoder = _sampler_side(path)
    per_clip, per_clip_decoder = _per_clip_side(path)
    figure = f"clips_at_random_indices {CLIPS}x{FRAMES} {label}"
    cpu = {"clips_at_random_indices": [], "per-clip get_frames_at": []}
    for result in bench.side_by_side(figure, rounds, "clips/s", bench.with_cpu(sampler, cpu["clips_at_random_indices"]),
                                     **{"per-clip get_frames_at": bench.with_cpu(per_clip, cpu["per-clip get_frames_at"]),
                                        "PyAV seeking": _pyav_side(path, per_clip_decoder)}):
        _add(report, result)
    _add_cpu(report, f"{figure}, one call", cpu)
    sampler_decoder.close()
    per_clip_decoder.close()


# --- CPU per kind of process ----------------------------------------------------

def _add_cpu(report, figure, cpu):
    """Records the median CPU seconds per kind of process of each side in `cpu` ({side: log})."""
    report.setdefault("cpu_seconds", {})[figure] = {
        side: {kind: statistics.median(r[kind] for r in log) for kind in log[0]} for side, log in cpu.items()}


# --- DataLoader epochs -----------------------------------------------------------

def _epoch_side(clips, workers):
    """Each call times one epoch of the same DataLoader. Its workers are
    persistent and started, with their hosts and backends, by an untimed
    first epoch: the figure is the steady epoch of a training run, not the
    workers' start."""
    from torch.utils.data import DataLoader
    from .datasets import ClipDataset, collate_clips
    from .samplers import clips_at_random_indices
    sampler = functools.partial(clips_at_random_indices, num_clips=EPOCH_CLIPS, num_frames_per_clip=FRAMES)
    dataset = ClipDataset([(c, i) for i, c in enumerate(clips)], sampler,
                          decoder_options=dict(num_ffmpeg_threads=1))
    loader = DataLoader(dataset, batch_size=4, num_workers=workers, collate_fn=collate_clips,
                        persistent_workers=workers > 0)

    def epoch():
        start = time.perf_counter()
        n = 0
        for batch in loader:
            n += len(batch.labels)
        return n, time.perf_counter() - start
    epoch()
    return epoch


def _epochs(report, rounds, clips):
    figure = f"DataLoader epoch over {len(clips)} short clips, 2 workers"
    cpu = {"2 workers": [], "0 workers": []}
    for result in bench.side_by_side(figure, rounds, "samples/s", bench.with_cpu(_epoch_side(clips, 2), cpu["2 workers"]),
                                     **{"0 workers": bench.with_cpu(_epoch_side(clips, 0), cpu["0 workers"])}):
        _add(report, result)
    _add_cpu(report, "DataLoader epoch", cpu)


def _stack_cpu(report, rounds):
    """CPU milliseconds of stacking one epoch batch (4 samples of 2 clips of
    8 frames of 320x240) the ways a DataLoader can: into a new shared tensor
    (torch's collate in a worker), the same with its pages made first,
    into memory written before, and into a reused pool buffer
    (collate_clips in a worker: _batch_pool)."""
    import torch
    from . import _batch_pool, _shared_batch
    samples = [torch.full((EPOCH_CLIPS, FRAMES, 3, 240, 320), k, dtype=torch.uint8) for k in range(4)]

    def new_shared():
        storage = samples[0].storage()._new_shared(len(samples) * samples[0].numel())
        return samples[0].new(storage).resize_(len(samples), *samples[0].shape)

    def populated():
        out = new_shared()
        _shared_batch.populate(out.data_ptr(), out.numel())
        return out

    written = torch.stack(samples)
    ways = {"new shared tensor": new_shared, "new shared tensor, pages made first": populated,
            "memory written before": lambda: written,
            "a reused pool buffer (collate_clips in a worker)": None}
    cpu = {way: [] for way in ways}
    for _ in range(rounds * 10):
        for way, out in ways.items():
            start = time.process_time()
            if out is None:
                _batch_pool.stack(samples)  # the buffer is free again when its batch dies
            else:
                torch.stack(samples, 0, out=out())
            cpu[way].append((time.process_time() - start) * 1e3)
    report["stack_cpu_ms"] = {way: statistics.median(ms) for way, ms in cpu.items()}


# --- Dask -------------------------------------------------------------------------

def _channel_means(decoder):
    return decoder[::5].double().mean(dim=(0, 2, 3)).numpy()


def _dask_rate(clips, workers, rounds):
    from distributed import Client, LocalCluster
    from .dask import map_videos
    rates = []
    with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        map_videos(_channel_means, clips[:workers * 2], client=client)  # imports and backends, not timed
        for _ in range(rounds):
            start = time.perf_counter()
            map_videos(_channel_means, clips, client=client, files_per_partition=2, warm=False)  # warmed above
            rates.append(len(clips) / (time.perf_counter() - start))
    return rates


def _dask(report, rounds, clips):
    one, two = _dask_rate(clips, 1, rounds), _dask_rate(clips, 2, rounds)
    ratios = [b / a for a, b in zip(one, two)]
    q1, median, q3 = bench.quartiles(ratios)
    _add(report, dict(figure=f"Dask map_videos over {len(clips)} short clips, 2 workers", baseline="1 worker",
                      unit="files/s", codecvisor=float(np.median(two)), other=float(np.median(one)), ratio=median,
                      ratio_q1=q1, ratio_q3=q3, rounds=rounds))


def _add(report, result):
    report["results"].append(result)
    print(f"{result['figure']}: {result['ratio']:.3f}", file=sys.stderr, flush=True)  # progress


def run(args, report):
    """Appends the training figures to report["results"]; args as bench's
    (rounds, quick, folder)."""
    figures = getattr(args, "figures", None) or FIGURES
    folder = args.folder or tempfile.mkdtemp(prefix="codecvisor-bench-")
    if "sampling" in figures:
        for label, size, seconds in bench.CLIP_SIZES:
            if label in SAMPLED:
                path = bench.make_clip(folder, f"{label}.mp4", size, 4 if args.quick else seconds)
                _sampling(report, args.rounds, label, path)
    if "stack" in figures:
        _stack_cpu(report, args.rounds)
    # 200 short clips even when quick: an epoch over fewer would time the workers' start.
    if "epoch" in figures or "dask" in figures:
        short = [bench.make_clip(folder, f"short{i:03d}.mp4", "320x240", 2, gop=25) for i in range(200)]
    if "epoch" in figures:
        _epochs(report, args.rounds, short)
    if "dask" in figures:
        _dask(report, args.rounds, short[:40])
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m codecvisor._bench_training",
                                     description=(__doc__ or "").split("\n\n")[0])  # none under -OO
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="4 s long clips instead of 10 and 20 s")
    parser.add_argument("--folder", help="where the clips are made (kept); default a new temporary folder")
    parser.add_argument("--figures", type=lambda v: v.split(","), default=FIGURES,
                        help="which, of " + ",".join(FIGURES) + " (default all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args, dict(results=[], machine=bench.machine()))
    if args.json:
        print(json.dumps(report))
        return
    print(f"codecvisor training figures ({report['machine']}), {args.rounds} rounds; ratio = first / baseline")
    if report["results"]:
        bench.print_results(report["results"])
    for way, ms in report.get("stack_cpu_ms", {}).items():
        print(f"stacking a DataLoader batch ({EPOCH_CLIPS}x{FRAMES} frames of 320x240 x 4) into {way}: "
              f"{ms:.1f} ms of CPU (median)")
    if report.get("cpu_seconds"):
        print("CPU seconds (median over rounds) by kind of process: main (this one), DataLoader workers, backends")
    for figure, sides in report.get("cpu_seconds", {}).items():
        for side, kinds in sides.items():
            print(f"  {figure}, {side}: " + ", ".join(f"{kind} {seconds:.2f}" for kind, seconds in kinds.items())
                  + f"; total {sum(kinds.values()):.2f}")


if __name__ == "__main__":
    main()
