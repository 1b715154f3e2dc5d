"""A simulated world of 2 ranks: two processes in a torch.distributed
process group (gloo, over 127.0.0.1), each reading its share of 20 clips
with 2 DataLoader workers, one clip crashing the backend and one hanging
it. The ranks' shares are disjoint and cover the dataset, each good clip
arrives once in the world, and the bad ones are reported by the rank that
read them. The README's torch.distributed snippets run in the same world."""

import json
import os
import pickle

import torch.distributed as dist
import torch.multiprocessing
from torch.utils.data import DataLoader, DistributedSampler

from codecvisor.datasets import ClipDataset, ClipIterableDataset, collate_clips

import readme_snippets
from test_dataset import CRASH, HANG, OPTIONS, SAMPLER, clips, run_epoch

WORLD = 2


def rank_main(rank, port, pairs, out):
    # The README's snippets, as torchrun would start them: the process
    # group from the environment, on the store the launcher (torchrun's
    # agent, here the test) holds open at MASTER_PORT; a dataset of good
    # clips.
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD),
                      TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")
    good = [pair for pair in pairs if pair[1] not in (CRASH, HANG)][:6]
    namespace = dict(dataset=ClipDataset(good, SAMPLER, decoder_options=OPTIONS), DataLoader=DataLoader,
                     collate_clips=collate_clips, clip_sampler=SAMPLER, paths=[p for p, _ in good],
                     labels=[label for _, label in good], epochs=1)
    readme_snippets.run(readme_snippets.DISTRIBUTED_SAMPLER, namespace)
    readme_snippets.run(readme_snippets.ITERABLE, namespace)
    report = dict(readme_shares=[list(namespace["share"]), namespace["shards"].indices()])
    # Map-style: the DistributedSampler's share, spread over 2 workers.
    dataset = ClipDataset(pairs, SAMPLER, decoder_options=OPTIONS)
    sampler = DistributedSampler(dataset, shuffle=True, seed=11)
    sampler.set_epoch(1)
    loader = DataLoader(dataset, batch_size=3, sampler=sampler, num_workers=2, collate_fn=collate_clips)
    delivered, skipped = run_epoch(loader)
    report["map"] = dict(share=list(sampler), delivered=delivered, skipped=[s.index for s in skipped])
    # Iterable: the dataset takes its share from the process group itself.
    iterable = ClipIterableDataset(pairs, SAMPLER, decoder_options=OPTIONS, shuffle=True, seed=5)
    iterable.set_epoch(1)
    loader = DataLoader(iterable, batch_size=3, num_workers=2, collate_fn=collate_clips)
    delivered, skipped = run_epoch(loader)
    report["iterable"] = dict(share=iterable.indices(), delivered=delivered, skipped=[s.index for s in skipped])
    # What a spawned worker (no process group) gets: the place it was pickled in.
    copy = pickle.dumps(iterable)
    dist.barrier()
    dist.destroy_process_group()
    report["pickled_place"] = list(pickle.loads(copy).rank_and_world())
    report["place_without_group"] = list(ClipIterableDataset(pairs, SAMPLER).rank_and_world())
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)


def test_two_ranks_read_disjoint_shares_that_cover_the_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    pairs = clips(tmp_path)
    # The ranks' rendezvous store, as torchrun's agent holds it: listening
    # on a port of the kernel's choice until the ranks are done (a port
    # found free and let go could be taken by another test meanwhile).
    store = dist.TCPStore("127.0.0.1", 0, WORLD, True, wait_for_workers=False)
    torch.multiprocessing.spawn(rank_main, args=(store.port, pairs, str(tmp_path)),
                                nprocs=WORLD, join=True)
    del store
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    for kind in ("map", "iterable"):
        shares = [set(r[kind]["share"]) for r in reports]
        assert not shares[0] & shares[1] and shares[0] | shares[1] == set(range(20)), kind
        assert all(len(r[kind]["share"]) == 10 for r in reports), kind
        for report, share in zip(reports, shares):
            delivered = {int(label): n for label, n in report[kind]["delivered"].items()}
            assert delivered == {label: 1 for label in share - {CRASH, HANG}}, kind
            assert sorted(report[kind]["skipped"]) == sorted(share & {CRASH, HANG}), kind
    for snippet in range(2):
        shares = [set(r["readme_shares"][snippet]) for r in reports]
        assert not shares[0] & shares[1] and shares[0] | shares[1] == set(range(6))
    for rank, report in enumerate(reports):
        assert report["pickled_place"] == [rank, WORLD]
        assert report["place_without_group"] == [0, 1]
