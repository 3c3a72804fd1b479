"""The dataset API (``mindspore.dataset`` counterpart): sources, operations, transforms, config.

Laid out as MindSpore's documentation is:

* sources -- :class:`MnistDataset` (:mod:`.mnist`), :class:`GeneratorDataset`
  and :class:`NumpySlicesDataset` (:mod:`.sources`);
* operations -- methods of :class:`Dataset` (:mod:`.datasets`): ``map``,
  ``batch``, ``padded_batch``, ``shuffle``, ``repeat``, ``take``, ``skip``,
  ``rename``, ``project``, ``concat``/``+``, ``zip``, ``filter``, ``split``;
  what each does row by row is in :mod:`.operations`;
* :mod:`.vision` and :mod:`.transforms` -- the ops given to ``map``;
* samplers (:mod:`.samplers`): ``SequentialSampler``, ``RandomSampler``,
  ``DistributedSampler``, ... given to a source's ``sampler=`` or to
  ``use_sampler``/``add_sampler``;
* iterators (:mod:`.iterators`) and :mod:`.config` (``set_seed``, ...);
* :class:`DSCallback` / :class:`WaitedDSCallback` (:mod:`.callbacks`), given
  to ``map(..., callbacks=...)``, and ``sync_wait``/``sync_update``; both
  classes are also in :mod:`.callback` (``mindspore.dataset.callback``).

The tutorial's pipeline::

    import torch
    from nbcallback.dataset import MnistDataset, download_mnist, transforms, vision

    path = download_mnist(".")                      # ./MNIST_Data, verified
    dataset = MnistDataset(path / "train")
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0),
                           vision.Normalize(mean=(0.1307,), std=(0.3081,)),
                           vision.HWC2CHW()], "image")
    dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
    dataset = dataset.batch(64)                     # 938 batches per epoch

Built-in transforms run once over whole columns and are cached, and
shuffles/batches are index gathers, whenever the pipeline allows it
(:mod:`._fast_path`); Python callables run per sample every epoch.
Everything runs in the calling thread.
"""
from __future__ import annotations

from typing import Any

from . import callback, config, samplers, transforms, vision
from .callbacks import DSCallback
from .datasets import Dataset, zip
from .download import DEFAULT_URLS, URL_ENV, DownloadError, download_mnist
from .idx import IdxError, read_idx
from .iterators import DatasetIterator
from .mnist import MnistDataset
from .operations import BatchInfo
from .samplers import (
    BuiltinSampler,
    DistributedSampler,
    IterSampler,
    PKSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    SubsetSampler,
    WeightedRandomSampler,
)
from .sources import GeneratorDataset, NumpySlicesDataset, SourceDataset

__all__ = [
    "DEFAULT_URLS",
    "URL_ENV",
    "BatchInfo",
    *samplers.__all__,
    "DSCallback",
    "Dataset",
    "DatasetIterator",
    "GeneratorDataset",
    "NumpySlicesDataset",
    "DownloadError",
    "IdxError",
    "MnistDataset",
    "SourceDataset",
    "WaitedDSCallback",
    "config",
    "download_mnist",
    "read_idx",
    "transforms",
    "vision",
    "zip",
]


def __getattr__(name: str) -> Any:
    """``WaitedDSCallback`` on first use: it imports ``nbcallback.train`` (see :mod:`._waited`)."""
    if name == "WaitedDSCallback":
        from ._waited import WaitedDSCallback

        return WaitedDSCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
