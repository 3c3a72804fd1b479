"""One rank of a 2-rank job that survives a SIGKILL through ``torchrun --max-restarts`` and ``BackupAndRestore``.

Usage: ``restart_worker.py OUT [--kill EPOCH STEP] [--plain-init]``, started by ``torch.distributed.run`` with
``--max-restarts=1`` or more. Used by ``tests/reliability/test_ddp_restart.py`` and
``python -m benchmarks.distributed restart``.

The job trains a small MLP for 3 epochs (16 steps each, 2 ranks x 16 rows per step) on seeded synthetic
data, sharded and shuffled per epoch, with SGD + momentum and dropout, ``BackupAndRestore`` (a backup per
epoch, one folder per rank) and ``ModelCheckpoint`` on rank 0. With ``--kill E S``, rank 1 kills itself
(SIGKILL) in the first attempt when step S of epoch E ends; torchrun then starts both ranks again and
``BackupAndRestore`` resumes at the start of epoch E.

``--plain-init`` joins with torch's own ``init_process_group('gloo')`` instead of ``init_distributed`` (the
baseline of the restart benchmark).

Every attempt writes ``OUT/attempt{n}_rank{r}.json`` (the first step it trained, and for a finished
attempt the final step); a finished rank writes ``OUT/weights{r}.pt``.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

faulthandler.dump_traceback_later(240, exit=True)  # never outlive the caller
torch.set_num_threads(1)

from nbcallback.dataset import NumpySlicesDataset  # noqa: E402
from nbcallback.train import BackupAndRestore, Callback, CheckpointConfig, Model, ModelCheckpoint, RunContext  # noqa: E402
from nbcallback.train.distributed import ParallelContext, init_distributed  # noqa: E402

EPOCHS, ROWS, FEATURES, BATCH = 3, 512, 32, 16


class Record(Callback):
    """The first and the last step this attempt trained; the kill."""

    def __init__(self, out: Path, rank: int, attempt: int, kill: tuple[int, int] | None) -> None:
        self.path = out / f"attempt{attempt}_rank{rank}.json"
        self.rank, self.attempt, self.kill = rank, attempt, kill
        self.result: dict = {"rank": rank, "attempt": attempt, "first": None, "last": None}

    def on_train_step_begin(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if self.result["first"] is None:
            step_in_epoch = (cb["cur_step_num"] - 1) % cb["batch_num"] + 1
            self.result["first"] = [cb["cur_epoch_num"], step_in_epoch, cb["cur_step_num"]]
            self.path.write_text(json.dumps(self.result))

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        step_in_epoch = (cb["cur_step_num"] - 1) % cb["batch_num"] + 1
        if self.kill == (cb["cur_epoch_num"], step_in_epoch) and self.rank == 1 and self.attempt == 0:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_train_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.result["last"] = [cb["cur_epoch_num"], cb["cur_step_num"]]
        self.path.write_text(json.dumps(self.result))


def main() -> int:
    out = Path(sys.argv[1])
    args = sys.argv[2:]
    kill = (int(args[args.index("--kill") + 1]), int(args[args.index("--kill") + 2])) if "--kill" in args else None
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    started = time.monotonic()
    if "--plain-init" in args:
        torch.distributed.init_process_group("gloo")
        context = ParallelContext.detect()
    else:
        context = init_distributed(backend="gloo")
    rank = context.rank
    if rank == 0:
        print(f"attempt {attempt}: {context.world_size} ranks joined in {time.monotonic() - started:.2f} s", flush=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    features = rng.standard_normal((ROWS, FEATURES)).astype(np.float32)
    labels = (features[:, :10].argmax(axis=1)).astype(np.int64)
    dataset = NumpySlicesDataset({"x": features, "y": labels}).batch(BATCH)  # sharded by rank, shuffled per epoch
    net = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10))
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.05, momentum=0.9))
    backup = BackupAndRestore(str(out / "backup"), save_freq="epoch")
    steps = dataset.get_dataset_size()
    checkpoint = ModelCheckpoint("net", str(out / "ckpt"), CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=EPOCHS))
    model.train(EPOCHS, dataset, callbacks=[backup, checkpoint, Record(out, rank, attempt, kill)])
    if rank == 0 and backup.resumed_from is not None:
        epoch, step, global_step = backup.resumed_from
        where = f"the start of epoch {epoch + 1}" if step == 0 else f"epoch {epoch + 1}, after its step {step}"
        print(f"attempt {attempt}: resumed from the backup at {where} (global step {global_step + 1})", flush=True)
    torch.save({k: v.clone() for k, v in net.state_dict().items()}, out / f"weights{rank}.pt")
    if rank == 0:
        print(f"attempt {attempt}: finished {EPOCHS} epochs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
