"""The plot panels: one spec, drawn as SVG by ``static/dashboard.js`` while the run trains and as the final
PNG by :mod:`nbcallback.widgets.plot`; both take a panel's y range from :func:`y_range` (the widget sends it with
each refresh).  Adding a panel is one entry::

    Dashboard(panels=[Panel("accuracy vs. loss", [Line("eval:accuracy", "accuracy", "m1", "points")])])
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from nbcallback.widgets.state import SERIES
from nbcallback.widgets.words import Words, words

__all__ = ["COLORS", "STYLES", "Line", "Panel", "default_panels", "y_range", "is_raw_band"]

#: Colour slots: a JupyterLab CSS variable (the live view follows the theme) and the colour where there
#: is none (VS Code, marimo, the final PNG).
COLORS: dict[str, tuple[str, str]] = {
    "train": ("--jp-brand-color1", "#1976d2"),
    "eval": ("--jp-warn-color1", "#e65100"),
    "lr": ("--jp-success-color1", "#2e7d32"),
    "m1": ("--jp-warn-color1", "#e65100"),
    "m2": ("--jp-success-color1", "#2e7d32"),
    "m3": ("--jp-error-color1", "#c62828"),
    "m4": ("--jp-info-color1", "#00838f"),
}
#: ``band``: per-step min/max as a faint area under the smoothed line; ``line``; ``points``: one mark per
#: evaluation, joined; ``step``: a step function marked where it changes (the learning rate).
STYLES = ("band", "line", "points", "step")


@dataclass(frozen=True)
class Line:
    """One series in a panel.

    Args:
        key: the data: ``'loss'`` (training loss per step), ``'eval:<metric>'`` (one point per
            evaluation), ``'lr'`` (the learning rate): a key of ``state.SERIES`` or ``'eval:<metric>'``.
        label: the legend text.
        color: a slot of :data:`COLORS`.
        style: one of :data:`STYLES`.
    """

    key: str
    label: str
    color: str = "train"
    style: str = "line"

    def __post_init__(self) -> None:
        if self.key not in SERIES and not (self.key.startswith("eval:") and self.key.removeprefix("eval:")):
            names = ", ".join(repr(key) for key in SERIES)
            raise ValueError(f"Line {self.key!r}: key must be {names} or 'eval:<metric>', e.g. 'eval:accuracy'")
        if self.color not in COLORS:
            raise ValueError(f"Line {self.key!r}: color must be one of {sorted(COLORS)}, got {self.color!r}")
        if self.style not in STYLES:
            raise ValueError(f"Line {self.key!r}: style must be one of {STYLES}, got {self.style!r}")


@dataclass(frozen=True)
class Panel:
    """One plot panel: a title, its :class:`Line` s and a y scale, ``'linear'`` or ``'log'``."""

    title: str
    lines: Sequence[Line]
    scale: str = "linear"

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", str(self.title))
        object.__setattr__(self, "lines", tuple(self.lines))
        if self.scale not in ("linear", "log"):
            raise ValueError(f"Panel {self.title!r}: scale must be 'linear' or 'log', got {self.scale!r}")
        if not all(isinstance(line, Line) for line in self.lines):
            raise TypeError(f"Panel {self.title!r}: lines must be Line objects")

    def to_json(self) -> dict[str, Any]:
        """The spec as the front end reads it."""
        return {"title": self.title, "scale": self.scale, "lines": [asdict(line) for line in self.lines]}


def default_panels(
    metrics: Sequence[str],
    *,
    groups: Mapping[str, Sequence[str]] | None = None,
    lr: bool = False,
    loss_positive: bool = True,
    extra: Sequence[Panel] = (),
    w: Words = words,
) -> list[Panel]:
    """The panels of a run that evaluated ``metrics`` (names, in order seen).

    The training loss (a min/max band under the smoothed line) with the evaluation loss, on a log scale
    while every loss is positive; one panel per ``groups`` entry, else per other metric (at most three);
    the learning rate (``lr``: it changed); then ``extra``.
    """
    loss_lines = [Line("loss", w("legend_train"), "train", "band")]
    eval_loss = next((name for name in ("loss", "eval_loss") if name in metrics), None)
    if eval_loss is not None:
        loss_lines.append(Line("eval:" + eval_loss, w("legend_eval"), "eval", "points"))
    panels = [Panel(w("panel_loss"), loss_lines, "log" if loss_positive else "linear")]
    if groups:
        for title, names in groups.items():
            lines = [Line("eval:" + name, name, f"m{i % 4 + 1}", "points") for i, name in enumerate(names)]
            panels.append(Panel(title, lines))
    else:
        others = [name for name in metrics if name != eval_loss][:3]
        panels += [Panel(name, [Line("eval:" + name, w("legend_eval"), "eval", "points")]) for name in others]
    if lr:
        panels.append(Panel(w("panel_lr"), [Line("lr", w("legend_lr"), "lr", "step")], "log"))
    return panels + list(extra)


def is_raw_band(series: Mapping[str, Sequence[Any]]) -> bool:
    """Whether a band holds raw values (one step per bucket: lo == hi everywhere): drawn as a faint line."""
    lo, hi = series.get("lo"), series.get("hi", ())
    return bool(lo) and (lo == hi if type(lo) is type(hi) else list(lo) == list(hi))


def _extent(values: Sequence[Any], log: bool) -> tuple[float, float] | None:
    """The smallest and largest value that can be drawn (a number, and positive on a log axis), or None.  The
    series keep finite values or None (``series.finite_or_none``); a NaN or infinity given here is left out too."""
    usable = [v for v in values if v is not None and v > 0] if log else [v for v in values if v is not None]
    if usable and not math.isfinite(sum(usable)):  # rare: filter the slow way
        usable = [v for v in usable if math.isfinite(v)]
    return (min(usable), max(usable)) if usable else None


def y_range(panel: Panel, series: Mapping[str, Mapping[str, Sequence[Any]]]) -> tuple[float, float] | None:
    """The panel's y range over ``series`` (data key -> columns ``x``, ``y`` and for the loss ``lo``, ``hi``; None
    for a missing value), or None when it has nothing to draw.  The live plot and the final PNG both use it.

    Everything's top, but the *lines'* bottom (a raw band counts as a line), so that a band's per-step minima (an
    easy batch's loss of 1e-5) do not stretch the axis far below the curve; padded (log: by a factor).
    """
    log = panel.scale == "log"
    bottoms: list[float] = []
    tops: list[float] = []
    for line in panel.lines:
        data = series.get(line.key) or {}
        columns = {"y": True, "hi": False}  # whether the column's minimum counts for the bottom
        if line.style == "band" and is_raw_band(data):
            columns["lo"] = True
        for column, counts_low in columns.items():
            extent = _extent(data.get(column, ()), log)
            if extent is not None:
                tops.append(extent[1])
                if counts_low:
                    bottoms.append(extent[0])
    if not bottoms:
        return None
    lo, hi = min(bottoms), max(tops)
    if log:
        return lo / 1.5, hi * 1.3
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad
