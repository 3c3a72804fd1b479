"""Data-parallel training with 2 gloo processes on the CPU (``torch.distributed.run`` on 127.0.0.1).

One job (``worker.py``) trains the tutorial's network on MNIST slices served by
the loopback mirror and records what each rank saw; the tests below check it
against single-process runs of the same data and weights.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.ddp.support import REPO_ROOT, mnist_slice, run_job

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("worker.py")
EXAMPLE = REPO_ROOT / "examples" / "ddp_mnist.py"
LOSS_LINE = re.compile(r"^epoch: (\d+) step: (\d+), loss is ", re.M)


def key(row: torch.Tensor) -> str:
    return hashlib.sha1(row.contiguous().numpy().tobytes()).hexdigest()[:16]


def pipe(path: Path, batch: int, **kwargs):
    from nbcallback.dataset import MnistDataset, transforms, vision

    dataset = MnistDataset(str(path), **kwargs)
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0), vision.Normalize((0.1307,), (0.3081,)), vision.HWC2CHW()], "image")
    dataset = dataset.map(transforms.TypeCast(torch.int32), "label")
    return dataset.batch(batch)


def network() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


@pytest.fixture(scope="module")
def job(mnist_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Run the 2-rank job once; its outputs, plus the data it used."""
    from nbcallback.train import Model, save_checkpoint

    root = tmp_path_factory.mktemp("ddp")
    data = mnist_slice(mnist_root, root / "data", train=1000, test=500)
    odd = mnist_slice(mnist_root, root / "odd", train=1001, test=None) / "train"
    # A checkpoint from a single process (weights and momentum) for the DDP model to load.
    torch.manual_seed(7)
    net = network()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.02, momentum=0.9))
    model.train(1, [batch for batch, _ in zip(pipe(data / "train", 32), range(3))])
    single = root / "single.ckpt"
    save_checkpoint(model.train_network, str(single))

    out = root / "out"
    out.mkdir()
    proc = run_job(WORKER, [str(out), str(data), str(odd), str(single)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    return {"out": out, "data": data, "odd": odd, "stdout": proc.stdout, "ranks": ranks}


def test_cb_params_describe_the_data_parallel_run(job: dict) -> None:
    for rank, result in enumerate(job["ranks"]):
        assert result["mode"] == "data_parallel"
        assert result["params"] == {"parallel_mode": "data_parallel", "device_number": 2, "rank_id": rank, "batch_num": 16}
        assert result["sizes"] == [16, 8]  # 1000 and 500 rows: 500 and 250 per rank, batches of 32


def test_ranks_train_on_disjoint_shards_covering_the_data(job: dict) -> None:
    everything = [key(row) for images, _ in pipe(job["data"] / "train", 100, shuffle=False) for row in images]
    assert len(set(everything)) == 1000
    rank0, rank1 = (result["seen"] for result in job["ranks"])
    assert len(rank0) == len(rank1) == 2
    for epoch in range(2):
        assert len(rank0[epoch]) == len(rank1[epoch]) == 500
        assert not set(rank0[epoch]) & set(rank1[epoch])
        assert set(rank0[epoch]) | set(rank1[epoch]) == set(everything)
    assert rank0[0] != rank0[1]  # a new shuffle each epoch


def test_final_weights_identical_and_one_checkpoint_folder(job: dict) -> None:
    out = job["out"]
    w0, w1 = (torch.load(out / f"weights{r}.pt") for r in (0, 1))
    assert w0.keys() == w1.keys() and all(torch.equal(w0[k], w1[k]) for k in w0)
    assert sorted(p.name for p in (out / "ckpt").iterdir()) == ["mnist-1_16.ckpt", "mnist-2_16.ckpt", "mnist-graph.meta"]
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.ckpt")) == ["ckpt/mnist-1_16.ckpt", "ckpt/mnist-2_16.ckpt"]
    assert job["ranks"][0]["ckpt"].endswith("mnist-2_16.ckpt") and job["ranks"][1]["ckpt"] == ""


def test_monitors_print_once(job: dict) -> None:
    stdout = job["stdout"]
    # 16 steps per epoch, a line every 5 global steps: steps 5, 10, 15 then 4, 9, 14 of epoch 2.
    assert LOSS_LINE.findall(stdout) == [("1", "5"), ("1", "10"), ("1", "15"), ("2", "4"), ("2", "9"), ("2", "14")]
    assert len(re.findall(r"^Eval result: epoch 1,", stdout, re.M)) == 1
    assert len(re.findall(r"^Eval result: epoch 2,", stdout, re.M)) == 1
    assert len(re.findall(r"^Train epoch time:", stdout, re.M)) == 2
    assert len(re.findall(r"^Eval epoch time:", stdout, re.M)) == 2


def test_stop_requested_on_rank_1_stops_both_at_the_same_step(job: dict) -> None:
    # The job exited 0 (checked by the fixture). 16 steps per epoch. A request in global step 20
    # (epoch 2, step 4) is read with the next step's vote: both ranks end after step 21. A request
    # in an epoch's last step (16) is read by the epoch-end vote: both end with epoch 1.
    assert job["ranks"][0]["stopped_at"] == job["ranks"][1]["stopped_at"] == [[2, 21], [1, 16]]


def test_no_step_waits_for_a_blocking_collective(job: dict) -> None:
    # From one step's end to the next (within an epoch): the first step's stop vote, one asynchronous
    # all_reduce, and the second step, which makes no blocking call of nbcallback's (DDP's gradient
    # all-reduce is torch's own, not counted).
    for result in job["ranks"]:
        for between_steps in result["step_collectives"]:
            assert between_steps, "no step was recorded"
            assert all(calls == [True] for calls in between_steps), between_steps


def test_eval_equals_single_process_eval_of_the_same_weights(job: dict) -> None:
    from nbcallback.train import Model, load_checkpoint

    rank0 = job["ranks"][0]
    net = network()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.02, momentum=0.9), metrics={"accuracy", "loss"})
    # The checkpoint of rank 0 loads strictly into a single-process Model: no 'module.' prefix anywhere.
    entries = load_checkpoint(rank0["ckpt"])
    assert not [name for name in entries if "module." in name]
    assert any(name.startswith("optimizer.state.1.weight.") for name in entries)
    load_checkpoint(rank0["ckpt"], net=model.train_network, strict_load=True)
    weights = torch.load(job["out"] / "weights0.pt")
    assert all(torch.equal(weights[k], v) for k, v in net.state_dict().items())

    single = model.eval(pipe(job["data"] / "test", 64))
    for result in job["ranks"]:
        assert result["eval"]["accuracy"] == single["accuracy"]
        assert result["fit_metrics"][1]["accuracy"] == single["accuracy"]  # fit's validation: whole set too
        assert result["eval_whole_set_per_rank"]["accuracy"] == single["accuracy"]
        assert result["eval"]["loss"] == pytest.approx(single["loss"], rel=0.02)  # mean of batch means: other batches


