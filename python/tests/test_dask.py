"""codecvisor.dask on a real distributed.LocalCluster: 2 worker processes
(not threads), the scheduler on 127.0.0.1. Results over 40 videos equal a
single-process run, also when a worker is killed in the middle of the job
and when one video is poison; each worker keeps its warm backend across
tasks."""

import functools
import io
import logging
import os
import signal

import numpy as np
import pytest
from distributed import Client, LocalCluster

import codecvisor
import codecvisor.dask
from codecvisor.dask import Skipped, map_videos, video_bag
from codecvisor.decoders import VideoDecoder

import readme_snippets
from conftest import synthetic_clip

OPTIONS = dict(device="faulty", timeout=5.0)
POISON = 7


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def videos(folder, poison=None):
    """40 synthetic videos; video i has 10 + i frames."""
    return [synthetic_clip(folder / f"v{i:02d}.syn", f"frames={10 + i} width=16 height=8 fps=10"
                           + (" fault=segfault" if i == poison else "")) for i in range(40)]


def stats(decoder):
    """Per-video statistics: frame count and mean of every channel over every third frame."""
    frames = decoder.get_frames_in_range(0, len(decoder), 3).data
    return np.concatenate([[len(decoder)], frames.double().mean(dim=(0, 2, 3)).numpy()])


def stats_or_die(marker, victim_frames, decoder):
    """stats, but the first task to reach the video with `victim_frames`
    frames kills its own worker process (the marker file says it did)."""
    if len(decoder) == victim_frames:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    return stats(decoder)


def backend_pid():
    """The faulty backend's process as this process's codecvisor host lists it."""
    return next(b.pid for b in codecvisor.backends.list() if b.name == "faulty")


def faulty_backend_children():
    """The pids of this process's child processes that run the faulty
    backend, as /proc shows them (whichever host started them)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # exited meanwhile
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        if parent == os.getpid() and b"--name" in argv[:-1] and argv[argv.index(b"--name") + 1] == b"faulty":
            found.append(int(entry))
    return sorted(found)


def where(decoder):
    """Which worker read the video, and the faulty backend processes it ran
    meanwhile: its child processes, and its host's listed one."""
    return os.getpid(), faulty_backend_children(), backend_pid()


def single_process(paths):
    return [stats(VideoDecoder(p, **OPTIONS)) for p in paths]


def check_equal(results, expected):
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_results_equal_a_single_process_run(client, tmp_path):
    paths = videos(tmp_path)
    results = map_videos(stats, paths, client=client, decoder_options=OPTIONS)
    check_equal(results, single_process(paths))
    assert video_bag(stats, paths, files_per_partition=5).npartitions == 8


def test_each_worker_keeps_one_warm_host_across_tasks(client, tmp_path):
    codecvisor.dask.warm_workers(client, ["faulty"])
    warm = client.run(faulty_backend_children)  # worker address: its backend processes, before the tasks
    assert len(warm) == 2 and all(len(pids) == 1 for pids in warm.values()), warm
    worker_pids = client.run(os.getpid)
    # 20 one-video tasks pinned to each worker, both workers at once.
    paths = videos(tmp_path)
    addresses = sorted(warm)
    futures = [client.compute(video_bag(where, paths[k::2], decoder_options=OPTIONS, files_per_partition=1),
                              workers=[address]) for k, address in enumerate(addresses)]
    for address, future in zip(addresses, futures):
        placed = future.result()
        assert len(placed) == 20
        for worker, children, listed in placed:
            # Every task ran in this worker process, beside the one backend
            # process that was warm before the first task: a decoder that
            # made its own host, or a host made again, would start another.
            assert worker == worker_pids[address]
            assert children == warm[address] and listed == warm[address][0]


def test_a_worker_killed_mid_job_leaves_the_results_complete(client, tmp_path):
    paths = videos(tmp_path)
    marker = tmp_path / "killed"
    before = set(client.run(os.getpid).values())
    results = map_videos(functools.partial(stats_or_die, str(marker), 30), paths, client=client,
                         decoder_options=OPTIONS)
    check_equal(results, single_process(paths))
    victim = int(marker.read_text())
    assert victim in before
    client.wait_for_workers(2)
    after = set(client.run(os.getpid).values())
    assert victim not in after and len(after) == 2


def test_a_poison_video_is_reported_not_fatal(client, tmp_path):
    paths = videos(tmp_path, poison=POISON)
    results = map_videos(stats, paths, client=client, decoder_options=OPTIONS)
    skipped = results.pop(POISON)
    assert isinstance(skipped, Skipped) and skipped.index == POISON and skipped.error == "BackendError"
    assert "SIGSEGV" in skipped.message and skipped.source == paths[POISON]
    check_equal(results, single_process(paths[:POISON] + paths[POISON + 1:]))
    with pytest.raises(codecvisor.BackendError, match="poison"):
        map_videos(stats, [paths[POISON]], client=client, decoder_options=OPTIONS, on_error="raise")


