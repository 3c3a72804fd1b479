"""``Dashboard``: progress, loss plot and metrics table together, with Stop and lr controls."""
from __future__ import annotations

from nbcallback.widgets.live_loss_plot import LiveLossPlot

__all__ = ["Dashboard"]


class Dashboard(LiveLossPlot):
    """Everything in one view: :class:`ProgressBar` + :class:`LiveLossPlot` + controls.

    The controls are a **Stop** button (ends training after the current step,
    exactly as ``run_context.request_stop()`` does: fit's validation,
    ``on_train_epoch_end`` and ``on_train_end`` still run, ``fit`` returns
    normally) and an **lr** box (a new learning rate for every parameter group,
    applied at the next step boundary; groups keep their ratio to group 0).
    The handlers only store the request; the training loop applies it between
    two steps, on the training thread.

    Where the controls act *while training runs* (a busy cell normally queues
    every widget message until it ends):

    * ``run_in_background(model.fit, ...)`` with this dashboard: training runs
      on a thread and the kernel stays free, so clicks are handled at once in
      Jupyter front end (JupyterLab, Notebook 7, VS Code, Colab).  This is the robust way.
    * A normal (foreground) ``model.fit(...)`` cell: in JupyterLab >= 4.4 /
      Notebook >= 7.4 with ipykernel >= 7, which send comm messages over kernel
      subshells (``commsOverSubshells``, default ``perCommTarget``); the
      widget's comm is routed so that clicks are not queued behind the cell.
      Elsewhere (ipykernel < 7, VS Code, Colab, marimo) the controls are not
      shown in foreground runs, and the view says, once, to interrupt instead.
    * Everywhere: the kernel's interrupt button stops gracefully after the
      current step.

    Programmatic equivalents: :meth:`request_stop` and :meth:`set_learning_rate`
    (thread-safe).

    Args:
        display: see :class:`~nbcallback.widgets.base.LiveCallback`.
        save_path, groups, panels, lr_panel: see :class:`LiveLossPlot`.
        **kwargs: the other :class:`~nbcallback.widgets.base.LiveCallback` arguments.
    """

    _PARTS = frozenset({"progress", "table", "plot", "controls"})
