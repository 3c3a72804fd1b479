"""One of 4 ranks on two torchrun agents ("nodes", 2 processes each) of ``test_two_nodes.py``.

Usage: ``nodes_worker.py OUT``; the agent's environment gives ``NODE_DIR``, the node's own folder (a
machine without a shared disk): its ModelCheckpoint folder. Writes ``OUT/rank{r}.json`` and
``OUT/weights{r}.pt``.

A. ``fit`` for 2 epochs on 256 seeded synthetic rows (column 0 holds the row's id), sharded over the 4
   ranks (64 rows, 8 steps of 8 per rank and epoch), with validation, LossMonitor(4), TimeMonitor and
   ModelCheckpoint into ``NODE_DIR/ckpt``.
B. ``train`` again; global rank 2 (a rank of the second node) requests a stop at step 5: every rank
   must stop after step 6.
"""
from __future__ import annotations

import faulthandler
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

faulthandler.dump_traceback_later(150, exit=True)  # never outlive the test
torch.set_num_threads(1)

from nbcallback.dataset import NumpySlicesDataset  # noqa: E402
from nbcallback.train import (  # noqa: E402
    Callback,
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    RunContext,
    TimeMonitor,
)
from nbcallback.train.distributed import init_distributed  # noqa: E402

ROWS, FEATURES, BATCH = 256, 16, 8


class Recorder(Callback):
    def __init__(self) -> None:
        self.ids: list[list[int]] = []
        self.steps: list[int] = []
        self.metrics: list[dict] = []
        self.params: dict = {}

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.ids.append([])

    def on_train_step_begin(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.params = {k: cb[k] for k in ("parallel_mode", "device_number", "rank_id", "batch_num")}
        features = cb["train_dataset_element"][0]
        self.ids[-1].extend(int(v) for v in features[:, 0].tolist())

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.steps.append(cb["cur_step_num"])
        self.metrics.append(dict(cb.get("metrics") or {}))


class StopOnRank(Callback):
    def __init__(self, rank: int) -> None:
        self.rank, self.final = rank, None

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self.rank == 2 and run_context.original_args()["cur_step_num"] == 5:
            run_context.request_stop()

    def on_train_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.final = [cb["cur_epoch_num"], cb["cur_step_num"]]


def dataset(seed: int) -> NumpySlicesDataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((ROWS, FEATURES)).astype(np.float32)
    x[:, 0] = np.arange(ROWS, dtype=np.float32)  # the row's id (exact in float32)
    y = (x[:, 1:11].argmax(axis=1)).astype(np.int64)
    return NumpySlicesDataset({"x": x, "y": y}).batch(BATCH)


def main() -> int:
    out = Path(sys.argv[1])
    node_dir = Path(os.environ["NODE_DIR"])
    context = init_distributed(backend="gloo")
    rank = context.rank
    torch.manual_seed(0)
    train, valid = dataset(0), dataset(1)
    net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 10))
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.01, momentum=0.9), metrics={"accuracy", "loss"})
    recorder = Recorder()
    checkpoint = ModelCheckpoint("net", str(node_dir / "ckpt"), CheckpointConfig(save_checkpoint_steps=train.get_dataset_size()))
    model.fit(2, train, valid, callbacks=[LossMonitor(4), TimeMonitor(), checkpoint, recorder])
    evaluated = model.eval(valid)
    torch.save({k: v.clone() for k, v in net.state_dict().items()}, out / f"weights{rank}.pt")

    stopper = StopOnRank(rank)
    torch.manual_seed(0)
    net2 = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 10))
    Model(net2, nn.CrossEntropyLoss(), torch.optim.SGD(net2.parameters(), 0.01)).train(3, train, callbacks=[stopper])

    result = {
        "rank": rank, "world": context.world_size, "local_rank": int(os.environ["LOCAL_RANK"]),
        "node": int(os.environ["GROUP_RANK"]), "node_dir": str(node_dir), "params": recorder.params,
        "ids": recorder.ids, "steps": recorder.steps, "fit_metrics": recorder.metrics, "eval": evaluated,
        "stopped_at": stopper.final,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
