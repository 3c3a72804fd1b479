"""The live display in other frameworks' training loops: one callback each, made of a board's public API.

==========================  ======================================  ===========================================
framework                   one line                                extra to install
==========================  ======================================  ===========================================
Lightning                   ``Trainer(callbacks=[LightningDashboard()])``        ``pip install 'nbcallback[lightning]'``
Hugging Face ``Trainer``    ``Trainer(..., callbacks=[TransformersDashboard()])`` ``pip install 'nbcallback[transformers]'``
Keras 3 (torch backend)     ``model.fit(..., callbacks=[KerasDashboard()])``     ``pip install 'nbcallback[keras]'``
==========================  ======================================  ===========================================

A plain loop needs no adapter: ``with Dashboard(...) as board: ... board.log(loss=loss)``.  Importing
``nbcallback`` or this package imports none of these frameworks; each name imports its framework when first used,
and says which extra to install when it is missing.
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["KerasDashboard", "LightningDashboard", "TransformersDashboard"]

#: name -> (module, the framework's import name, the extra that installs it)
_ADAPTERS = {
    "LightningDashboard": ("nbcallback.integrations.lightning", "lightning", "lightning"),
    "TransformersDashboard": ("nbcallback.integrations.transformers", "transformers", "transformers"),
    "KerasDashboard": ("nbcallback.integrations.keras", "keras", "keras"),
}


def missing_library(framework: str, extra: str, error: ImportError) -> ImportError:
    """The error for an adapter whose framework is not installed, naming the extra to install."""
    return ImportError(f"this adapter needs {framework}, which is not installed ({error}); install it with "
                       f"pip install 'nbcallback[{extra}]'")


def __getattr__(name: str) -> Any:
    if name not in _ADAPTERS:
        raise AttributeError(f"module 'nbcallback.integrations' has no attribute {name!r}")
    module, _framework, _extra = _ADAPTERS[name]
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