def test_a_job_run_again_reads_the_videos_again(client, tmp_path):
    paths = videos(tmp_path)[:6]
    first = map_videos(stats, paths, client=client, decoder_options=OPTIONS)
    synthetic_clip(tmp_path / "v00.syn", "frames=31 width=16 height=8 fps=10")  # the first video changes
    again = map_videos(stats, paths, client=client, decoder_options=OPTIONS, warm=False)  # straight after
    assert first[0][0] == 10 and again[0][0] == 31
    check_equal(again, single_process(paths))


def test_results_can_be_written_to_files(client, tmp_path):
    paths = videos(tmp_path)[:10]
    written = map_videos(stats, paths, client=client, decoder_options=OPTIONS, output_dir=str(tmp_path / "out"))
    assert written == [str(tmp_path / "out" / f"{i:06d}.npz") for i in range(10)]
    check_equal([np.load(p)["result"] for p in written], single_process(paths))
    assert sorted(os.listdir(tmp_path / "out")) == [f"{i:06d}.npz" for i in range(10)]
    # Readable as any new file is (umask 022 here), by a client that may
    # be another user than the workers: mkstemp's 0600 was kept before.
    umask = os.umask(0o022)
    os.umask(umask)
    assert {os.stat(p).st_mode & 0o777 for p in written} == {0o666 & ~umask}


def test_a_source_skipped_on_a_run_again_leaves_no_earlier_result(tmp_path):
    # A folder globbed after the second run held the first run's result
    # for a video that was skipped in the second.
    paths = videos(tmp_path)[:3]
    out = str(tmp_path / "out")
    video_bag(stats, paths, decoder_options=OPTIONS, output_dir=out).compute(scheduler="sync")
    assert sorted(os.listdir(out)) == ["000000.npz", "000001.npz", "000002.npz"]
    open(paths[1], "wb").close()  # now empty
    again = video_bag(stats, paths, decoder_options=OPTIONS, output_dir=out).compute(scheduler="sync")
    assert isinstance(again[1], Skipped) and again[1].error == "EmptyVideoError"
    assert sorted(os.listdir(out)) == ["000000.npz", "000002.npz"]


def test_a_task_run_again_removes_what_a_killed_attempt_left_part_way(tmp_path):
    # A worker killed inside np.savez left its hidden partial file for good.
    paths = videos(tmp_path)[:3]
    out = tmp_path / "out"
    out.mkdir()
    for name in (".partial-000001-k1ll3d.npz", ".partial-000002-x.npz", ".partial-000009-other.npz"):
        (out / name).write_bytes(b"PK\x03\x04 torn")
    open(paths[2], "wb").close()  # skipped: its partial goes too
    results = video_bag(stats, paths, decoder_options=OPTIONS, output_dir=str(out)).compute(scheduler="sync")
    assert isinstance(results[2], Skipped)
    # Index 9 is no task of this run: left alone.
    assert sorted(os.listdir(out)) == [".partial-000009-other.npz", "000000.npz", "000001.npz"]


def first_frames(decoder):
    return decoder.get_frames_at([0, 1])


def test_a_frame_batch_is_written_as_its_arrays_and_other_results_are_refused(tmp_path):
    paths = videos(tmp_path)[:2]
    bag = video_bag(first_frames, paths, decoder_options=OPTIONS, output_dir=str(tmp_path / "out"))
    written = bag.compute(scheduler="sync")
    for path, video in zip(written, paths):
        with VideoDecoder(video, **OPTIONS) as d:
            expected = d.get_frames_at([0, 1])
        saved = np.load(path)
        np.testing.assert_array_equal(saved["data"], expected.data.numpy())
        np.testing.assert_array_equal(saved["pts_seconds"], expected.pts_seconds.numpy())
        np.testing.assert_array_equal(saved["duration_seconds"], expected.duration_seconds.numpy())
    # An IndexError from deep inside numpy, before.
    bag = video_bag(lambda d: {"frames": [d[0]]}, paths, decoder_options=OPTIONS, output_dir=str(tmp_path / "o2"),
                    on_error="raise")
    with pytest.raises(TypeError, match="with output_dir, a job returns an array.*'frames' is a list"):
        bag.compute(scheduler="sync")


