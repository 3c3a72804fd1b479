"""Live progress, loss plots and a dashboard for ``Model.train`` / ``fit`` / ``eval``.

:class:`ProgressBar` (bars, rates, ETAs, an eval table), :class:`LiveLossPlot` (loss, metric and learning-rate
panels drawn by the browser, a PNG at the end), :class:`Dashboard` (both, with Stop and lr controls) and
:func:`run_in_background` (train on a thread, the kernel stays free).  The display is picked automatically
(widgets in a notebook, one ``\\r`` line on a terminal, log lines elsewhere); override it with ``display=`` or
``NBCALLBACK_DISPLAY``.  Any training loop feeds them with ``board.log(loss=...)`` (see :class:`LiveCallback`;
adapters for Lightning, Hugging Face and Keras 3 in :mod:`nbcallback.integrations`).  Every training run they show is remembered, and :func:`compare` draws remembered runs together
(:func:`list_runs`, :func:`load_run`, :func:`delete_runs`).  Importing this package imports neither IPython, anywidget nor matplotlib.
"""
from __future__ import annotations

from nbcallback.widgets.background import BackgroundRun, run_in_background
from nbcallback.widgets.base import LiveCallback
from nbcallback.widgets.dashboard import Dashboard
from nbcallback.widgets.env import DISPLAY_MODES, ENV_VAR, resolve_display
from nbcallback.widgets.board import StopTraining
from nbcallback.widgets.live_loss_plot import LiveLossPlot
from nbcallback.widgets.panels import Line, Panel
from nbcallback.widgets.progress_bar import ProgressBar
from nbcallback.widgets.runs import RunRecord, compare, delete_runs, label_by_difference, list_runs, load_run
from nbcallback.widgets.state import TrainingState, View

__all__ = [
    "BackgroundRun",
    "DISPLAY_MODES",
    "Dashboard",
    "ENV_VAR",
    "Line",
    "LiveCallback",
    "LiveLossPlot",
    "Panel",
    "ProgressBar",
    "RunRecord",
    "StopTraining",
    "TrainingState",
    "View",
    "compare",
    "delete_runs",
    "label_by_difference",
    "list_runs",
    "load_run",
    "resolve_display",
    "run_in_background",
]
