"""The tutorial's pipeline and network, for scripts that run it (the CLI, the DDP example, benchmarks).

The notebooks spell these out cell by cell, as the tutorial does; programs
import them from here so there is one definition.
"""
from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from nbcallback.dataset import MnistDataset, transforms, vision

__all__ = ["datapipe", "Network", "MNIST_MEAN", "MNIST_STD"]

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
