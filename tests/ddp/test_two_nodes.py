"""Two torchrun agents ("nodes") of 2 processes each: 4 gloo ranks, c10d rendezvous on 127.0.0.1.

Each agent is started as on its own machine (docs/distributed.md): ``--nnodes=2 --nproc-per-node=2
--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:PORT``, with a checkpoint folder of its own (``NODE_DIR``), as
machines without a shared disk have. ``nodes_worker.py`` records what each rank saw.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from tests.ddp.support import free_port, job_env, run_agents, torchrun

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("nodes_worker.py")
LOSS_LINE = re.compile(r"^epoch: (\d+) step: (\d+), loss is ", re.M)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("two_nodes")
    out = root / "out"
    out.mkdir()
    port = free_port()
    commands = [torchrun(WORKER, [str(out)], nproc=2, nnodes=2, port=port) for _ in range(2)]
    envs = [job_env(NODE_DIR=str(root / f"machine{m}")) for m in range(2)]
    procs = run_agents(commands, envs, timeout=170)
    for proc in procs:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(4)]
    return {"root": root, "out": out, "procs": procs, "ranks": ranks}


def test_four_ranks_on_two_nodes(job: dict) -> None:
    ranks = job["ranks"]
    assert [r["world"] for r in ranks] == [4, 4, 4, 4]
    assert sorted((r["node"], r["local_rank"]) for r in ranks) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # torchrun gives each node consecutive global ranks; both ranks of a node use its folder.
    for r in ranks:
        assert r["node"] == r["rank"] // 2
        assert r["params"] == {"parallel_mode": "data_parallel", "device_number": 4, "rank_id": r["rank"], "batch_num": 8}
    assert ranks[0]["node_dir"] == ranks[1]["node_dir"] != ranks[2]["node_dir"] == ranks[3]["node_dir"]


def test_weights_eval_metrics_and_step_counts_agree_on_every_rank(job: dict) -> None:
    out, ranks = job["out"], job["ranks"]
    reference = torch.load(out / "weights0.pt")
    for r in range(1, 4):
        other = torch.load(out / f"weights{r}.pt")
        assert all(torch.equal(reference[k], other[k]) for k in reference), f"rank {r}'s weights differ"
    for r in ranks:
        assert r["steps"] == [8, 16]
        assert r["fit_metrics"] == ranks[0]["fit_metrics"] and r["eval"] == ranks[0]["eval"]
    assert ranks[0]["eval"] == ranks[0]["fit_metrics"][-1]  # eval after fit: the same weights, the same metrics
    assert 0.0 <= ranks[0]["eval"]["accuracy"] <= 1.0


def test_shards_cover_the_data_once_per_epoch(job: dict) -> None:
    ranks = job["ranks"]
    for epoch in range(2):
        seen = [r["ids"][epoch] for r in ranks]
        assert all(len(ids) == 64 for ids in seen)
        assert sorted(i for ids in seen for i in ids) == list(range(256))
    assert ranks[0]["ids"][0] != ranks[0]["ids"][1]  # a new shuffle each epoch


def test_monitors_print_once_for_the_job(job: dict) -> None:
    node0, node1 = (proc.stdout for proc in job["procs"])
    printed = node0 + node1
    # 8 steps per epoch, a line every 4 global steps; only global rank 0 prints.
    assert LOSS_LINE.findall(printed) == [("1", "4"), ("1", "8"), ("2", "4"), ("2", "8")]
    assert len(re.findall(r"^Train epoch time:", printed, re.M)) == 2
    assert len(re.findall(r"^Eval epoch time:", printed, re.M)) == 2


def test_only_global_rank_0_writes_checkpoints(job: dict) -> None:
    root, ranks = job["root"], job["ranks"]
    rank0_folder = Path(ranks[0]["node_dir"]) / "ckpt"
    other_folder = Path(ranks[2]["node_dir"]) / "ckpt"
    assert sorted(p.name for p in rank0_folder.iterdir()) == ["net-1_8.ckpt", "net-2_8.ckpt", "net-graph.meta"]
    assert not other_folder.exists() or not any(other_folder.iterdir())
    assert sorted(p.relative_to(root).parts[0] for p in root.rglob("*.ckpt")) == [Path(ranks[0]["node_dir"]).name] * 2


def test_a_stop_on_a_rank_of_node_1_stops_all_four_at_the_same_step(job: dict) -> None:
    # Global rank 2 (node 1) requests a stop at step 5: it is sent with step 6's vote, read after step 6.
    assert [r["stopped_at"] for r in job["ranks"]] == [[1, 6]] * 4
