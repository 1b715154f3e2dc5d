"""python3 -m codecvisor.bench: codecvisor's Python package against PyAV
doing the same job in the same process, and against codecvisor's C++
in-process decoder, side by side in one run, on clips it makes with the
ffmpeg CLI.

Each figure is a ratio of throughputs, codecvisor / baseline, with its
quartiles over rounds (each round runs every side, in rotating order,
after one untimed warm-up run of each). The
decoder thread setting is the same on every side: FFmpeg's automatic count
(0) and 1 (the DataLoader figures use 1). Figures: all frames of a 1080p and
a 360p H.264 clip, against PyAV and against the C++ in-process decoder (the
cpu backend's code linked into `codecvisor-decode-inprocess`, no sandbox,
no channel, every frame decoded straight into memory allocated as a
batch's is, base/batch_memory: the job with nothing but the decoder); 10 frames at random
indices, exact (PyAV seeks to the keyframe before each and decodes
forward); short 2 s clips opened and read 8 frames each, in both seek
modes; a DataLoader over those clips with 0 and 2 workers; two Python
threads each decoding the 360p clip against one thread doing it twice (the
GIL is released while a backend decodes); a new decoder opened and frame 0
read, 5 times, on the 1080p clip, against PyAV and the C++ in-process
decoder (`--frames 1`). Also the peak RSS of this process, and for the
all-frames figures the CPU per frame of this process (the host), of its
backend processes (from /proc, in clock ticks) and of the C++ in-process
decoder (its clocks stop before it frees its decoder and frames, where
codecvisor's side includes closing and dropping the batch), so that the
boundary's cost shows as CPU, not only as speed.

    python3 -m codecvisor.bench [--rounds 5] [--json] [--quick] [--inprocess PATH] [--training]
                                [--sizes 1080p,360p] [--all-frames-only]
"""

import argparse
import functools
import gc
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import tempfile
import threading
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

@functools.cache
def _pyav_logging_off_frame_threads():
    # PyAV's own log callback takes the GIL on FFmpeg's threads: one that
    # logs while the calling thread holds the GIL and waits for it (a seek
    # with frame threads) deadlocks. FFmpeg's default callback, errors only.
    import av.logging
    av.logging.set_level(av.logging.ERROR)
    av.logging.restore_default_callback()


def pyav_open(path, threads):
    import av
    _pyav_logging_off_frame_threads()
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


def pyav_first_frames(path, threads, opens):
    for _ in range(opens):
        container, stream = pyav_open(path, threads)
        next(container.decode(stream)).to_ndarray(format="rgb24")
        container.close()
    return opens


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


# --- CPU per kind of process -------------------------------------------

