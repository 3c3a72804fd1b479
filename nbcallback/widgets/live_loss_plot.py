"""``LiveLossPlot``: the training and evaluation curves, live, as a PNG."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from nbcallback.widgets.base import LiveCallback, save_png

__all__ = ["LiveLossPlot"]


class LiveLossPlot(LiveCallback):
    """A live plot of the training loss per step and the evaluation results.

    The first panel shows the raw training loss per step (faint), its smoothed
    version (bold) and every evaluation loss; each other metric group gets its
    own panel, one point per evaluation.  Epoch boundaries are dotted, and the
    x-range is preset to the planned number of steps so the plot does not jump.
    Lines are decimated to at most ``max_points`` points (min/max, so spikes
    stay visible).  Frames are rendered with matplotlib's Agg canvas into a
    private figure (no pyplot state) at most every ``plot_interval`` seconds
    and once more at the end.  When the process may use 2 or more CPUs the
    frames are drawn in a helper process (``plot_process``), so training only
    pays for handing over at most ``max_points`` points per line; with a
    single CPU they are drawn inline and limited to ``plot_budget`` of the
    wall time, the final frame included (a run of a few seconds then shows
    only its final frame; a larger ``plot_budget`` buys more live frames).

    Args:
        display: see :class:`~nbcallback.widgets.base.LiveCallback`; in a
            terminal there is no live plot (only a summary line), use
            ``save_path`` to get the PNG.
        save_path: when given, the final PNG is written there at the end of
            every run (folders are created).
        groups: explicit metric panels after the loss panel,
            ``{title: [metric names]}``; by default each non-loss metric has
            its own panel (at most 3 panels).
        width: figure width in inches.
        height: figure height in inches.
        dpi: resolution (80 keeps a frame at about 8-15 KB).
        **kwargs: the other :class:`~nbcallback.widgets.base.LiveCallback`
            arguments (``plot_interval``, ``plot_budget``, ``max_points``,
            ``smoothing``, ``graceful_interrupt``, ``clock`` ...).

    The last PNG is also kept in :attr:`last_png` (bytes).
    """

    _PARTS = frozenset({"plot"})

    def __init__(
        self,
        display: str = "auto",
        *,
        save_path: str | Path | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
        width: float = 9.0,
        height: float = 3.0,
        dpi: int = 80,
        **kwargs: Any,
    ) -> None:
        # Set before the base class runs: it may start a plot helper with these options.
        self.save_path = Path(save_path) if save_path is not None else None
        self.groups = dict(groups) if groups else None
        self.width = float(width)
        self.height = float(height)
        self.dpi = int(dpi)
        super().__init__(display, **kwargs)

    def _wants_png(self) -> bool:
        return super()._wants_png() or self.save_path is not None

    def _plot_options(self) -> dict[str, Any]:
        return {"width": self.width, "height": self.height, "dpi": self.dpi, "groups": self.groups}

    def _on_final_png(self, png: bytes | None) -> None:
        if png is not None and self.save_path is not None:
            saved = save_png(self.save_path, png)
            if hasattr(self.renderer, "saved_to"):
                self.renderer.saved_to = str(saved)
