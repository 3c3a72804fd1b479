"""Small synthetic training set-ups shared by the widget tests (seconds, not minutes)."""
from __future__ import annotations

import copy
import os
import time
from typing import Any

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, Model

from tests.widgets._reader import put_buffers

SEED = int(os.environ.get("NBCB_TEST_SEED", "0"))


def batches(n: int, bs: int = 16, seed: int = 0, features: int = 8) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n`` batches with a learnable signal (the label is the sign of two features)."""
    generator = torch.Generator().manual_seed(SEED * 1000 + seed)
    out = []
    for _ in range(n):
        x = torch.randn(bs, features, generator=generator)
        out.append((x, (x[:, :2].sum(1) > 0).long()))
    return out


def new_model(lr: float = 0.05, two_groups: bool = False) -> tuple[Model, torch.optim.Optimizer]:
    """A tiny MLP, its SGD optimizer (optionally two groups, the second at lr/10) and a Model."""
    torch.manual_seed(SEED)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    if two_groups:
        params = [{"params": net[0].parameters()}, {"params": net[2].parameters(), "lr": lr / 10}]
    else:
        params = net.parameters()
    opt = torch.optim.SGD(params, lr=lr)
    return Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}), opt


class AtStep(Callback):
    """Run ``action(run_context)`` at the end of the given global training step."""

    def __init__(self, step: int, action) -> None:
        self.step = step
        self.action = action

    def on_train_step_end(self, run_context) -> None:
        if run_context.original_args().cur_step_num == self.step:
            self.action(run_context)


class Ticker(Callback):
    """Advance a fake clock by ``seconds`` at every training and evaluation step."""

    def __init__(self, clock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds

    def on_train_step_end(self, run_context) -> None:
        self.clock.advance(self.seconds)

    def on_eval_step_end(self, run_context) -> None:
        self.clock.advance(self.seconds / 3)


class Pace(Callback):
    """Make every training step last ``seconds`` longer (real time)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_train_step_end(self, run_context) -> None:
        time.sleep(self.seconds)


@pytest.fixture(scope="session", autouse=True)
def _print_seed() -> None:
    print(f"\nwidget tests: NBCB_TEST_SEED={SEED}")


class FakeClock:
    """A manually advanced monotonic clock that counts its reads (``clock()`` returns the time)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = float(start)
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back (advance by {seconds})")
        self.now += seconds


def record_views(widget: Any) -> list[dict[str, Any]]:
    """What a page of ``widget`` (a DashboardWidget) receives from now on: its ``view`` now, then each change of
    the trait and each ``{"type": "view"}`` message, in order."""
    views = [widget.view]
    widget.observe(lambda change: views.append(change["new"]), names="view")
    send = widget.send

    def spy(content: Any, buffers: Any = None) -> None:
        if isinstance(content, dict) and content.get("type") == "view":
            views.append(put_buffers(copy.deepcopy(content["view"]), content.get("buffer_paths"), buffers))
        send(content, buffers)

    widget.send = spy
    return views
