"""1.x and 2.x import paths of the vision and transforms ops resolve to one class each.

MindSpore 2.x: ``mindspore.dataset.vision`` / ``.vision.transforms`` and
``mindspore.dataset.transforms`` / ``.transforms.transforms``; 1.x:
``vision.c_transforms``, ``vision.py_transforms``, ``transforms.c_transforms``,
``transforms.py_transforms`` (``OneHotOp`` being 1.x's Python name of OneHot).
"""
from __future__ import annotations

import importlib

import pytest

import nbcallback.dataset as ds
from nbcallback.dataset import transforms, vision

VISION_PATHS = ["vision", "vision.transforms", "vision.c_transforms", "vision.py_transforms"]
TRANSFORMS_PATHS = ["transforms", "transforms.transforms", "transforms.c_transforms", "transforms.py_transforms"]


def _module(path: str) -> object:
    return importlib.import_module(f"nbcallback.dataset.{path}")


@pytest.mark.parametrize(
    "name",
    ["Resize", "CenterCrop", "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "Pad", "Decode",
     "Rescale", "Normalize", "HWC2CHW", "Inter", "Border"],
)
def test_vision_names_are_one_class(name: str) -> None:
    classes = {id(getattr(_module(path), name)) for path in VISION_PATHS if hasattr(_module(path), name)}
    assert len(classes) == 1
    assert getattr(vision, name) is getattr(_module("vision.c_transforms"), name)


@pytest.mark.parametrize("name", ["ToTensor", "Grayscale"])
def test_python_only_vision_names(name: str) -> None:
    """1.x had ToTensor and Grayscale in py_transforms only (and 2.x in vision)."""
    assert getattr(vision, name) is getattr(_module("vision.py_transforms"), name)
    assert getattr(vision, name) is getattr(_module("vision.transforms"), name)


@pytest.mark.parametrize("name", ["Compose", "OneHot", "TypeCast"])
def test_transforms_names_are_one_class(name: str) -> None:
    classes = {id(getattr(_module(path), name)) for path in TRANSFORMS_PATHS if hasattr(_module(path), name)}
    assert len(classes) == 1
    assert getattr(transforms, name) is getattr(_module("transforms.c_transforms"), name)
    assert _module("transforms.py_transforms").OneHotOp is transforms.OneHot


def test_names_existing_code_imports() -> None:
    assert ds.vision is vision and ds.transforms is transforms
    assert transforms.TensorOperation is _module("transforms.transforms").TensorOperation
    assert {"Rescale", "Normalize", "HWC2CHW"} <= set(vision.__all__)
    assert {"Compose", "TypeCast", "TensorOperation"} <= set(transforms.__all__)
    assert isinstance(vision.Resize(3), transforms.TensorOperation)
    for path in VISION_PATHS + TRANSFORMS_PATHS:
        module = _module(path)
        for name in module.__all__:  # type: ignore[attr-defined]
            assert hasattr(module, name), f"{path}.{name}"


@pytest.mark.parametrize("package", ["vision", "transforms"])
def test_legacy_modules_are_built_from_one_table(package: str) -> None:
    """Each 1.x module has exactly the names of its row in the package's LEGACY_MODULES table, resolved there."""
    ops = _module(f"{package}.transforms")
    table = ops.LEGACY_MODULES  # type: ignore[attr-defined]
    assert set(table) == {"c_transforms", "py_transforms"}
    for legacy, names in table.items():
        module = _module(f"{package}.{legacy}")
        assert sorted(module.__all__) == sorted(names), f"{package}.{legacy}"  # type: ignore[attr-defined]
        for alias, name in names.items():
            assert getattr(module, alias) is getattr(ops, name), f"{package}.{legacy}.{alias}"


def test_vision_package_is_the_ops_module() -> None:
    """A new op listed in vision/transforms.py's __all__ is a `vision.<name>` with no other file to edit."""
    ops = _module("vision.transforms")
    assert vision.__all__ == ops.__all__  # type: ignore[attr-defined]
    for name in ops.__all__:  # type: ignore[attr-defined]
        assert getattr(vision, name) is getattr(ops, name)