def cpu_seconds(pid):
    """User + system CPU seconds process `pid` has used (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def processes():
    """{kind: [pid]} for this process ("main"), its DataLoader workers and
    the backend processes of either ("backends"): this process's backends
    as its host knows them, its other children as workers, and the
    workers' children as their backends (a worker starts no other process).
    No process name is matched: a backend's depends on how the kernel names
    a process started with execveat."""
    parent_of = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:  # gone
            continue
        parent_of[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    main = os.getpid()
    from .backends import list as list_backends
    own = {b.pid for b in list_backends() if b.pid}
    workers = [p for p, parent in parent_of.items() if parent == main and p not in own]
    backends = sorted(own) + [p for p, parent in parent_of.items() if parent in workers]
    return dict(main=[main], workers=workers, backends=backends)


def with_cpu(side, log):
    """`side`, also appending to `log` the CPU seconds each call took per
    kind of process (processes()): this one's from its own clock (all its
    threads, finer than /proc's ticks), started after the others' counters
    are read so that reading them is not counted as its work."""
    def run():
        pids = processes()
        before = {kind: [cpu_seconds(p) for p in pids[kind]] for kind in ("workers", "backends")}
        main0 = time.process_time()
        result = side()
        main = time.process_time() - main0
        log.append(dict(main=main, **{kind: sum(cpu_seconds(p) - b for p, b in zip(pids[kind], before[kind]))
                                      for kind in before}))
        return result
    return run


# --- codecvisor ----------------------------------------------------------

def cv_all_frames(path, threads):
    d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
    n = len(d.get_frames_in_range(0, len(d)))
    d.close()
    return n


def cv_first_frames(path, threads, opens):
    """Opens a new decoder and reads frame 0, `opens` times."""
    for _ in range(opens):
        with VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC") as d:
            d[0]
    return opens


def cv_frames_at(path, indices, threads, seek_mode="exact"):
    d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC", seek_mode=seek_mode)
    n = len(d.get_frames_at(indices))
    d.close()
    return n


# --- the C++ in-process decoder ----------------------------------------

def find_inprocess(explicit):
    """The codecvisor-decode-inprocess binary: --inprocess, else
    $CODECVISOR_DECODE_INPROCESS, else next to the runner of the install
    this package belongs to (PREFIX/lib/python3/site-packages/codecvisor ->
    PREFIX/libexec/codecvisor), else None."""
    if explicit:
        return explicit
    if os.environ.get("CODECVISOR_DECODE_INPROCESS"):
        return os.environ["CODECVISOR_DECODE_INPROCESS"]
    prefix = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))
    candidate = os.path.join(prefix, "libexec", "codecvisor", "codecvisor-decode-inprocess")
    return candidate if os.access(candidate, os.X_OK) else None


def cpp_all_frames(binary, path, frames, threads, cpu_log=None):
    """Runs the in-process decoder on frames [0, frames), keeping every frame
    in memory allocated as a batch's is (the job codecvisor does here);
    returns (frames, seconds) as it timed them (open, memory and decode, not
    its start), and appends to `cpu_log` the CPU milliseconds per frame its
    threads used in that time."""
    # A sanitizer runtime preloaded into this Python must not reach the
    # binary, which carries its own.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.run([binary, path, "--frames", str(frames), "--threads", str(threads),
                          "--buffers", str(frames)], check=True,
                         capture_output=True, text=True, env=env).stdout
    report = json.loads(out)
    if cpu_log is not None:
        cpu_log.append(1000 * report["cpu_seconds"] / report["frames"])
    return report["frames"], report["seconds"]


def cpp_first_frames(binary, path, threads, opens):
    """`opens` runs of the in-process decoder on frame 0: (opens, the
    seconds they timed: open, memory and the frame, each after its own
    untimed warm-up open)."""
    seconds = sum(cpp_all_frames(binary, path, 1, threads)[1] for _ in range(opens))
    return opens, seconds


def two_threads(path, threads):
    """The clip decoded twice, by two Python threads at once."""
    counts = [0, 0]

    def work(i):
        counts[i] = cv_all_frames(path, threads)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts)


def one_thread_twice(path, threads):
    return cv_all_frames(path, threads) + cv_all_frames(path, threads)


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
OPENS = 5  # decoders opened per round in the open + frame 0 figure
# The all-frames clips: label, size, length in seconds.
CLIP_SIZES = [("1080p", "1920x1080", 10), ("360p", "640x360", 20), ("96x64", "96x64", 4)]


def timed(fn, *args):
    start = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - start


def quartiles(xs):
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def side_by_side(name, rounds, unit, ours, **baselines):
    """Runs `ours` and each baseline `rounds` times, rotating who goes first;
    each returns (work done, seconds). One result per baseline: the ratio
    ours / baseline of work per second, with its quartiles over rounds."""
    sides = [("codecvisor", ours)] + list(baselines.items())
    rates = {who: [] for who, _ in sides}
    # One untimed run of each side first: the first use of fresh memory in
    # a process can cost seconds per GB on a VM, and the C++ in-process
    # decoder warms itself up the same way before its clock starts.
    for _, fn in sides:
        fn()
    for r in range(rounds):
        order = sides[r % len(sides):] + sides[:r % len(sides)]
        for who, fn in order:
            gc.collect()
            n, seconds = fn()
            rates[who].append(n / seconds)
    results = []
    for who in baselines:
        ratios = [a / b for a, b in zip(rates["codecvisor"], rates[who])]
        q1, median, q3 = quartiles(ratios)
        results.append(dict(figure=name, baseline=who, unit=unit, codecvisor=statistics.median(rates["codecvisor"]),
                            other=statistics.median(rates[who]), ratio=median, ratio_q1=q1, ratio_q3=q3,
                            rounds=rounds))
    return results


def run(args):
    folder = args.folder = args.folder or tempfile.mkdtemp(prefix="codecvisor-bench-")
    os.makedirs(folder, exist_ok=True)
    seconds = args.seconds or (4 if args.quick else None)
    clips = {label: make_clip(folder, f"{label}.mp4", size, seconds or default_seconds)
             for label, size, default_seconds in CLIP_SIZES if label in args.sizes}
    big = "1080p" if "1080p" in clips else next(iter(clips))
    small = "360p" if "360p" in clips else big
    count = args.short_clips if args.short_clips is not None else (20 if args.quick else 200)
    if args.all_frames_only:
        count = 0
    short = [make_clip(folder, f"short{i:03d}.mp4", "320x240", 2, gop=25) for i in range(count)]
    inprocess = find_inprocess(args.inprocess)
    results, notes = [], []
    # CPU milliseconds per frame of each all-frames figure, by side.
    cpu_ms = {}
    if inprocess is None:
        notes.append("C++ in-process figures not measured: no codecvisor-decode-inprocess (give --inprocess PATH, "
                     "or run the package from an install made by //:install)")
    counts = {}
    for label, clip in clips.items():
        with VideoDecoder(clip) as d:
            counts[label] = len(d)
    for threads in (0, 1):
        for label, clip in clips.items():
            frames = counts[label]
            cv_cpu, cpp_cpu = [], []
            baselines = dict(PyAV=lambda: timed(pyav_all_frames, clip, threads))
            if inprocess:
                baselines["C++ in-process"] = lambda: cpp_all_frames(inprocess, clip, frames, threads, cpp_cpu)
            figure = f"all frames {label}, threads={threads}"
            results += side_by_side(figure, args.rounds, "frames/s",
                                    with_cpu(lambda: timed(cv_all_frames, clip, threads), cv_cpu), **baselines)
            # Milliseconds per frame, medians over the timed rounds (each
            # log's first call is the untimed warm-up). Only backends that
            # ran before a call count: the warm-up started them.
            def per_frame(kind):
                return 1000 * statistics.median(c[kind] for c in cv_cpu[1:]) / frames
            cpu = {"codecvisor host": per_frame("main"), "codecvisor backend": per_frame("backends"),
                   "backend processes": len(processes()["backends"])}
            if cpp_cpu:
                # Its clocks stop before it frees its decoder and frame
                # memory; ours include d.close() and dropping the batch.
                cpu["C++ in-process"] = statistics.median(cpp_cpu[1:])
            cpu_ms[figure] = cpu
        if args.all_frames_only:
            continue
        baselines = dict(PyAV=lambda: timed(pyav_first_frames, clips[big], threads, OPENS))
        if inprocess:
            baselines["C++ in-process"] = lambda: cpp_first_frames(inprocess, clips[big], threads, OPENS)
        results += side_by_side(f"open + frame 0 {big}, {OPENS} times, threads={threads}", args.rounds, "opens/s",
                                lambda: timed(cv_first_frames, clips[big], threads, OPENS), **baselines)
        n = counts[big]
        rng = random.Random(1234)
        indices = sorted(rng.sample(range(n), min(10, n)))
        results += side_by_side(f"{len(indices)} random frames {big} exact, threads={threads}", args.rounds,
                                "frames/s", lambda: timed(cv_frames_at, clips[big], indices, threads),
                                PyAV=lambda: timed(pyav_frames_at, clips[big], indices, threads))
        for mode in ("exact", "approximate"):
            def ours(mode=mode):
                start = time.perf_counter()
                for c in short:
                    cv_frames_at(c, EIGHT, threads, mode)
                return len(short), time.perf_counter() - start

            def theirs():
                start = time.perf_counter()
                for c in short:
                    pyav_frames_at(c, EIGHT, threads)
                return len(short), time.perf_counter() - start

            results += side_by_side(f"{len(short)} short clips, open + 8 frames, {mode}, threads={threads}",
                                    args.rounds, "files/s", ours, PyAV=theirs)
    if args.all_frames_only:
        return dict(results=results, notes=notes, machine=machine(), cpu_ms_per_frame=cpu_ms)
    for workers in (0, 2):
        results += side_by_side(f"DataLoader over {len(short)} short clips, 8 frames each, {workers} workers",
                                args.rounds, "samples/s", lambda: timed(load_all, CodecvisorClips(short), workers),
                                PyAV=lambda: timed(load_all, PyAVClips(short), workers))
    results += side_by_side(f"{small} all frames twice: 2 Python threads at once, threads=1", args.rounds,
                            "frames/s", lambda: timed(two_threads, clips[small], 1),
                            **{"1 thread, one after the other": lambda: timed(one_thread_twice, clips[small], 1)})
    return dict(results=results, notes=notes, machine=machine(), cpu_ms_per_frame=cpu_ms)


def finish(report):
    """The peak RSS of this process and the load average, once every figure
    is measured."""
    report["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["load_average"] = os.getloadavg()
    return report


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} CPUs, {model}, kernel {os.uname().release}"


def print_results(results):
    print(f"{'figure':<62} {'baseline':<30} {'codecvisor':>11} {'baseline':>9} {'ratio':>6}  quartiles")
    for r in results:
        print(f"{r['figure']:<62} {r['baseline']:<30} {r['codecvisor']:>11.1f} {r['other']:>9.1f} {r['ratio']:>6.3f}  "
              f"[{r['ratio_q1']:.3f}, {r['ratio_q3']:.3f}] {r['unit']}")


def print_cpu(cpu_ms_per_frame):
    """The all-frames figures' CPU per frame: this process (the host: the
    binding, the frame checks, the conversion of native frames), its
    backend processes (demuxing, decoding, copying frames into shared
    memory), and the C++ in-process decoder's every thread."""
    print("CPU ms per frame, medians over rounds: host + backend (the sum of the two medians); C++ in-process")
    for figure, cpu in cpu_ms_per_frame.items():
        ours = cpu["codecvisor host"] + cpu["codecvisor backend"]
        line = (f"  {figure:<40} {cpu['codecvisor host']:.3f} + {cpu['codecvisor backend']:.3f} = {ours:.3f}")
        if "C++ in-process" in cpu:
            line += f"; {cpu['C++ in-process']:.3f}"
        print(line)


