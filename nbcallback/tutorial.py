"""The tutorial's pipeline and network, and the helpers the notebooks share, in one place.

Notebook 1 spells ``datapipe`` and ``Network`` out cell by cell, as MindSpore's tutorial does;
the later notebooks (2, 3, 3b, 4 and the exercises) import them from here with ``new_trainer`` (a fresh
seeded network, SGD at lr 0.01 and a ``Model``, per section), ``mnist_slices`` (the small datasets that keep
each demonstration short) and ``tree`` (a folder listing like the tutorial's). Programs (the CLI, the DDP
example, benchmarks) import them too, so there is one definition. ``notebooks/README.md`` shows what each
helper builds.
"""
from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from nbcallback.dataset import MnistDataset, transforms, vision
from nbcallback.train import Model

__all__ = ["datapipe", "Network", "new_trainer", "mnist_slices", "tree", "MNIST_MEAN", "MNIST_STD"]

MNIST_MEAN = 0.1307
MNIST_STD = 0.3081


def datapipe(
    path: str | os.PathLike[str],
    batch_size: int,
    *,
    label_dtype: torch.dtype = torch.int64,
    **mnist_options: Any,
) -> MnistDataset:
    """``MnistDataset(path).map(image ops, 'image').map(TypeCast, 'label').batch(batch_size)``.

    Args:
        path: a folder holding MNIST IDX files (``MNIST_Data/train`` or ``…/test``).
        batch_size: rows per batch (the last batch may be smaller).
        label_dtype: the label type; the tutorial uses int32, torch's losses like int64.
        **mnist_options: passed to :class:`~nbcallback.dataset.MnistDataset`
            (``num_samples``, ``shuffle``, ``num_shards``, ``shard_id`` …).
    """
    image_transforms = [
        vision.Rescale(1.0 / 255.0, 0),
        vision.Normalize(mean=(MNIST_MEAN,), std=(MNIST_STD,)),
        vision.HWC2CHW(),
    ]
    dataset = MnistDataset(os.fspath(path), **mnist_options)
    dataset = dataset.map(image_transforms, "image")
    dataset = dataset.map(transforms.TypeCast(label_dtype), "label")
    return dataset.batch(batch_size)


class Network(nn.Module):
    """The tutorial's MLP: flatten, 784 → 512 → 512 → 10 with ReLUs."""

    def __init__(self) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense_relu_sequential(self.flatten(x))


def new_trainer(lr: float = 1e-2, seed: int = 0) -> Model:
    """Notebook 1's trainer in one call: a fresh :class:`Network`, SGD at ``lr``, in a :class:`~nbcallback.train.Model`.

    Exactly::

        torch.manual_seed(seed)
        network = Network()
        optimizer = torch.optim.SGD(network.parameters(), lr)
        return Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"})

    The weights come from ``torch.manual_seed(seed)``, so every section of a notebook that calls
    it starts from the same network. ``lr=0.01`` is the tutorial's ``1e-2``.
    """
    torch.manual_seed(seed)
    network = Network()
    optimizer = torch.optim.SGD(network.parameters(), lr)
    return Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"})


def mnist_slices(
    path: str | os.PathLike[str],
    batch_size: int = 64,
    *,
    train_samples: int = 12000,
    test_samples: int = 2000,
) -> tuple[MnistDataset, MnistDataset]:
    """``(train, test)``: ``train_samples`` random training images (a new slice each epoch) and the
    first ``test_samples`` test images (always the same ones), batched by ``batch_size``.

    ``path`` is the ``MNIST_Data`` folder (holding ``train`` and ``test``).
    """
    root = os.fspath(path)
    train = datapipe(os.path.join(root, "train"), batch_size, num_samples=train_samples)
    test = datapipe(os.path.join(root, "test"), batch_size, num_samples=test_samples, shuffle=False)
    return train, test


def tree(folder: str | os.PathLike[str]) -> None:
    """Print ``folder`` and its sorted file names like the tutorial's directory listings."""
    print(os.fspath(folder))
    names = sorted(os.listdir(folder))
    for i, name in enumerate(names):
        print(("└── " if i == len(names) - 1 else "├── ") + name)
