"""Fixtures for the dataset tests: tiny MNIST folders built on the fly."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tests.dataset.idx_files import tiny_arrays, write_idx


@pytest.fixture
def make_mnist(tmp_path: Path) -> Callable[..., Path]:
    """Build a tiny MNIST folder: ``make_mnist(train=100, test=30, gz=False)``.

    Train rows have ids 0..train-1, test rows ids 100.. (so the two are told apart).
    """

    def make(train: int | None = 100, test: int | None = 30, gz: bool = False, name: str = "mnist") -> Path:
        folder = tmp_path / name
        folder.mkdir(parents=True, exist_ok=True)
        for prefix, n, offset in (("train", train, 0), ("t10k", test, 100)):
            if n is None:
                continue
            images, labels = tiny_arrays(n, offset)
            write_idx(folder / f"{prefix}-images-idx3-ubyte", images, gz=gz)
            write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels, gz=gz)
        return folder

    return make
