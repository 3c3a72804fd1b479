"""Small synthetic problems and a recording callback shared by the train tests."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from nbcallback.train import Callback, RunContext
from nbcallback.train.callback import EVAL_HOOKS, TRAIN_HOOKS


def blobs(n_batches: int = 4, batch_size: int = 16, n_classes: int = 3, features: int = 8, seed: int = 0,
          label_dtype: torch.dtype = torch.int64) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A learnable classification problem: Gaussian blobs around fixed class centres."""
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(n_classes, features, generator=torch.Generator().manual_seed(1234)) * 3
    batches = []
    for _ in range(n_batches):
        y = torch.randint(0, n_classes, (batch_size,), generator=gen)
        x = centres[y] + torch.randn(batch_size, features, generator=gen)
        batches.append((x, y.to(label_dtype)))
    return batches


def regression(n_batches: int = 4, batch_size: int = 16, features: int = 4, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    w = torch.arange(1, features + 1, dtype=torch.float32)
    batches = []
    for _ in range(n_batches):
        x = torch.randn(batch_size, features, generator=gen)
        y = (x @ w).unsqueeze(1) + 0.01 * torch.randn(batch_size, 1, generator=gen)
        batches.append((x, y))
    return batches


def mlp(features: int = 8, n_classes: int = 3, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, n_classes))


def make_model(n_classes: int = 3, features: int = 8, metrics: Any = ("accuracy",), lr: float = 0.1,
               momentum: float = 0.0, seed: int = 0, **kwargs: Any):
    from nbcallback.train import Model

    net = mlp(features, n_classes, seed)
    opt = torch.optim.SGD(net.parameters(), lr, momentum=momentum)
    if isinstance(metrics, tuple):
        metrics = set(metrics)
    return Model(net, nn.CrossEntropyLoss(), opt, metrics=metrics, **kwargs)


class Recorder(Callback):
    """Records every ``on_*`` hook (and ``__enter__``/``__exit__``) into a shared list."""

    def __init__(self, log: list | None = None, name: str = "rec", snapshot: Any = None) -> None:
        self.log = [] if log is None else log
        self.name = name
        self.snapshot = snapshot  # optional f(hook, cb_params) -> stored value
        self.snaps: list = []

    def __enter__(self):
        self.log.append((self.name, "__enter__"))
        return self

    def __exit__(self, *exc):
        self.log.append((self.name, "__exit__", exc[0]))
        return None


def _make_hook(hook: str):
    def method(self: Recorder, run_context: RunContext) -> None:
        self.log.append((self.name, hook))
        if self.snapshot is not None:
            self.snaps.append((hook, self.snapshot(hook, run_context.original_args())))
    method.__name__ = hook
    return method


for _hook in TRAIN_HOOKS + EVAL_HOOKS:
    setattr(Recorder, _hook, _make_hook(_hook))


def hooks_only(log: list, name: str = "rec") -> list[str]:
    return [entry[1] for entry in log if entry[0] == name]


__all__ = ["blobs", "regression", "mlp", "make_model", "Recorder", "hooks_only"]
