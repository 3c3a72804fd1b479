"""``Dashboard``: progress, loss plot and metrics table together, with Stop and lr controls."""
from __future__ import annotations

from nbcallback.widgets.live_loss_plot import LiveLossPlot

__all__ = ["Dashboard"]


class Dashboard(LiveLossPlot):
    """:class:`ProgressBar` + :class:`LiveLossPlot` + a **Stop** button and an **lr** box.

    Stop ends training after the current step, as ``run_context.request_stop()`` does; a new lr is applied to
    every parameter group at the next step boundary.  The controls act during training with
    ``run_in_background``, or in a foreground cell in JupyterLab >= 4.4 / Notebook >= 7.4 with ipykernel >= 7;
    elsewhere they are hidden and the view says to interrupt instead.  In code: :meth:`request_stop`,
    :meth:`set_learning_rate`.  Takes the :class:`LiveLossPlot` arguments.

    Example::

        run = run_in_background(model.fit, 5, train_ds, test_ds, callbacks=[Dashboard()])
    """

    _PARTS = frozenset({"progress", "table", "plot", "controls"})
