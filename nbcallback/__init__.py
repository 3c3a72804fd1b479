"""nbcallback: MindSpore's callback tutorial on PyTorch, with live notebook widgets.

Subpackages:

* :mod:`nbcallback.dataset` -- MNIST download and the ``map``/``batch`` pipeline.
* :mod:`nbcallback.train` -- ``Model``, ``Callback`` and the built-in callbacks.
* :mod:`nbcallback.widgets` -- live progress, loss plots and a dashboard for notebooks.

The most used names are available here too (``nbcallback.Model``,
``nbcallback.Callback``, ``nbcallback.save_checkpoint``, ``nbcallback.export``, MindSpore's
``nbcallback.set_context(mode=nbcallback.GRAPH_MODE)`` ...). They are imported
on first use, so ``import nbcallback`` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Model": "nbcallback.train",
    "Callback": "nbcallback.train",
    "RunContext": "nbcallback.train",
    "save_checkpoint": "nbcallback.train",
    "load_checkpoint": "nbcallback.train",
    "load_param_into_net": "nbcallback.train",
    "export": "nbcallback.train",
    "context": "nbcallback.context",
    "set_context": "nbcallback.context",
    "get_context": "nbcallback.context",
    "GRAPH_MODE": "nbcallback.context",
    "PYNATIVE_MODE": "nbcallback.context",
    "dataset": "nbcallback.dataset",
    "train": "nbcallback.train",
    "widgets": "nbcallback.widgets",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'nbcallback' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
