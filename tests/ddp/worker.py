"""One rank of the 2-process gloo job of ``test_ddp.py`` (started by ``torch.distributed.run``).

Usage: ``worker.py OUT DATA ODD SINGLE_CKPT``. Writes ``OUT/rank{r}.json`` and
``OUT/weights{r}.pt``; rank 0's ModelCheckpoint writes ``OUT/ckpt``.
"""
from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

faulthandler.dump_traceback_later(150, exit=True)  # a hung collective must not outlive the test
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

from nbcallback.dataset import MnistDataset, transforms, vision  # noqa: E402
from nbcallback.train import (  # noqa: E402
    Callback,
    CallbackParams,
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    RunContext,
    TimeMonitor,
    load_checkpoint,
    load_param_into_net,
)
from nbcallback.train.distributed import init_distributed  # noqa: E402


def key(row: torch.Tensor) -> str:
    """An id of one sample (its pixels after the pipeline's transforms)."""
    return hashlib.sha1(row.contiguous().numpy().tobytes()).hexdigest()[:16]


def pipe(path: Path, batch: int, **kwargs: object):
    dataset = MnistDataset(str(path), **kwargs)
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0), vision.Normalize((0.1307,), (0.3081,)), vision.HWC2CHW()], "image")
    dataset = dataset.map(transforms.TypeCast(torch.int32), "label")
    return dataset.batch(batch)


def network() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class Recorder(Callback):
    """What this rank trained on, epoch by epoch, and the keys Model puts in cb_params."""

    def __init__(self) -> None:
        self.epochs: list[list[str]] = []
        self.eval_metrics: list[dict] = []
        self.params: dict = {}

    def on_train_begin(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.params = {k: cb[k] for k in ("parallel_mode", "device_number", "rank_id", "batch_num")}

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epochs.append([])

    def on_train_step_begin(self, run_context: RunContext) -> None:
        images = run_context.original_args()["train_dataset_element"][0]
        self.epochs[-1].extend(key(row) for row in images)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.eval_metrics.append(dict(run_context.original_args().get("metrics") or {}))


class StopOnRank1(Callback):
    def __init__(self, rank: int, step: int) -> None:
        self.rank, self.step, self.final = rank, step, None

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self.rank == 1 and run_context.original_args()["cur_step_num"] == self.step:
            run_context.request_stop()

    def on_train_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.final = [cb["cur_epoch_num"], cb["cur_step_num"]]


class StepCalls(Callback):
    """The ``all_reduce`` calls (True: asynchronous) from one step's end to the next one's, steps 2 on."""

    def __init__(self, calls: list[bool]) -> None:
        self.calls = calls
        self.between_steps: list[list[bool]] = []

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.calls.clear()  # the epoch-end vote of the epoch before is blocking, on purpose

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if (cb_params["cur_step_num"] - 1) % cb_params["batch_num"]:  # not the epoch's first step
            self.between_steps.append(list(self.calls))
        self.calls.clear()


def main() -> None:
    out, data, odd, single_ckpt = (Path(a) for a in sys.argv[1:5])
    context = init_distributed(backend="gloo")
    rank = context.rank
    result: dict = {"rank": rank, "world": context.world_size, "mode": context.mode}

    # A. fit with the tutorial's callbacks; Model.eval afterwards.
    torch.manual_seed(0)
    train, test = pipe(data / "train", 32), pipe(data / "test", 32)
    result["sizes"] = [train.get_dataset_size(), test.get_dataset_size()]
    net = network()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.02, momentum=0.9), metrics={"accuracy", "loss"})
    recorder = Recorder()
    checkpoint = ModelCheckpoint("mnist", str(out / "ckpt"), CheckpointConfig(save_checkpoint_steps=train.get_dataset_size()))
    model.fit(2, train, test, callbacks=[LossMonitor(5), TimeMonitor(), checkpoint, recorder])
    result["seen"] = recorder.epochs
    result["params"] = recorder.params
    result["fit_metrics"] = recorder.eval_metrics
    result["eval"] = model.eval(test)
    result["eval_whole_set_per_rank"] = model.eval(pipe(data / "test", 32, num_shards=1, shard_id=0))
    result["ckpt"] = checkpoint.latest_ckpt_file_name
    torch.save({k: v.clone() for k, v in net.state_dict().items()}, out / f"weights{rank}.pt")

    # A'. A checkpoint written by a single process loads into the DDP Model (weights and momentum).
    torch.manual_seed(1)
    net2 = network()
    opt2 = torch.optim.SGD(net2.parameters(), 0.02, momentum=0.9)
    model2 = Model(net2, nn.CrossEntropyLoss(), opt2)
    entries = load_checkpoint(str(single_ckpt))
    not_loaded, unused = load_param_into_net(model2.train_network, entries, strict_load=True)
    own = {k: v for k, v in net2.state_dict().items()}
    momentum = {name: opt2.state[p]["momentum_buffer"] for name, p in net2.named_parameters() if p in opt2.state}
    result["single_to_ddp"] = {
        "weights": all(torch.equal(own[k], entries[k]) for k in own),
        "momentum": sorted(momentum) == sorted(own) and all(
            torch.equal(momentum[k], entries[f"optimizer.state.{k}.momentum_buffer"]) for k in momentum
        ),
        "not_loaded": sorted(not_loaded),
        "unused": sorted(unused),
    }

    # B. A stop requested on rank 1 only stops both ranks after the same step: the next step within an
    # epoch (the vote is read one step later), at once at an epoch's last step. No step waits for a
    # blocking collective of nbcallback's: every all_reduce made during the steps is asynchronous.
    calls: list[bool] = []
    plain_all_reduce = dist.all_reduce

    def counting_all_reduce(*args: object, **kwargs: object):
        calls.append(bool(kwargs.get("async_op", False)))
        return plain_all_reduce(*args, **kwargs)

    result["stopped_at"], result["step_collectives"] = [], []
    for stop_step in (20, 16):
        torch.manual_seed(0)
        net3 = network()
        model3 = Model(net3, nn.CrossEntropyLoss(), torch.optim.SGD(net3.parameters(), 0.02))
        stopper = StopOnRank1(rank, step=stop_step)
        steps = StepCalls(calls)
        calls.clear()
        dist.all_reduce = counting_all_reduce
        try:
            model3.train(3, train, callbacks=[stopper, steps])
        finally:
            dist.all_reduce = plain_all_reduce
        result["stopped_at"].append(stopper.final)
        result["step_collectives"].append(steps.between_steps)

    # C. Uneven data (1001 rows): padded shards of equal size, one shared shuffle per epoch.
    rows = MnistDataset(str(odd), usage="train")
    result["odd_sizes"] = [rows.get_dataset_size(), pipe(odd, 32).get_dataset_size()]
    result["odd"] = []
    for epoch in range(2):
        rows.set_epoch(epoch)
        result["odd"].append([key(image.to(torch.float32)) for image, _ in rows])

    # D. The cost of the per-step stop vote on the training thread.
    run_context = RunContext(CallbackParams())
    repeats = 500
    timings = []
    for _ in range(3):
        vote = context.stop_vote()
        dist.barrier()
        started = time.perf_counter()
        for _ in range(repeats):
            vote.after_step(run_context)
        timings.append((time.perf_counter() - started) / repeats * 1e6)
        vote.after_epoch(run_context)
    result["stop_vote_us"] = min(timings)

    (out / f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
