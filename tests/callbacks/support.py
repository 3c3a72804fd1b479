"""Small models, datasets and helpers shared by the callback tests."""
from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch import nn

from nbcallback.train import Callback, CallbackParams, Metric, Model, RunContext

#: The repository root (what subprocesses need on PYTHONPATH).
REPO_ROOT = Path(__file__).resolve().parents[2]


def toy_tensors(n: int = 256, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 8, 8, generator=generator)
    y = (x.mean(dim=(1, 2, 3)) > 0).long()
    return x, y


def toy_batches(n: int = 256, batch: int = 32, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A fixed list of (data, label) batches: a Model dataset without shuffling."""
    x, y = toy_tensors(n, seed)
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


class ShuffledBatches:
    """A dataset that draws a new order from torch's global RNG at every epoch (like a shuffling loader)."""

    def __init__(self, n: int = 256, batch: int = 32, seed: int = 1) -> None:
        self.x, self.y = toy_tensors(n, seed)
        self.batch = batch

    def __len__(self) -> int:
        return (len(self.x) + self.batch - 1) // self.batch

    def __iter__(self):
        order = torch.randperm(len(self.x))
        for i in range(0, len(order), self.batch):
            index = order[i : i + self.batch]
            yield self.x[index], self.y[index]


def toy_net(dropout: float = 0.0) -> nn.Module:
    layers: list[nn.Module] = [nn.Flatten(), nn.Linear(64, 16), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(16, 2))
    return nn.Sequential(*layers)


def toy_model(
    seed: int = 0,
    lr: float = 0.1,
    metrics: Any = None,
    dropout: float = 0.0,
    momentum: float = 0.9,
) -> tuple[Model, nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    net = toy_net(dropout)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    return Model(net, nn.CrossEntropyLoss(), opt, metrics=metrics), net, opt


class Scripted(Metric):
    """A metric whose ``eval()`` returns the next value of a script (one per validation run)."""

    def __init__(self, values: Sequence[float]) -> None:
        self.values = list(values)
        self.calls = 0

    def clear(self) -> None:
        pass

    def update(self, *inputs: Any) -> None:
        pass

    def eval(self) -> float:
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return value


class Recorder(Callback):
    """Calls ``fn(cb_params)`` at one hook and keeps the results in ``values``."""

    def __init__(self, hook: str, fn: Callable[[CallbackParams], Any]) -> None:
        self.values: list[Any] = []
        self._fn = fn
        setattr(self, hook, self._record)

    def _record(self, run_context: RunContext) -> None:
        self.values.append(self._fn(run_context.original_args()))


def weights(net: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def fake_context(**params: Any) -> RunContext:
    return RunContext(CallbackParams(**params))


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


PYTHON = sys.executable
deepcopy = copy.deepcopy


class LeNet5(nn.Module):
    """The tutorial's LeNet5 for 28x28 MNIST images."""

    def __init__(self, num_class: int = 10, num_channel: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_class)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def noisy(image: Any) -> Any:
    """A random augmentation drawing from numpy's global RNG (runs per sample, every epoch)."""
    import numpy as np

    return (image + np.random.normal(0.0, 0.05, image.shape)).astype(np.float32)


def mnist(folder: Any, num_samples: int, shuffle: bool = True, batch: int = 64, augment: bool = False) -> Any:
    """The tutorial's pipeline on a slice of MNIST: Rescale, Normalize, HWC2CHW, TypeCast, batch."""
    from nbcallback.dataset import MnistDataset, transforms, vision

    ops: list[Any] = [vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.1307,), std=(0.3081,)), vision.HWC2CHW()]
    if augment:
        ops.append(noisy)
    dataset = MnistDataset(str(folder), num_samples=num_samples, shuffle=shuffle)
    dataset = dataset.map(ops, "image").map(transforms.TypeCast(torch.int32), "label")
    return dataset.batch(batch)


def backup_run(mnist_root: Any, backup_dir: Any, pace_from: int = 0) -> dict[str, Any]:
    """The training the BackupAndRestore kill test runs (in a subprocess, and in-process as the reference).

    3 epochs of 10 steps: a new random 640-image subset every epoch (torch's
    RNG), a numpy-random augmentation, a per-step learning-rate schedule, a
    plateau reduction and History. Each step prints ``STEP n``; at step
    ``pace_from`` (when not 0) the process waits to be killed.
    """
    import time

    import numpy as np

    from nbcallback.train import BackupAndRestore, History, LearningRateScheduler, ReduceLROnPlateau

    class Pace(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            step = run_context.original_args().cur_step_num
            print("STEP", step, flush=True)
            if pace_from and step >= pace_from:
                time.sleep(60)  # wait here to be killed (a late kill still lands at this step)

    torch.manual_seed(0)
    np.random.seed(0)  # the augmentation draws from numpy
    net = LeNet5()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"})
    train = mnist(Path(mnist_root) / "train", num_samples=640, augment=True)
    valid = mnist(Path(mnist_root) / "test", num_samples=256, shuffle=False)
    history = History()
    callbacks = [
        BackupAndRestore(backup_dir, save_freq=5),
        LearningRateScheduler(lambda lr, step: lr * 0.97),
        ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5),
        history,
        Pace(),
    ]
    model.fit(3, train, valid, callbacks=callbacks)
    return {
        "weights": {k: v.clone() for k, v in net.state_dict().items()},
        "lr": opt.param_groups[0]["lr"],
        "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
    }
