"""What the benchmark workloads share: MNIST tensors, the tutorial network, batching, statistics.

The workload is the one of ``shared/reference/perf-baseline.md`` §2: IDX files
decoded with ``np.frombuffer``, ``x = (u8 * (1/255) - 0.1307) / 0.3081`` as
float32 tensors (train 60000x28x28, test 10000x28x28), the MLP
``Flatten, Linear(784,512), ReLU, Linear(512,512), ReLU, Linear(512,10)`` with
torch's default init, ``CrossEntropyLoss``, ``SGD(lr=1e-2)``, batch 64
(938 steps), a ``torch.randperm`` per epoch and batches gathered by index.

Nothing here imports nbcallback, so the bare/Lightning/Keras processes never
load it.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

REPO = Path(__file__).resolve().parents[1]
BATCH_SIZE = 64
MEAN, STD = 0.1307, 0.3081
FILES = {
    "train": ("train/train-images-idx3-ubyte", "train/train-labels-idx1-ubyte"),
    "test": ("test/t10k-images-idx3-ubyte", "test/t10k-labels-idx1-ubyte"),
}


def ensure_repo_on_path() -> None:
    """Make ``import nbcallback`` / ``import benchmarks`` find this checkout (not another install)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def pin_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)`` (0: leave torch's default)."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)


def read_idx_numpy(path: Path):
    """An IDX file as a numpy array (header: magic, then one big-endian uint32 per dimension)."""
    import numpy as np

    raw = path.read_bytes()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(tuple(int(d) for d in dims))


def mnist_tensors(data: str | os.PathLike[str], split: str = "train"):
    """``(images float32 (N, 28, 28) normalised, labels int64 (N,))`` as the baseline decodes them."""
    import numpy as np
    import torch

    images_file, labels_file = FILES[split]
    root = Path(data)
    u8 = read_idx_numpy(root / images_file)
    x = (u8.astype(np.float32) * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)
    y = read_idx_numpy(root / labels_file).astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)


def make_network():
    from torch import nn

    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(28 * 28, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )


def build(seed: int):
    """``(network, loss_fn, optimizer)`` seeded like the baseline (``torch.manual_seed(seed)`` first)."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    network = make_network()
    optimizer = torch.optim.SGD(network.parameters(), lr=1e-2)
    return network, nn.CrossEntropyLoss(), optimizer


class GatherBatches:
    """Batches ``(images[idx], labels[idx])`` of a ``randperm`` drawn per epoch from a seeded generator.

    Exactly the bare loop's batching, as a sized iterable ``Model`` can take.
    ``limit`` caps the batches per epoch (``--quick``).
    """

    def __init__(self, images, labels, seed: int, batch_size: int = BATCH_SIZE, limit: int | None = None) -> None:
        import torch

        self.images, self.labels, self.batch_size = images, labels, batch_size
        self.generator = torch.Generator().manual_seed(seed)
        steps = (len(labels) + batch_size - 1) // batch_size
        self.steps = steps if limit is None else min(steps, limit)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        import torch

        perm = torch.randperm(len(self.labels), generator=self.generator)
        images, labels, size = self.images, self.labels, self.batch_size
        for i in range(0, self.steps * size, size):
            idx = perm[i:i + size]
            yield images[idx], labels[idx]


class EvalBatches:
    """The test set in file order, batches of 64 (157 batches), by slicing."""

    def __init__(self, images, labels, batch_size: int = BATCH_SIZE, limit: int | None = None) -> None:
        self.images, self.labels, self.batch_size = images, labels, batch_size
        steps = (len(labels) + batch_size - 1) // batch_size
        self.steps = steps if limit is None else min(steps, limit)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        size = self.batch_size
        for i in range(0, self.steps * size, size):
            yield self.images[i:i + size], self.labels[i:i + size]


def bare_epochs(network, loss_fn, optimizer, batches, epochs: int, stamp=None):
    """The bare PyTorch loop the benchmarks compare with: ``epochs`` passes over ``batches``, ``stamp(now)`` after
    each step when given; returns the last loss."""
    network.train()
    loss = None
    for _ in range(epochs):
        for images, labels in batches:
            loss = loss_fn(network(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if stamp is not None:
                stamp(time.perf_counter())
    return loss


def eval_accuracy(network, images, labels) -> float:
    """Accuracy on the test set (batches of 64 under ``no_grad``), for the sanity column."""
    import torch

    was = network.training
    network.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(labels), BATCH_SIZE):
            correct += int((network(images[i:i + BATCH_SIZE]).argmax(1) == labels[i:i + BATCH_SIZE]).sum())
    network.train(was)
    return correct / len(labels)


def step_stats(stamps: Sequence[float]) -> dict[str, float]:
    """Per-step durations from step-end timestamps: p10 (contention-robust), median, max."""
    steps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    if not steps:
        return {}
    return {
        "step_p10_ms": 1e3 * steps[len(steps) // 10],
        "step_median_ms": 1e3 * statistics.median(steps),
        "step_max_ms": 1e3 * steps[-1],
    }


def summarize(values: Sequence[float]) -> dict[str, Any]:
    values = list(values)
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
            "values": values}


def loadavg() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def busy_jiffies() -> tuple[int, int] | None:
    """``(busy, total)`` CPU jiffies of the machine from /proc/stat (None where unavailable)."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()
