"""nbcallback's own checks of how vision ops run inside ``map`` (no MindSpore counterpart).

* Every op says whether it is random (its class attribute ``random``). Random
  ops (every one the package exports is found and run) are drawn per sample and
  per epoch: they differ across samples and epochs, and repeat exactly after
  re-seeding. That holds for a random op built on ``TensorOperation`` too.
* Deterministic ``TensorOperation``s (``random = False``): ``map`` runs their
  ``_apply_column`` once per pipeline build, and that whole-column result
  equals the per-sample result.

Seeding goes through ``nbcallback.dataset.config.set_seed`` when the config
module exists, else through ``random.seed``/``np.random.seed``/``torch.manual_seed``
(what ``set_seed`` does; see ``support.seed_everything``).
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from nbcallback.dataset import MnistDataset, NumpySlicesDataset, transforms, vision
from nbcallback.dataset.transforms import OneHot, TensorOperation, is_cacheable
from nbcallback.dataset.transforms import c_transforms as transforms_c
from nbcallback.dataset.transforms import py_transforms as transforms_py
from nbcallback.dataset.vision import c_transforms as vision_c
from nbcallback.dataset.vision import py_transforms as vision_py
from nbcallback.dataset.vision import (
    Border,
    CenterCrop,
    Grayscale,
    HWC2CHW,
    Inter,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomVerticalFlip,
    Rescale,
    Resize,
    ToTensor,
)
from tests.dataset.idx_files import write_idx

from .support import random_mnist, seed_everything

torch.set_num_threads(1)


def _same_image_mnist(folder: Path, n: int = 40) -> Path:
    """``n`` copies of one random image, so that any difference between rows comes from the random op."""
    image = np.random.default_rng(7).integers(0, 256, (28, 28), dtype=np.uint8)
    write_idx(folder / "train-images-idx3-ubyte", np.broadcast_to(image, (n, 28, 28)).copy())
    write_idx(folder / "train-labels-idx1-ubyte", np.zeros(n, np.uint8))
    return folder


def _epochs(dataset: Any, epochs: int) -> list[list[np.ndarray]]:
    iterator = dataset.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [[np.array(row["image"]) for row in iterator] for _ in range(epochs)]


_OP_MODULES = [vision, vision_c, vision_py, transforms, transforms_c, transforms_py]
# Arguments for the random ops that need some; every other one is built with none.
_ARGUMENTS: dict[str, tuple[Any, ...]] = {"RandomCrop": (20, 2)}


def _exported_op_classes() -> list[type]:
    """Every operation class the package's transform modules export (enums and helpers left out)."""
    found: dict[str, type] = {}
    for module in _OP_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            # Not ops: the enums, Compose (map expands it into its ops), the base class.
            if inspect.isclass(value) and name not in ("Border", "Inter", "Compose", "TensorOperation"):
                found[value.__name__] = value
    return sorted(found.values(), key=lambda c: c.__name__)


def test_every_exported_op_declares_whether_it_is_random() -> None:
    classes = _exported_op_classes()
    assert len(classes) >= 14  # the 12 vision ops, OneHot, TypeCast
    for cls in classes:
        assert isinstance(getattr(cls, "random", None), bool), f"{cls.__name__} does not declare random = True/False"
        if cls.__name__.startswith("Random"):
            assert cls.random, f"{cls.__name__} is named random but declares random = False"


RANDOM_OPS = [cls(*_ARGUMENTS.get(cls.__name__, ())) for cls in _exported_op_classes() if getattr(cls, "random", False)]


def test_the_random_ops_are_found() -> None:
    assert {type(op) for op in RANDOM_OPS} >= {RandomCrop, RandomHorizontalFlip, RandomVerticalFlip}


@pytest.mark.parametrize("op", RANDOM_OPS, ids=lambda op: type(op).__name__)
def test_random_ops_are_never_cached(op: Any) -> None:
    assert not is_cacheable(op)


@pytest.mark.parametrize("op", RANDOM_OPS, ids=lambda op: type(op).__name__)
def test_random_ops_differ_across_samples_and_epochs_and_repeat_under_seed(op: Any, tmp_path: Path) -> None:
    dataset = MnistDataset(str(_same_image_mnist(tmp_path / "mnist")), shuffle=False).map(op, "image")
    seed_everything(123)
    first = _epochs(dataset, 2)
    distinct = {image.tobytes() for image in first[0]}
    assert len(distinct) > 1, "every sample got the same draw"
    assert any(not np.array_equal(a, b) for a, b in zip(first[0], first[1])), "epoch 2 repeated epoch 1"
    seed_everything(123)
    again = _epochs(dataset, 2)
    for epoch, epoch_again in zip(first, again):
        for a, b in zip(epoch, epoch_again):
            np.testing.assert_array_equal(a, b)


class _Noise(TensorOperation):
    """A random op written on TensorOperation (as a user or a new built-in might): adds uniform noise."""

    random: ClassVar[bool] = True

    def __init__(self) -> None:
        self.calls = 0

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        self.calls += 1
        return column.to(torch.float32) + torch.rand(column.shape), True


class _Plus(TensorOperation):
    """A deterministic op that counts its calls."""

    random: ClassVar[bool] = False

    def __init__(self) -> None:
        self.calls = 0

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        self.calls += 1
        return column + 1, True


