"""One rank of a 2-rank job set up badly on purpose (``test_bad_setups.py``).

Usage: ``fault_worker.py SCENARIO OUT``; run by ``torch.distributed.run`` (or by the test with RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT set). The limit comes from ``NBCALLBACK_DIST_TIMEOUT``.
Each rank that gets an error writes ``OUT/rank{r}.json``: ``{"error": message, "type": class, "seconds": s}``.

* ``never``: rank 1 never calls ``init_distributed`` (it sleeps); rank 0 must give up after the limit.
* ``world``: started by the test with world sizes that differ between the ranks.
* ``raises``: rank 1's callback raises at the end of epoch 1 and its process stays alive (as a notebook
  kernel does); rank 0 waits in the epoch-end stop vote.
* ``rows``: the ranks' datasets have 10 and 12 rows (``num_shards=1``, not shuffled): 5 and 6 batches.
"""
from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

faulthandler.dump_traceback_later(150, exit=True)  # never outlive the test
torch.set_num_threads(1)

from nbcallback.dataset import NumpySlicesDataset  # noqa: E402
from nbcallback.train import Callback, Model, RunContext  # noqa: E402
from nbcallback.train.distributed import DistributedError, init_distributed  # noqa: E402


class RaiseAtEpochEnd(Callback):
    def on_train_epoch_end(self, run_context: RunContext) -> None:
        raise ValueError("a bug in rank 1's callback")


def record(out: Path, rank: int, exc: BaseException, started: float) -> None:
    (out / f"rank{rank}.json").write_text(
        json.dumps({"error": str(exc), "type": type(exc).__name__, "seconds": time.monotonic() - started})
    )


def train(rank: int, rows: int, callbacks: list) -> None:
    torch.manual_seed(0)
    data = {"x": np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) / 10, "y": np.arange(rows) % 2}
    dataset = NumpySlicesDataset(data, shuffle=False, num_shards=1, shard_id=0).batch(2)
    net = nn.Linear(4, 2)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
    model.train(2, dataset, callbacks=callbacks)


def main() -> int:
    scenario, out = sys.argv[1], Path(sys.argv[2])
    rank = int(os.environ["RANK"])
    started = time.monotonic()
    if scenario == "never" and rank == 1:
        time.sleep(600)  # never arrives; torchrun ends it when rank 0 fails
        return 0
    try:
        init_distributed(backend="gloo")
        started = time.monotonic()
        if scenario == "raises":
            try:
                train(rank, 8, [RaiseAtEpochEnd()] if rank == 1 else [])
            except ValueError as exc:
                record(out, rank, exc, started)
                time.sleep(600)  # the process lives on, as a notebook kernel does after an error
                return 0
        elif scenario == "rows":
            train(rank, 10 + 2 * rank, [])
    except DistributedError as exc:
        record(out, rank, exc, started)
        print(f"rank {rank}: {exc}", file=sys.stderr, flush=True)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