def main(argv=None):
    # No docstrings under -OO.
    parser = argparse.ArgumentParser(prog="python3 -m codecvisor.bench", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="4 s clips and 20 short clips instead of 200")
    parser.add_argument("--sizes", type=lambda v: v.split(","), default=None,
                        help="which all-frames clips, of " + ",".join(c[0] for c in CLIP_SIZES) + " (default 1080p,360p)")
    parser.add_argument("--seconds", type=float, help="length of the all-frames clips")
    parser.add_argument("--short-clips", type=int, help="how many 2 s clips (default 200, 20 with --quick)")
    parser.add_argument("--folder", help="where the clips are made (kept); default a new temporary folder")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--all-frames-only", action="store_true",
                        help="only the all-frames figures (against PyAV and the C++ in-process decoder)")
    parser.add_argument("--inprocess", help="the codecvisor-decode-inprocess binary (default: the installed one)")
    parser.add_argument("--training", action="store_true",
                        help="also the training figures: clip samplers, a DataLoader epoch, a Dask job "
                             "(python3 -m codecvisor._bench_training runs them alone)")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = ["1080p", "360p"]
    unknown = set(args.sizes) - {c[0] for c in CLIP_SIZES}
    if unknown:
        parser.error(f"unknown clip size {', '.join(sorted(unknown))}")
    if importlib.util.find_spec("av") is None:  # checked before the clips are made
        parser.error("the baseline is PyAV, which this Python cannot import: install it (Debian: python3-av)")
    report = run(args)
    if args.training:
        from . import _bench_training
        _bench_training.run(args, report)
    finish(report)
    if args.json:
        print(json.dumps(report))
        return
    load = ", ".join(f"{x:.2f}" for x in report["load_average"])
    print(f"codecvisor vs baselines ({report['machine']}, load average at the end {load}), {args.rounds} rounds; "
          "ratio = codecvisor / baseline")
    print_results(report["results"])
    print_cpu(report["cpu_ms_per_frame"])
    for note in report["notes"]:
        print(note)
    print(f"peak RSS of this process: {report['peak_rss_mib']:.0f} MiB")

if __name__ == "__main__":
    main()
