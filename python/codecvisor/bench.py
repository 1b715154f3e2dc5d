"""python3 -m codecvisor.bench: codecvisor's Python package against PyAV
doing the same job in the same process, side by side in one run, on clips
it makes with the ffmpeg CLI.

Each figure is a ratio codecvisor / PyAV of throughput, with its quartiles
over rounds (each round runs both sides, in alternating order). The decoder
thread setting is the same on both sides: FFmpeg's automatic count (0) and 1
(the DataLoader figures use 1). Figures: all frames of a 1080p and a 360p
H.264 clip; 10 frames at random indices, exact (PyAV seeks to the keyframe
before each and decodes forward); short 2 s clips opened and read 8 frames
each, in both seek modes; a DataLoader over those clips with 0 and 2
workers. Also the peak RSS of this process.

    python3 -m codecvisor.bench [--rounds 5] [--json] [--quick]
"""

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from .decoders import VideoDecoder


def make_clip(folder, name, size, seconds, gop=250):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc2=size={size}:rate=25", "-t", str(seconds), "-c:v", "libx264", "-preset", "veryfast",
                        "-g", str(gop), "-pix_fmt", "yuv420p", path], check=True)
    return path


# --- PyAV, doing what each codecvisor call does -------------------------

def pyav_open(path, threads):
    import av
    container = av.open(path)
    stream = container.streams.video[0]
    stream.thread_type = "AUTO" if threads != 1 else "SLICE"
    stream.thread_count = threads
    return container, stream


def pyav_all_frames(path, threads):
    container, stream = pyav_open(path, threads)
    frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    container.close()
    return len(frames)


def pyav_frames_at(path, indices, threads):
    """Exact frames by index: seek to the keyframe before each, decode forward."""
    container, stream = pyav_open(path, threads)
    fps = stream.average_rate
    tb = stream.time_base
    out = []
    for index in sorted(indices):
        target_pts = int(round(index / fps / tb))
        container.seek(target_pts, stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            if frame.pts >= target_pts:
                out.append(frame.to_ndarray(format="rgb24"))
                break
    container.close()
    return len(out)


# --- codecvisor ----------------------------------------------------------

def cv_all_frames(path, threads):
    d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
    n = len(d.get_frames_in_range(0, len(d)))
    d.close()
    return n


def cv_frames_at(path, indices, threads, seek_mode="exact"):
    d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC", seek_mode=seek_mode)
    n = len(d.get_frames_at(indices))
    d.close()
    return n


class CodecvisorClips:
    """A map-style dataset: sample i is 8 frames of clip i (NCHW tensor)."""

    def __init__(self, clips):
        self.clips = clips

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        return VideoDecoder(self.clips[i], num_ffmpeg_threads=1).get_frames_at(EIGHT).data


class PyAVClips(CodecvisorClips):
    def __getitem__(self, i):
        container, stream = pyav_open(self.clips[i], 1)
        frames = [f.to_ndarray(format="rgb24") for n, f in zip(range(EIGHT[-1] + 1), container.decode(stream))
                  if n in EIGHT]
        container.close()
        return np.stack(frames).transpose(0, 3, 1, 2)


def load_all(dataset, workers):
    from torch.utils.data import DataLoader
    n = 0
    for batch in DataLoader(dataset, batch_size=None, num_workers=workers):
        n += 1
    return n


EIGHT = [0, 7, 14, 21, 28, 35, 42, 49]


def timed(fn, *args):
    start = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - start


def quartiles(xs):
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def side_by_side(name, rounds, ours, theirs, unit):
    """Runs both `rounds` times, alternating who goes first; work per call is
    the count each returns (frames, files)."""
    ratios, ours_rates, theirs_rates = [], [], []
    for r in range(rounds):
        pair = [("ours", ours), ("theirs", theirs)]
        if r % 2:
            pair.reverse()
        rates = {}
        for who, fn in pair:
            gc.collect()
            n, seconds = fn()
            rates[who] = n / seconds
        ours_rates.append(rates["ours"])
        theirs_rates.append(rates["theirs"])
        ratios.append(rates["ours"] / rates["theirs"])
    q1, median, q3 = quartiles(ratios)
    return dict(figure=name, unit=unit, codecvisor=statistics.median(ours_rates), pyav=statistics.median(theirs_rates),
                ratio=median, ratio_q1=q1, ratio_q3=q3, rounds=rounds)


def run(args):
    folder = args.folder or tempfile.mkdtemp(prefix="codecvisor-bench-")
    clips = {"1080p": make_clip(folder, "1080p.mp4", "1920x1080", 4 if args.quick else 10),
             "360p": make_clip(folder, "360p.mp4", "640x360", 4 if args.quick else 20)}
    short = [make_clip(folder, f"short{i:03d}.mp4", "320x240", 2, gop=25) for i in range(20 if args.quick else 200)]
    results = []
    for threads in (0, 1):
        for label, clip in clips.items():
            results.append(side_by_side(f"all frames {label}, threads={threads}", args.rounds,
                                        lambda: timed(cv_all_frames, clip, threads),
                                        lambda: timed(pyav_all_frames, clip, threads), "frames/s"))
        n = VideoDecoder(clips["1080p"]).metadata.num_frames
        rng = random.Random(1234)
        indices = sorted(rng.sample(range(n), 10))
        results.append(side_by_side(f"10 random frames 1080p exact, threads={threads}", args.rounds,
                                    lambda: timed(cv_frames_at, clips["1080p"], indices, threads),
                                    lambda: timed(pyav_frames_at, clips["1080p"], indices, threads), "frames/s"))
        eight = EIGHT
        for mode in ("exact", "approximate"):
            def ours(mode=mode):
                start = time.perf_counter()
                for c in short:
                    cv_frames_at(c, eight, threads, mode)
                return len(short), time.perf_counter() - start

            def theirs():
                start = time.perf_counter()
                for c in short:
                    pyav_frames_at(c, eight, threads)
                return len(short), time.perf_counter() - start

            results.append(side_by_side(f"{len(short)} short clips, open + 8 frames, {mode}, threads={threads}",
                                        args.rounds, ours, theirs, "files/s"))
    for workers in (0, 2):
        results.append(side_by_side(f"DataLoader over {len(short)} short clips, 8 frames each, {workers} workers",
                                    args.rounds, lambda: timed(load_all, CodecvisorClips(short), workers),
                                    lambda: timed(load_all, PyAVClips(short), workers), "samples/s"))
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(results=results, peak_rss_mib=peak_rss_mib, machine=machine())


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} CPUs, {model}, kernel {os.uname().release}"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m codecvisor.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="shorter clips and 20 short clips instead of 200")
    parser.add_argument("--folder", help="where the clips are made (kept); default a new temporary folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args)
    if args.json:
        print(json.dumps(report))
        return
    print(f"codecvisor vs PyAV ({report['machine']}), {args.rounds} rounds; ratio = codecvisor / PyAV")
    print(f"{'figure':<58} {'codecvisor':>11} {'PyAV':>9} {'ratio':>6}  quartiles")
    for r in report["results"]:
        print(f"{r['figure']:<58} {r['codecvisor']:>11.1f} {r['pyav']:>9.1f} {r['ratio']:>6.3f}  "
              f"[{r['ratio_q1']:.3f}, {r['ratio_q3']:.3f}] {r['unit']}")
    print(f"peak RSS of this process: {report['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
