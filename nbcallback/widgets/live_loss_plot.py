"""``LiveLossPlot``: the training and evaluation curves, live in the browser, as a PNG at the end."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from nbcallback.widgets.base import LiveCallback, save_png
from nbcallback.widgets.panels import Panel, default_panels

__all__ = ["LiveLossPlot"]


@dataclass
class PlotOptions:
    """What a :class:`LiveLossPlot` was given about its panels and its PNG (see its arguments)."""

    save_path: Path | None
    groups: dict[str, Sequence[str]] | None
    panels: list[Panel]
    lr_panel: bool | str


class LiveLossPlot(LiveCallback):
    """Live panels of the training loss per step, the evaluation results and the learning rate.

    The loss panel shows the per-step loss as a min/max band under its smoothed line and the evaluation loss as
    points (log scale while positive); each other metric gets a panel, and a learning-rate panel appears when the
    rate changes.  The browser draws while training runs; at the end matplotlib draws the same panels once as
    the PNG the saved notebook keeps (also in :attr:`last_png`).  A terminal shows no plot, only a summary line.

    Args:
        display: see :class:`~nbcallback.widgets.base.LiveCallback`.
        save_path: write the final PNG to this file at the end of every run (folders are created; where it cannot
            be written, a warning says why and the run still returns normally).
        groups: metric panels after the loss panel, ``{title: [metric names]}``; by default each other metric
            has its own panel (at most 3).
        panels: more :class:`~nbcallback.widgets.panels.Panel` s, drawn after those.
        lr_panel: ``'auto'`` (when the learning rate changes), True or False.
        **kwargs: the other :class:`~nbcallback.widgets.base.LiveCallback` arguments.
    """

    _PARTS = frozenset({"plot"})

    def __init__(
        self,
        display: str = "auto",
        *,
        save_path: str | Path | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
        panels: Sequence[Panel] = (),
        lr_panel: bool | str = "auto",
        **kwargs: Any,
    ) -> None:
        if lr_panel not in ("auto", True, False):
            raise ValueError(f"lr_panel must be 'auto', True or False, got {lr_panel!r}")
        path = Path(save_path) if save_path is not None else None
        if path is not None and path.is_dir():
            raise ValueError(f"save_path {str(save_path)!r} is a folder; give the PNG's file name, e.g. "
                             f"save_path={str(path / 'loss.png')!r}")
        for title, names in (groups or {}).items():
            if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
                raise TypeError(f"groups[{title!r}] must be a list of metric names, e.g. "
                                f"groups={{{title!r}: ['accuracy', 'precision']}}, got {names!r}")
        if not all(isinstance(panel, Panel) for panel in panels):
            example = "Panel('acc', [Line('eval:acc', 'acc')])"
            raise TypeError(f"panels must be nbcallback.widgets.Panel objects, e.g. {example}")
        self.plot_options = PlotOptions(path, dict(groups) if groups else None, list(panels), lr_panel)
        super().__init__(display, **kwargs)

    @property
    def save_path(self) -> Path | None:
        """Where the final PNG is written (None: nowhere)."""
        return self.plot_options.save_path

    @property
    def groups(self) -> dict[str, Sequence[str]] | None:
        """The metric panels' groups, ``{title: [metric names]}``."""
        return self.plot_options.groups

    @property
    def panels(self) -> list[Panel]:
        """The extra panels."""
        return self.plot_options.panels

    @property
    def lr_panel(self) -> bool | str:
        """``'auto'``, True or False."""
        return self.plot_options.lr_panel

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        """The default panels with this plot's ``groups``, extra ``panels`` and ``lr_panel`` choice."""
        lr = bool(facts.get("lr_changed")) if self.lr_panel == "auto" else bool(self.lr_panel)
        return default_panels(tuple(facts.get("metrics", ())), groups=self.groups, lr=lr,
                              loss_positive=bool(facts.get("loss_positive", True)), extra=self.panels, words=self.settings.words)

    def _wants_png(self) -> bool:
        return super()._wants_png() or self.save_path is not None

    def _on_final_png(self, png: bytes | None) -> None:
        self._warn_unseen_metrics()
        if png is None or self.save_path is None:
            return
        try:
            note = self.settings.words("text_plot_saved", path=save_png(self.save_path, png))
        except OSError as exc:  # the run itself went well: warn, keep the plot, return normally
            warnings.warn(f"{type(self).__name__}: the final plot could not be saved to {str(self.save_path)!r} "
                          f"({type(exc).__name__}: {exc.strerror or exc}); it is kept in .last_png. Pass a path "
                          "that can be written, e.g. save_path='plots/loss.png'.", RuntimeWarning, stacklevel=2)
            note = self.settings.words("text_plot_not_saved", path=self.save_path)
        if hasattr(self.renderer, "plot_note"):
            self.renderer.plot_note = note

    def _warn_unseen_metrics(self) -> None:
        """Warn when ``groups`` or ``panels`` name a metric that the run's evaluations never returned (a typo?):
        its line would stay empty without a word."""
        returned = self.state.view(self.settings.clock(), live_rows=0).columns
        asked = [name for names in (self.groups or {}).values() for name in names]
        asked += [line.key.removeprefix("eval:") for panel in self.panels for line in panel.lines
                  if line.key.startswith("eval:")]
        unseen = sorted(set(asked) - set(returned))
        if returned and unseen:
            lines = "their lines stay" if len(unseen) > 1 else "its line stays"
            warnings.warn(f"{type(self).__name__}: this run's evaluations returned no {', '.join(map(repr, unseen))}, "
                          f"so {lines} empty; they returned {', '.join(map(repr, returned))}. Check the metric names "
                          "in groups= and panels=.", RuntimeWarning, stacklevel=2)
