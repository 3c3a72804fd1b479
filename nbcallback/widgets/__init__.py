"""Live progress, loss plots and a dashboard for ``Model.train`` / ``fit`` / ``eval``.

Three callbacks, usable in ``train``, ``fit`` and ``eval``:

* :class:`ProgressBar` -- epoch and phase bars, rates, ETAs, smoothed loss, a
  table with one row per evaluation.
* :class:`LiveLossPlot` -- panels of the training loss per step, the
  evaluation results and the learning rate, drawn live by the browser and kept
  as a PNG at the end (:class:`Panel` / :class:`Line` add panels).
* :class:`Dashboard` -- both, plus a Stop button and a learning-rate box.

and :func:`run_in_background`, which trains on a thread so the notebook kernel
stays free and the dashboard's controls act at once in every front end.

The display is picked automatically (widgets in a notebook kernel, one ``\\r``
line on a terminal, plain log lines elsewhere, nothing on non-zero ranks);
override it with ``display=`` or the ``NBCALLBACK_DISPLAY`` environment
variable (``widget``, ``static``, ``final``, ``text``, ``off``).  At the end of
a run the live view is replaced by a static HTML snapshot and every widget
model is closed, so saved notebooks show the final state anywhere.

The kernel only keeps state and sends data; the browser module
(``static/dashboard.js``, an anywidget) draws.  Importing this package imports
neither IPython, anywidget nor matplotlib; they are imported when a renderer
that needs them is first used.
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BackgroundRun",
    "Dashboard",
    "LiveCallback",
    "LiveLossPlot",
    "Line",
    "Panel",
    "ProgressBar",
    "TrainingState",
    "View",
    "resolve_display",
    "run_in_background",
    "DISPLAY_MODES",
    "ENV_VAR",
]

_LAZY = {
    "BackgroundRun": "nbcallback.widgets.background",
    "run_in_background": "nbcallback.widgets.background",
    "Dashboard": "nbcallback.widgets.dashboard",
    "LiveCallback": "nbcallback.widgets.base",
    "LiveLossPlot": "nbcallback.widgets.live_loss_plot",
    "Line": "nbcallback.widgets.panels",
    "Panel": "nbcallback.widgets.panels",
    "ProgressBar": "nbcallback.widgets.progress_bar",
    "TrainingState": "nbcallback.widgets.state",
    "View": "nbcallback.widgets.state",
    "resolve_display": "nbcallback.widgets.env",
    "DISPLAY_MODES": "nbcallback.widgets.env",
    "ENV_VAR": "nbcallback.widgets.env",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'nbcallback.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
