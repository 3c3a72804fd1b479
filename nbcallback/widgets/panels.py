"""The plot panels: one spec, drawn as SVG by ``static/dashboard.js`` while the run trains and as the final
PNG by :mod:`nbcallback.widgets.plot`; both take a panel's y range from :func:`y_range` (the widget sends it with
each refresh).  Adding a panel is one entry::

    Dashboard(panels=[Panel("accuracy vs. loss", [Line("eval:accuracy", "accuracy", "m1", "points")])])

And the Dashboard's "where the time goes" bar (a ``CallbackProfiler`` in the same run): :func:`time_facts` turns
the profiler's rows into the bar's segments and :data:`TIME_COLORS` colours them; ``render_html.time_html`` draws
them (the live widget and the snapshot), ``render_text.time_text`` says them in one line.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from nbcallback.widgets.state import SERIES, TimeFacts, TimeSegment
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["COLORS", "RUN_COLORS", "STYLES", "TIME_COLORS", "Line", "Panel", "default_panels", "y_range", "is_raw_band",
           "time_facts"]

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
#: One muted colour per compared run (``Dashboard(compare=...)`` and ``compare()``; the newest run gets the first):
#: apart from the live lines' slots above, and mid-light, so that a faint line reads on a light and a dark page.
RUN_COLORS: tuple[str, ...] = ("#ab47bc", "#ec407a", "#26a69a", "#8d6e63", "#78909c", "#c0a000")
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
    words: Words = ENGLISH,
) -> list[Panel]:
    """The panels of a run that evaluated ``metrics`` (names, in order seen).

    The training loss (a min/max band under the smoothed line) with the evaluation loss, on a log scale
    while every loss is positive; one panel per ``groups`` entry, else per other metric (at most three);
    the learning rate (``lr``: it changed); then ``extra``.
    """
    loss_lines = [Line("loss", words("legend_train"), "train", "band")]
    eval_loss = next((name for name in ("loss", "eval_loss", "val_loss") if name in metrics), None)
    if eval_loss is not None:
        loss_lines.append(Line("eval:" + eval_loss, words("legend_eval"), "eval", "points"))
    panels = [Panel(words("panel_loss"), loss_lines, "log" if loss_positive else "linear")]
    if groups:
        for title, names in groups.items():
            lines = [Line("eval:" + name, name, f"m{i % 4 + 1}", "points") for i, name in enumerate(names)]
            panels.append(Panel(title, lines))
    else:
        others = [name for name in metrics if name != eval_loss][:3]
        panels += [Panel(name, [Line("eval:" + name, words("legend_eval"), "eval", "points")]) for name in others]
    if lr:
        panels.append(Panel(words("panel_lr"), [Line("lr", words("legend_lr"), "lr", "step")], "log"))
    return panels + list(extra)


def is_raw_band(series: Mapping[str, Sequence[Any]]) -> bool:
    """Whether a band holds raw values (one step per bucket: lo == hi everywhere): drawn as a faint line."""
    lo, hi = series.get("lo"), series.get("hi", ())
    return bool(lo) and (lo == hi if type(lo) is type(hi) else list(lo) == list(hi))


def drawable_extent(values: Sequence[Any], log: bool) -> tuple[float, float] | None:
    """The smallest and largest value that can be drawn (a number, and positive on a log axis), or None.  The
    series keep finite values or None (``series.finite_or_none``); a NaN or infinity given here is left out too."""
    usable = [v for v in values if v is not None and v > 0] if log else [v for v in values if v is not None]
    if usable and not math.isfinite(sum(usable)):  # rare: filter the slow way
        usable = [v for v in usable if math.isfinite(v)]
    return (min(usable), max(usable)) if usable else None


def y_range(panel: Panel, series: Mapping[str, Any]) -> tuple[float, float] | None:
    """The panel's y range over ``series`` (data key -> columns ``x``, ``y`` and for the loss ``lo``, ``hi``; None
    for a missing value; or the live :mod:`~nbcallback.widgets.series` objects, which keep their extremes), or None
    when it has nothing to draw.  The live plot and the final PNG both use it.

    Everything's top, but the *lines'* bottom (a raw band counts as a line), so that a band's per-step minima (an
    easy batch's loss of 1e-5) do not stretch the axis far below the curve; padded (log: by a factor).
    """
    log = panel.scale == "log"
    bottoms: list[float] = []
    tops: list[float] = []
    for line in panel.lines:
        data = series.get(line.key) or {}
        kept = getattr(data, "extent", None)  # a live series: its extremes, not every point
        columns = {"y": True, "hi": False}  # whether the column's minimum counts for the bottom
        if line.style == "band" and (data.raw_band() if kept is not None else is_raw_band(data)):
            columns["lo"] = True
        for column, counts_low in columns.items():
            extent = kept(column, log) if kept is not None else drawable_extent(data.get(column, ()), log)
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


# ---------------------------------------------------------------------- where the time goes

#: The time bar's colours, the plot's slots where they have one (the step is the training line's colour):
#: ``loop``, the rest of the wall time, is the theme's quiet grey, striped.
TIME_COLORS: dict[str, tuple[str, str]] = {
    "step": COLORS["train"],
    "eval": COLORS["eval"],
    "c1": COLORS["m2"],
    "c2": COLORS["m3"],
    "c3": COLORS["m4"],
    "c4": ("--nbc-purple", "#9c4dcc"),
    "other": ("--jp-layout-color4", "#757575"),
    "loop": ("--jp-layout-color3", "rgba(127,127,127,.35)"),
}
#: At most this many callbacks get a segment of their own; the smaller ones share one (``'other'``).
TIME_CALLBACKS = 4


def time_facts(rows: Iterable[Any], wall_s: float, words: Words = ENGLISH, order: Sequence[str] = ()) -> TimeFacts:
    """The "where the time goes" bar from a :class:`~nbcallback.train.CallbackProfiler`'s ``rows`` and ``wall_s``.

    One segment for the training step (forward, backward, optimizer), one for the evaluation (fit's validation or
    ``Model.eval``), one per callback (its hooks together) and the loop (the rest of the wall time), in that
    order; each with its share of the wall time, so the shares add up to one.  The callbacks come in ``order``
    (their names as the profiler labels them: the run's callbacks list), the others after them, largest first;
    a callback keeps its place and colour while the bar is updated.  With more than :data:`TIME_CALLBACKS`, the
    smallest share one segment (``'other'``).
    """
    wall = max(0.0, float(wall_s))
    step = evaluation = loop = 0.0
    eval_key = "validation"
    callbacks: dict[str, float] = {}
    for row in rows:
        seconds = float(row.total_s)
        if row.kind == "callback":
            callbacks[row.name] = callbacks.get(row.name, 0.0) + seconds
        elif row.kind == "step":
            step += seconds
        elif row.kind == "evaluation":
            evaluation += seconds
            eval_key = "validation" if row.name == "validation" else "eval"
        else:
            loop += seconds
    share = (lambda seconds: max(0.0, seconds) / wall) if wall > 0 else (lambda seconds: 0.0)
    place = {name: k for k, name in enumerate(dict.fromkeys(order))}
    listed = sorted(callbacks, key=lambda name: (place.get(name, len(place)), -callbacks[name]))
    slot = {name: f"c{k % 4 + 1}" for k, name in enumerate(listed)}
    ranked = sorted(listed, key=lambda name: -callbacks[name])
    kept = set(ranked if len(ranked) <= TIME_CALLBACKS + 1 else ranked[:TIME_CALLBACKS])
    # (one more callback is clearer by its name than as "1 more callbacks")
    shown = [(name, callbacks[name]) for name in listed if name in kept]
    folded = [(name, callbacks[name]) for name in listed if name not in kept]
    segments = []
    if step > 0:
        segments.append(TimeSegment("step", words("time_step"), step, share(step), "step"))
    if evaluation > 0:
        segments.append(TimeSegment(eval_key, words("time_" + eval_key), evaluation, share(evaluation), "eval"))
    for name, seconds in shown:
        segments.append(TimeSegment("callback", name, seconds, share(seconds), slot[name]))
    if folded:
        seconds = sum(seconds for _, seconds in folded)
        segments.append(TimeSegment("other", words("time_other", count=len(folded)), seconds, share(seconds), "other"))
    segments.append(TimeSegment("loop", words("time_loop"), max(0.0, loop), share(loop), "loop"))
    return TimeFacts(wall, tuple(segments))
