"""``MnistDataset``: MNIST read from IDX files, as in ``mindspore.dataset.MnistDataset``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ._validate import check_int, type_error
from .idx import IdxHeader, read_idx, read_idx_header
from .sources import SourceDataset

__all__ = ["MnistDataset"]

IMAGES_MAGIC = 0x00000803  # uint8, 3 dimensions (count, rows, columns)
LABELS_MAGIC = 0x00000801  # uint8, 1 dimension (count)
_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_USAGES = ("train", "test", "all")


def _find(folder: Path, name: str) -> Path | None:
    """The file ``name`` or ``name.gz`` in ``folder`` (plain preferred), or None."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


class MnistDataset(SourceDataset):
    """The MNIST handwritten digits, read from the four IDX files.

    Columns: ``image`` (uint8, HWC, ``28 x 28 x 1``) and ``label`` (uint32
    scalar), as in MindSpore. The files are checked (presence, magic numbers,
    sizes, image/label counts) when the dataset is created; the pixels are
    read on first iteration, in one read per file, and cached.

    Args:
        dataset_dir: Folder holding ``train-images-idx3-ubyte``,
            ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
            ``t10k-labels-idx1-ubyte`` (each may also be gzip-compressed with a
            ``.gz`` suffix), e.g. ``MNIST_Data/train`` from :func:`download_mnist`.
        usage: ``'train'`` (60,000 rows), ``'test'`` (10,000), ``'all'`` (train
            then test), or None for whichever of the two sets is present (both,
            train first, if both are).
        num_samples: Cap on the rows per epoch (per shard when sharded), a
            positive int; None for all.
        num_parallel_workers: Accepted for MindSpore compatibility and ignored
            (decoding is one vectorised read).
        shuffle: New random order every epoch (default True), drawn from
            torch's global RNG; False keeps file order.
        sampler: A sampler (:mod:`nbcallback.dataset.samplers`, e.g.
            ``SequentialSampler()`` for file order, ``PKSampler(5)`` for five
            rows of every digit) or row ids; not together with ``shuffle``,
            ``num_samples`` or shards (RuntimeError, as in MindSpore).
        num_shards: Number of disjoint shards to split the rows into; needs
            ``shard_id``. Under ``torch.distributed`` (a process group of 2+
            ranks initialised before the dataset is created) the default is
            the world size, with ``shard_id`` the rank: each rank reads its own
            shard, shuffled in an order shared by all ranks, and the shards are
            padded to the same size (see :class:`~nbcallback.dataset.sources.SourceDataset`).
        shard_id: The shard to read, in ``[0, num_shards)``.
        cache: Only None is supported.

    Raises:
        FileNotFoundError: The folder or a needed file is missing.
        TypeError: An argument has the wrong type.
        ValueError: An argument is out of range, a file has a wrong magic
            number, is truncated or declares impossible sizes (``IdxError``),
            or an images file and its labels file disagree on the count.
        RuntimeError: ``sampler`` with ``shuffle``, ``num_samples`` or shards.
        NotImplementedError: ``cache`` is given.
    """

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        usage: str | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        if not isinstance(dataset_dir, (str, os.PathLike)):
            raise type_error("dataset_dir", dataset_dir, (str, os.PathLike))
        if usage is not None:
            if not isinstance(usage, str):
                raise type_error("usage", usage, (str,))
            if usage not in _USAGES:
                raise ValueError(f"Input usage is not within the valid set of {list(_USAGES)}, but got {usage!r}.")
        if num_parallel_workers is not None:
            check_int(num_parallel_workers, "num_parallel_workers", 1)
        if cache is not None:
            raise NotImplementedError("MnistDataset: 'cache' is not supported (the decoded data is cached in memory).")
        super().__init__(num_samples=num_samples, shuffle=shuffle, num_shards=num_shards, shard_id=shard_id, sampler=sampler)
        self.dataset_dir = Path(dataset_dir)
        self.usage = usage
        if not self.dataset_dir.is_dir():
            what = "is not a folder" if self.dataset_dir.exists() else "does not exist"
            raise FileNotFoundError(f"MnistDataset: dataset_dir {str(self.dataset_dir)!r} {what}.")
        self._parts = self._check_files(usage)

    def _check_files(self, usage: str | None) -> list[tuple[IdxHeader, IdxHeader]]:
        folder = self.dataset_dir
        if usage in ("train", "test"):
            sets = [usage]
        elif usage == "all":
            sets = ["train", "test"]
        else:
            sets = [s for s, names in _FILES.items() if any(_find(folder, n) for n in names)]
            if not sets:
                expected = ", ".join(n for names in _FILES.values() for n in names)
                hint = ""
                if (folder / "train").is_dir() or (folder / "test").is_dir():
                    hint = f" Did you mean {str(folder / 'train')!r} or {str(folder / 'test')!r}?"
                raise FileNotFoundError(
                    f"MnistDataset: no MNIST files in {str(folder)!r}; expected {expected} (or the same with .gz).{hint}"
                )
        parts = []
        for name in sets:
            images_name, labels_name = _FILES[name]
            found = []
            for file_name in (images_name, labels_name):
                path = _find(folder, file_name)
                if path is None:
                    raise FileNotFoundError(
                        f"MnistDataset: {file_name} (or {file_name}.gz) not found in {str(folder)!r}, "
                        f"needed for usage={usage!r}."
                    )
                found.append(path)
            images = read_idx_header(found[0], IMAGES_MAGIC)
            labels = read_idx_header(found[1], LABELS_MAGIC)
            if images.shape[0] != labels.shape[0]:
                raise ValueError(
                    f"MnistDataset: image/label count mismatch: {images.path} holds {images.shape[0]} "
                    f"images but {labels.path} holds {labels.shape[0]} labels."
                )
            parts.append((images, labels))
        shapes = {p[0].shape[1:] for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"MnistDataset: the train and test images differ in size: {sorted(shapes)}.")
        return parts

    def _source_col_names(self) -> list[str]:
        return ["image", "label"]

    def _source_rows(self) -> int:
        return sum(images.shape[0] for images, _ in self._parts)

    def _load_columns(self) -> dict[str, np.ndarray]:
        rows, cols = self._parts[0][0].shape[1:]
        total = self._source_rows()
        images = np.empty((total, rows, cols, 1), np.uint8)
        labels = np.empty(total, np.uint8)
        start = 0
        for image_header, label_header in self._parts:
            stop = start + image_header.shape[0]
            read_idx(image_header.path, IMAGES_MAGIC, out=images[start:stop])
            read_idx(label_header.path, LABELS_MAGIC, out=labels[start:stop])
            start = stop
        return {"image": images, "label": labels.astype(np.uint32)}

    def __repr__(self) -> str:
        return f"MnistDataset({str(self.dataset_dir)!r}, usage={self.usage!r}, rows={self._count_rows()})"
