"""Live progress, loss plots and a dashboard for ``Model.train`` / ``fit`` / ``eval``.

:class:`ProgressBar` (bars, rates, ETAs, an eval table), :class:`LiveLossPlot` (loss, metric and learning-rate
panels drawn by the browser, a PNG at the end), :class:`Dashboard` (both, with Stop and lr controls) and
:func:`run_in_background` (train on a thread, the kernel stays free).  The display is picked automatically
(widgets in a notebook, one ``\\r`` line on a terminal, log lines elsewhere); override it with ``display=`` or
``NBCALLBACK_DISPLAY``.  Importing this package imports neither IPython, anywidget nor matplotlib.
"""
from __future__ import annotations

import importlib
from typing import Any

_MODULES = {
    "background": ["BackgroundRun", "run_in_background"],
    "base": ["LiveCallback"],
    "dashboard": ["Dashboard"],
    "env": ["DISPLAY_MODES", "ENV_VAR", "resolve_display"],
    "live_loss_plot": ["LiveLossPlot"],
    "panels": ["Line", "Panel"],
    "progress_bar": ["ProgressBar"],
    "state": ["TrainingState", "View"],
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nbcallback.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"nbcallback.widgets.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