def test_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="on_error"):
        video_bag(stats, [], on_error="ignore")
    with pytest.raises(ValueError, match="files_per_partition"):
        video_bag(stats, [], files_per_partition=0)
    with pytest.raises(TypeError, match="job"):
        video_bag("stats", [])
    with pytest.raises(ValueError, match="no backend serves device 'acme:0'"):
        codecvisor.dask.backend_for("acme:0")


def test_the_readmes_dask_snippet(client, video):
    paths = [video] * 4
    namespace = readme_snippets.run(readme_snippets.DASK, dict(paths=paths, scheduler_address=client.scheduler.address))
    namespace["client"].close()
    expected = namespace["mean_color"](VideoDecoder(video))
    check_equal(namespace["means"], [expected] * 4)


def save_to_a_missing_folder(decoder):
    np.save("/nonexistent-folder/out.npy", decoder[0].numpy())


def cache_limit():
    return codecvisor._codecvisor.batch_cache_limit_bytes()


def test_thread_workers_of_clusters_started_in_turn_fit_the_cache_to_the_smallest_limit(tmp_path):
    # Workers that are threads of this process share its cache: a second
    # cluster with a smaller limit kept the first one's (a notebook user's
    # second LocalCluster).
    default = cache_limit()
    try:
        for limit in (1 << 30, 256 << 20):
            assert limit // 16 < default
            with LocalCluster(n_workers=1, processes=False, threads_per_worker=1, memory_limit=limit,
                              dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
                map_videos(stats, videos(tmp_path)[:1], client=client, decoder_options=OPTIONS)
                assert cache_limit() == limit // 16
    finally:
        codecvisor._codecvisor.set_batch_cache_limit_bytes(default)


def first_frame_shape(path):
    with VideoDecoder(path, **OPTIONS) as decoder:
        return tuple(decoder[0].shape)


def test_a_plain_task_that_opens_a_decoder_fits_the_cache_too(tmp_path):
    # Not only codecvisor.dask's tasks: a client.submit of the user's own
    # function that opens a decoder kept the default cache, and a worker
    # with a memory limit paused for good on the batches it kept.
    limit = 1 << 30
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1", memory_limit=limit,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        default = list(client.run(cache_limit).values())[0]
        assert limit // 16 < default, "the case needs a worker limit below 16 times the cache's"
        assert client.submit(first_frame_shape, videos(tmp_path)[0]).result()[0] == 3
        assert list(client.run(cache_limit).values()) == [limit // 16]


def test_what_is_skipped_and_what_is_raised(tmp_path):
    paths = videos(tmp_path)[:2]
    # An empty in-memory video is a bad video, as an empty file is: skipped
    # (it stopped the job with a ValueError).
    results = video_bag(stats, [paths[0], b""], decoder_options=OPTIONS).compute(scheduler="sync")
    assert results[0][0] == 10
    assert results[1] == Skipped(1, "<0 bytes>", "EmptyVideoError", "<0 bytes>: no bytes to decode")
    with pytest.raises(codecvisor.VideoError) as raised:
        video_bag(stats, [io.BytesIO()], decoder_options=OPTIONS, on_error="raise").compute(scheduler="sync")
    assert isinstance(raised.value, ValueError), "as VideoDecoder(b'') raised"
    assert raised.value.__notes__ == ["codecvisor: while reading source 0: BytesIO"]
    # The job's own OSError is the job's: raised, naming the source (every
    # video was Skipped as if unreadable).
    with pytest.raises(FileNotFoundError) as raised:
        video_bag(save_to_a_missing_folder, paths, decoder_options=OPTIONS).compute(scheduler="sync")
    assert raised.value.__notes__ == [f"codecvisor: while reading source 0: {paths[0]}"]


@pytest.mark.parametrize("cache_mib", [None, "lots"])
def test_a_workers_batch_cache_is_fitted_to_its_memory_limit(tmp_path, monkeypatch, cache_mib):
    # A worker pauses itself above 80% of its limit by resident memory,
    # which the cache's kept pages count in: a worker whose cache took an
    # eighth of the machine's memory (2 GiB at most) paused for good. A
    # CODECVISOR_BATCH_CACHE_MIB the cache ignores (not a number) once
    # stopped the fitting too.
    if cache_mib is not None:
        monkeypatch.setenv("CODECVISOR_BATCH_CACHE_MIB", cache_mib)
    default = codecvisor._codecvisor.batch_cache_limit_bytes()  # this process's, not a worker's
    limit = 1 << 30
    assert limit // 16 < default, "the case needs a worker limit below 16 times the cache's"
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1", memory_limit=limit,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        assert list(client.run(cache_limit).values()) == [default], "before any task, the default"
        map_videos(stats, videos(tmp_path)[:2], client=client, decoder_options=OPTIONS)
        assert list(client.run(cache_limit).values()) == [limit // 16]
