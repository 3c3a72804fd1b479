"""Small in-process training set-ups and checks shared by the interrupt and fault tests."""
from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nbcallback.train import Callback, Model, RunContext, load_checkpoint
from nbcallback.train.callback import EVAL_HOOKS, TRAIN_HOOKS
from nbcallback.train.serialization import PARTIAL_MARKER

HOOKS = TRAIN_HOOKS + EVAL_HOOKS
STEPS_PER_EPOCH = 6
EVAL_STEPS = 3


def batches(n: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randn(8, 8, generator=generator)
        out.append((x, (x[:, :2].sum(dim=1) > 0).long()))
    return out


def new_model(seed: int = 0) -> tuple[Model, nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    return Model(net, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"}), net, optimizer


def train_data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    return batches(STEPS_PER_EPOCH, seed=1)


def valid_data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    return batches(EVAL_STEPS, seed=2)


class HookLog(Callback):
    """Records every hook, ``__enter__`` and ``__exit__`` (with the exception type) of one run."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __enter__(self) -> "HookLog":
        self.calls.append(("__enter__", None))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.calls.append(("__exit__", exc_type))
        return None

    def hooks(self) -> list[str]:
        return [name for name, _ in self.calls if not name.startswith("__")]

    def exits(self) -> list[Any]:
        return [value for name, value in self.calls if name == "__exit__"]

    def enters(self) -> int:
        return sum(name == "__enter__" for name, _ in self.calls)


def _record(hook: str):
    def method(self: HookLog, run_context: RunContext) -> None:
        self.calls.append((hook, None))

    method.__name__ = hook
    return method


for _hook in HOOKS:
    setattr(HookLog, _hook, _record(_hook))


class Deadline(Callback):
    """Ends a run that should have been interrupted long ago (so no test can hang on it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False

    def on_train_begin(self, run_context: RunContext) -> None:
        self.until = time.monotonic() + self.seconds

    def on_train_step_end(self, run_context: RunContext) -> None:
        if time.monotonic() > self.until:
            self.expired = True
            run_context.request_stop()


class SigintTimer(Callback):
    """``signal.raise_signal(SIGINT)`` from another thread, ``delay`` seconds after training began.

    The signal is only sent while the run is still going (a run that ended first,
    e.g. by its Deadline, gets none).
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.fired = threading.Event()
        self._ended = threading.Event()
        self._thread: threading.Thread | None = None
        self._depth = 0

    def __enter__(self) -> "SigintTimer":
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._ended.set()
        return None

    def on_train_begin(self, run_context: RunContext) -> None:
        self._thread = threading.Thread(target=self._fire, name="sigint-timer", daemon=True)
        self._thread.start()

    def _fire(self) -> None:
        import signal

        if self._ended.wait(self.delay):
            return
        self.fired.set()
        signal.raise_signal(signal.SIGINT)

    def join(self) -> None:
        self._ended.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            assert not self._thread.is_alive()


def partial_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".") and PARTIAL_MARKER in p.name)


def assert_checkpoints_complete(folder: Path) -> list[Path]:
    """No temporary file; every ``.ckpt`` loads. Returns the checkpoints."""
    assert partial_files(folder) == []
    files = sorted(folder.glob("*.ckpt"))
    for path in files:
        entries = load_checkpoint(str(path))
        assert "0.weight" in entries, path.name
    return files


def assert_model_usable(model: Model, net: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """A second train call works: the weights move and stay finite, every parameter has its momentum."""
    before = [p.detach().clone() for p in net.parameters()]
    model.train(1, train_data())
    after = list(net.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after))
    assert all(torch.isfinite(p).all() for p in after)
    assert all("momentum_buffer" in optimizer.state[p] for p in after)
    metrics = model.eval(valid_data())
    assert math.isfinite(metrics["loss"])