@pytest.mark.parametrize("batched", [False, True])
def test_a_random_tensor_operation_is_drawn_every_epoch_and_a_deterministic_one_is_cached(batched: bool) -> None:
    # Regression: whether map cached an op depended only on its base class, so a random op built on
    # TensorOperation was computed once and every epoch saw the same noise.
    rows = 12
    plus, noise = _Plus(), _Noise()
    dataset = NumpySlicesDataset({"x": np.zeros((rows, 3), np.float32)}, shuffle=False).map([plus, noise], "x")
    if batched:
        dataset = dataset.batch(4)
    iterator = dataset.create_tuple_iterator(num_epochs=2, output_numpy=True)
    epochs = [np.concatenate([np.asarray(x).reshape(-1, 3) for (x,) in iterator]) for _ in range(2)]
    assert epochs[0].shape == (rows, 3)
    assert not np.array_equal(epochs[0], epochs[1]), "the random op was cached: epoch 2 repeated epoch 1"
    assert len({row.tobytes() for row in epochs[0]}) == rows, "the random op gave two rows the same draw"
    assert all(((1 <= e) & (e < 2)).all() for e in epochs)  # 0 + 1 (plus) + noise in [0, 1)
    assert plus.calls == 1  # deterministic: once on the whole column, reused by the second epoch
    assert noise.calls == 2 * rows  # random: once per sample per epoch


def test_a_tensor_operation_that_does_not_say_whether_it_is_random_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Undeclared must say whether it is random: set the class attribute random"):

        class Undeclared(TensorOperation):
            def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
                return column, owned


def test_random_crop_then_column_ops_in_one_map(tmp_path: Path) -> None:
    """A random op between built-in ops: the ops after it run per sample, results are right."""
    folder = random_mnist(tmp_path / "mnist", n=16)
    dataset = MnistDataset(str(folder), shuffle=False).map(
        [Rescale(1 / 255, 0), RandomCrop(24), HWC2CHW()], "image"
    )
    seed_everything(0)
    (epoch,) = _epochs(dataset, 1)
    assert all(image.shape == (1, 24, 24) and image.dtype == np.float32 for image in epoch)
    assert all(0.0 <= image.min() and image.max() <= 1.0 for image in epoch)


DETERMINISTIC = [
    Resize((20, 24)),
    Resize(14, Inter.NEAREST),
    Resize((40, 33), Inter.CUBIC),
    Resize((9, 9), Inter.AREA),
    Resize((30, 31), Inter.PILCUBIC),
    CenterCrop(20),
    CenterCrop((40, 10)),
    Pad((1, 2, 3, 4), fill_value=5),
    Pad(3, padding_mode=Border.SYMMETRIC),
    Grayscale(3),
    ToTensor(),
]


@pytest.mark.parametrize("op", DETERMINISTIC, ids=repr)
@pytest.mark.parametrize("channels", [None, 1, 3])
def test_column_path_equals_per_sample_path(op: TensorOperation, channels: int | None) -> None:
    if isinstance(op, Grayscale) and channels is None:
        channels = 3
    rng = np.random.default_rng(0)
    shape = (5, 28, 28) if channels is None else (5, 28, 28, channels)
    column = rng.integers(0, 256, shape, dtype=np.uint8)
    whole, _ = op._apply_column(torch.from_numpy(column.copy()), False)
    for i, sample in enumerate(column):
        np.testing.assert_array_equal(whole[i].numpy(), op(sample))


def test_onehot_column_path_equals_per_sample_path() -> None:
    labels = np.array([3, 1, 4, 1, 5], np.int64)
    whole, _ = OneHot(6)._apply_column(torch.from_numpy(labels), False)
    for i, label in enumerate(labels):
        np.testing.assert_array_equal(whole[i].numpy(), OneHot(6)(label))


class _Counting:
    """Wraps an op's ``_apply_column`` to count calls."""

    def __init__(self, op: TensorOperation, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = op._apply_column

        def counted(column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
            self.calls += 1
            return original(column, owned)

        monkeypatch.setattr(op, "_apply_column", counted)


def test_deterministic_ops_in_map_run_once_on_the_whole_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = random_mnist(tmp_path / "mnist", n=2000)
    resize, crop = Resize((32, 32)), CenterCrop(28)
    counters = [_Counting(resize, monkeypatch), _Counting(crop, monkeypatch)]
    dataset = MnistDataset(str(folder), shuffle=False).map([resize, crop, Rescale(1 / 255, 0), HWC2CHW()], "image")
    dataset = dataset.batch(64)
    raw = np.random.default_rng(0).integers(0, 256, (2000, 28, 28), dtype=np.uint8)  # random_mnist's images
    expected = [HWC2CHW()(Rescale(1 / 255, 0)(CenterCrop(28)(Resize((32, 32))(raw[i][..., None])))) for i in (0, 1999)]
    batches = 0
    iterator = dataset.create_tuple_iterator(num_epochs=2, output_numpy=True)
    for _ in range(2):
        for image, _label in iterator:
            assert image.shape[1:] == (1, 28, 28)
            if batches % 32 == 0:
                np.testing.assert_array_equal(image[0], expected[0])
            if batches % 32 == 31:
                np.testing.assert_array_equal(image[-1], expected[1])
            batches += 1
    assert batches == 2 * 32
    assert [c.calls for c in counters] == [1, 1]  # once per pipeline build, not per sample or epoch