def test_single_process_checkpoint_loads_into_ddp_model(job: dict) -> None:
    for result in job["ranks"]:
        assert result["single_to_ddp"] == {"weights": True, "momentum": True, "not_loaded": [], "unused": []}


def test_uneven_data_padded_to_equal_shards(job: dict) -> None:
    from nbcallback.dataset import MnistDataset

    everything = {key(image.to(torch.float32)) for image, _ in MnistDataset(str(job["odd"]), shuffle=False)}
    assert len(everything) == 1001
    rank0, rank1 = (result["odd"] for result in job["ranks"])
    for result in job["ranks"]:
        assert result["odd_sizes"] == [501, 16]
    for epoch in range(2):
        assert len(rank0[epoch]) == len(rank1[epoch]) == 501
        assert set(rank0[epoch]) | set(rank1[epoch]) == everything
        assert len(set(rank0[epoch]) & set(rank1[epoch])) == 1  # the one padded row
    assert rank0[0] != rank0[1]


def test_stop_vote_cost_is_measured(job: dict, record_property) -> None:
    costs = [result["stop_vote_us"] for result in job["ranks"]]
    record_property("stop_vote_us", costs)
    assert all(cost > 0 for cost in costs)


def test_example_prints_once(mnist_root: Path, mnist_mirror: str, tmp_path: Path) -> None:
    args = [
        "--epochs", "1", "--data-dir", str(mnist_root.parent), "--url", mnist_mirror, "--num-samples", "256",
        "--print-every", "2", "--checkpoint-dir", str(tmp_path / "ckpt"), "--backend", "gloo",
    ]
    proc = run_job(EXAMPLE, args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    # 256 rows per rank in batches of 32: 8 steps, a loss line every 2.
    assert LOSS_LINE.findall(proc.stdout) == [("1", "2"), ("1", "4"), ("1", "6"), ("1", "8")]
    assert len(re.findall(r"^Final accuracy: ", proc.stdout, re.M)) == 1
    assert len(re.findall(r"^Training on 2 process\(es\) \(DDP over gloo", proc.stdout, re.M)) == 1
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["mnist-1_8.ckpt", "mnist-graph.meta"]


def test_example_writes_its_checkpoints_into_the_cache_not_the_checkout(
    mnist_root: Path, mnist_mirror: str, tmp_path: Path
) -> None:
    """Run from the checkout's root as the README shows, without --checkpoint-dir: nothing new in the checkout."""
    from tests.ddp.support import job_env

    before = sorted(path.name for path in REPO_ROOT.iterdir())
    args = ["--epochs", "1", "--data-dir", str(mnist_root.parent), "--url", mnist_mirror, "--num-samples", "128",
            "--print-every", "0"]
    proc = run_job(EXAMPLE, args, nproc=0, env=job_env(XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    folder = tmp_path / "cache" / "nbcallback" / "runs" / "ddp_mnist" / "checkpoint"
    assert sorted(p.name for p in folder.iterdir()) == ["mnist-1_2.ckpt", "mnist-graph.meta"]  # 128 rows / 64
    assert f"Checkpoints in {folder} on " in proc.stdout
    assert sorted(path.name for path in REPO_ROOT.iterdir()) == before


def _final_accuracy(stdout: str) -> float:
    found = re.findall(r"^Final accuracy: ([0-9.]+)", stdout, re.M)
    assert len(found) == 1, stdout[-3000:]
    return float(found[0])


@pytest.mark.slow
def test_two_ranks_match_single_process_accuracy(mnist_root: Path, mnist_mirror: str, tmp_path: Path) -> None:
    """The tutorial's 3 epochs on full MNIST: 2 ranks x 32 against 1 process x 64 (minutes on 2 cores)."""
    common = ["--data-dir", str(mnist_root.parent), "--url", mnist_mirror, "--print-every", "0", "--seed", "0"]
    single = run_job(EXAMPLE, [*common, "--checkpoint-dir", str(tmp_path / "single")], nproc=0, timeout=900)
    assert single.returncode == 0, single.stderr[-5000:]
    ddp = run_job(EXAMPLE, [*common, "--checkpoint-dir", str(tmp_path / "ddp"), "--backend", "gloo"], timeout=900)
    assert ddp.returncode == 0, ddp.stderr[-5000:]
    accuracy_single, accuracy_ddp = _final_accuracy(single.stdout), _final_accuracy(ddp.stdout)
    print(f"accuracy after 3 epochs: single process {accuracy_single:.4f}, 2 ranks {accuracy_ddp:.4f}")
    assert abs(accuracy_single - accuracy_ddp) <= 0.01
