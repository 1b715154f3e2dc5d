"""Training-pipeline figures for codecvisor's Python bench: clip sampling,
DataLoader epochs and Dask jobs, each side by side with a baseline in the
same run (bench.side_by_side: rounds alternate who goes first).

- clips_at_random_indices, 8 clips x 8 frames of a 1080p and a 360p clip,
  in clips/s, against the same clips fetched by one get_frames_at call per
  clip, and against PyAV seeking to each clip and decoding forward.
- A DataLoader epoch over 200 short clips (ClipDataset, 2 random clips of
  8 frames per video) with 2 workers against 0 workers, in samples/s.
- codecvisor.dask.map_videos over 40 of them (per-video channel
  means of every 5th frame) on a LocalCluster of 2 worker processes
  against 1, in files/s.

Each result has bench's keys: ``codecvisor`` is the rate of the first side
and ``other`` that of the baseline, which ``baseline`` names.

    python3 -m codecvisor._bench_training [--rounds 3] [--quick] [--json]
"""

import argparse
import functools
import json
import logging
import sys
import tempfile
import time

import numpy as np

from . import bench
from .decoders import VideoDecoder

CLIPS, FRAMES = 8, 8
# One decoder thread on both sides: PyAV's log callback takes the GIL from
# FFmpeg's frame threads, which deadlocks when a seek makes them log.
THREADS = 1


# --- clip sampling -----------------------------------------------------------

def _draw_clips(decoder, seed):
    import torch
    from .samplers import clips_at_random_indices
    torch.manual_seed(seed)
    return clips_at_random_indices(decoder, num_clips=CLIPS, num_frames_per_clip=FRAMES)


def _clip_indices(decoder, seed):
    """The frame indices the sampler picks for `seed`, clip by clip."""
    fps = decoder.metadata.average_fps
    pts = _draw_clips(decoder, seed).pts_seconds.numpy()
    return [[int(round((p - decoder.metadata.begin_stream_seconds) * fps)) for p in clip] for clip in pts]


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


def _sampling(report, rounds, label, path):
    decoder = VideoDecoder(path, num_ffmpeg_threads=THREADS)
    seeds = iter(range(10_000))
    state = {}

    def sampler():
        state["seed"] = next(seeds)
        start = time.perf_counter()
        n = len(_draw_clips(decoder, state["seed"]))
        return n, time.perf_counter() - start

    def per_clip():
        clips = _clip_indices(decoder, state["seed"])  # the clips the sampler just drew
        start = time.perf_counter()
        for clip in clips:
            decoder.get_frames_at(clip)
        return len(clips), time.perf_counter() - start

    def pyav():
        clips = _clip_indices(decoder, state["seed"])
        start = time.perf_counter()
        n = _pyav_clips(path, clips)
        return n, time.perf_counter() - start

    # Each baseline fetches the clips of the sampler's latest draw (the same
    # round's, or the previous one's when it goes first).
    for result in bench.side_by_side(f"clips_at_random_indices {CLIPS}x{FRAMES} {label}", rounds, "clips/s",
                                     sampler, **{"per-clip get_frames_at": per_clip, "PyAV seeking": pyav}):
        _add(report, result)
    decoder.close()


# --- DataLoader epochs -----------------------------------------------------------

def _epoch(clips, workers):
    from torch.utils.data import DataLoader
    from .datasets import ClipDataset, collate_clips
    from .samplers import clips_at_random_indices
    sampler = functools.partial(clips_at_random_indices, num_clips=2, num_frames_per_clip=FRAMES)
    dataset = ClipDataset([(c, i) for i, c in enumerate(clips)], sampler,
                          decoder_options=dict(num_ffmpeg_threads=1))
    start = time.perf_counter()
    n = 0
    for batch in DataLoader(dataset, batch_size=4, num_workers=workers, collate_fn=collate_clips):
        n += len(batch.labels)
    return n, time.perf_counter() - start


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
    folder = args.folder or tempfile.mkdtemp(prefix="codecvisor-bench-")
    long_clips = {"1080p": bench.make_clip(folder, "1080p.mp4", "1920x1080", 4 if args.quick else 10),
                  "360p": bench.make_clip(folder, "360p.mp4", "640x360", 4 if args.quick else 20)}
    # 200 short clips even when quick: an epoch over fewer would time the workers' start.
    short = [bench.make_clip(folder, f"short{i:03d}.mp4", "320x240", 2, gop=25) for i in range(200)]
    for label, path in long_clips.items():
        _sampling(report, args.rounds, label, path)
    for result in bench.side_by_side(f"DataLoader epoch over {len(short)} short clips, 2 workers", args.rounds,
                                     "samples/s", lambda: _epoch(short, 2), **{"0 workers": lambda: _epoch(short, 0)}):
        _add(report, result)
    _dask(report, args.rounds, short[:40])
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m codecvisor._bench_training",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="4 s long clips instead of 10 and 20 s")
    parser.add_argument("--folder", help="where the clips are made (kept); default a new temporary folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args, dict(results=[], machine=bench.machine()))
    if args.json:
        print(json.dumps(report))
        return
    print(f"codecvisor training figures ({report['machine']}), {args.rounds} rounds; ratio = first / baseline")
    bench.print_results(report["results"])


if __name__ == "__main__":
    main()
