"""A rank that ends while gloo may still hold tensors Python has let go of (``test_exit.py``).

Usage: ``exit_worker.py MODE OUT``, 2 ranks under torchrun.

* ``script``: shaped like a user's script. A ``Model`` kept in a global (its DDP wrapper keeps the default group
  alive to the end) trains 2 epochs with ``LossMonitor`` (a host all-reduce at each line) while rank 1 requests a
  stop (the stop votes); then ``model.eval`` (the metric sums, the last collective). Last, 30 stop votes are sent
  and never read: what a step that failed between sending its vote and reading it leaves in flight, thirty times,
  so that gloo's threads still hold Python's tensors when the interpreter exits (pytorch/pytorch#179291). The exit
  must be clean (code 0) on every rank.
* ``threads``: counts this process's threads (``/proc/self/task``) before ``init_distributed``, after the votes and
  host sums, and after ``_OWN_GROUPS.close()`` (what runs at exit), into ``OUT/threads{rank}.json``.
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

faulthandler.dump_traceback_later(100, exit=True)  # never outlive the test
torch.set_num_threads(1)

from nbcallback.dataset import NumpySlicesDataset  # noqa: E402
from nbcallback.train import Callback, LossMonitor, Model, RunContext  # noqa: E402
from nbcallback.train import distributed  # noqa: E402


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


class StopOnRankOne(Callback):
    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if cb["rank_id"] == 1 and cb["cur_step_num"] == 12:
            run_context.request_stop()


def leave_votes_in_flight(count: int) -> None:
    group, device = distributed._control_group()
    for _ in range(count):  # never waited: Python lets each flag go while gloo's threads still hold it
        torch.distributed.all_reduce(torch.zeros(5, dtype=torch.float64, device=device), group=group, async_op=True)


rng = np.random.default_rng(0)
x = rng.standard_normal((256, 8)).astype(np.float32)
y = (x[:, :4].argmax(axis=1)).astype(np.int64)
MODE, OUT = sys.argv[1], Path(sys.argv[2])
before = threads()
context = distributed.init_distributed(backend="gloo")

if MODE == "script":
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.05), metrics={"accuracy", "loss"})
    data = NumpySlicesDataset({"x": x, "y": y}).batch(8)
    model.train(2, data, callbacks=[LossMonitor(4), StopOnRankOne()])
    # One write of the whole line: with PYTHONUNBUFFERED, print() writes the text and the newline apart, and the
    # other rank's line can come in between on the shared pipe.
    sys.stdout.write(f"rank {context.rank} evaluated {sorted(model.eval(data))}\n")
    leave_votes_in_flight(30)
else:
    distributed.all_reduce(torch.ones(3), what="a host sum")
    leave_votes_in_flight(30)
    used = threads()
    distributed._OWN_GROUPS.close()
    (OUT / f"threads{context.rank}.json").write_text(json.dumps({"before": before, "used": used, "closed": threads()}))
