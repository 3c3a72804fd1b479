"""The earlier runs a ``Dashboard(compare=...)`` draws faint under the live one (issue #47).

:func:`read_overlay` reads the remembered runs once, when the run starts (``runs.last_runs`` / ``runs.load_runs``;
a file that cannot be read is one warning naming it, and the run goes on), and turns them into an
:class:`Overlay`: an immutable value the Dashboard holds and hands to its renderer.  Each :class:`OverlayRun` is
labelled by what differs from the live run (``runs.label_by_difference``: ``"lr 0.1"``), has its own muted colour
(:data:`~nbcallback.widgets.panels.RUN_COLORS`) and keeps only the lines a panel draws (the smoothed loss, each
evaluation metric, the learning rate), with x in the live run's steps: a run with another number of steps per
epoch is stretched so that its epochs line up with the live run's.

The live widget gets :meth:`Overlay.to_widget` once (its ``compare`` trait), never with the refreshes; each
refresh's y ranges take the overlay in through :func:`combined_range` (its extremes are kept, so this costs a few
comparisons); the final PNG draws the same lines (``plot.render_png``); :func:`compare_table` is the small table of
final metrics (the live run's row from the current :class:`~nbcallback.widgets.state.View`), which
``render_html`` and ``render_text`` show (:func:`compare_columns`, :func:`live_row` and :func:`earlier_rows` are
its parts: the live widget's refreshes rebuild only the live row).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence, Union

from nbcallback.widgets.format import metric, number, shown_loss
from nbcallback.widgets.panels import RUN_COLORS, Panel, drawable_extent
from nbcallback.widgets.runs import (
    RunRecord, final_headings, label_by_difference, last_runs, load_runs, status_word,
)
from nbcallback.widgets.series import float32_bytes
from nbcallback.widgets.state import View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["CompareArg", "OverlayRun", "Overlay", "check_compare", "read_overlay", "combined_range",
           "compare_columns", "live_row", "earlier_rows", "compare_table"]

#: What ``Dashboard(compare=...)`` takes: None or 0 (no comparison), a number of runs, or runs named by record,
#: path or label (one or a list).
CompareArg = Union[None, int, RunRecord, str, "os.PathLike[str]", Sequence[Union[RunRecord, str, "os.PathLike[str]"]]]

_MAX_RUNS = len(RUN_COLORS)


def check_compare(compare: Any) -> int | tuple[Any, ...] | None:
    """``compare`` checked where the Dashboard is made: None (no comparison), a number of runs, or a tuple of
    records, paths and labels.

    Raises:
        TypeError, ValueError: what is wrong and what to pass instead.
    """
    example = "e.g. compare=2 (the last two runs of this notebook) or compare=['lr 0.1', 'runs/x.json']"
    if compare is None or compare is False:
        return None
    if isinstance(compare, bool):
        raise TypeError(f"Dashboard: compare=True does not say which runs; pass a number or runs, {example}")
    if isinstance(compare, int):
        if compare < 0:
            raise ValueError(f"Dashboard: compare must be a number of earlier runs >= 0, got {compare}; {example}")
        if compare > _MAX_RUNS:
            raise ValueError(f"Dashboard: compare={compare} is more runs than the plot can tell apart (at most "
                             f"{_MAX_RUNS}); {example}")
        return compare or None
    refs = (compare,) if isinstance(compare, (RunRecord, str, os.PathLike)) else compare
    if not isinstance(refs, (list, tuple)) or not refs:
        raise TypeError(f"Dashboard: compare must be a number, a run's label or file, or a list of them, got "
                        f"{compare!r}; {example}")
    for ref in refs:
        if not isinstance(ref, (RunRecord, str, os.PathLike)) or (isinstance(ref, str) and not ref.strip()):
            raise TypeError(f"Dashboard: compare names a run by its label (text), its file (a path) or a RunRecord "
                            f"from list_runs(), got {ref!r}; {example}")
    if len(refs) > _MAX_RUNS:
        raise ValueError(f"Dashboard: compare names {len(refs)} runs, more than the plot can tell apart (at most "
                         f"{_MAX_RUNS}); {example}")
    return tuple(refs)


@dataclass(frozen=True)
class OverlayRun:
    """One earlier run as the overlay draws it: ``label`` (what differs from the live run), ``name`` (the run as
    :func:`~nbcallback.widgets.runs.list_runs` names it: its ``run_label`` or file stem), ``status``, its final
    ``loss``, ``metrics`` and ``epochs_done``, ``series`` (data key -> ``{"x": ..., "y": ...}``, x in the live run's
    steps) and ``color``."""

    label: str
    name: str
    status: str
    loss: float | None
    metrics: Mapping[str, Any]
    epochs_done: int | None
    series: Mapping[str, Mapping[str, tuple[float | None, ...]]]
    color: str

    @property
    def hover(self) -> str:
        """What hovering its line says: the label and, when it says more, the run's name."""
        return self.label if self.name == self.label else f"{self.label} ({self.name})"


def _merge(a: tuple[float, float] | None, b: tuple[float, float] | None) -> tuple[float, float] | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), max(a[1], b[1])


@dataclass(frozen=True, eq=False)
class Overlay:
    """The earlier runs drawn under the live one (see the module); ``runs`` newest first.  Equal only to itself
    (hashable: ``render_html`` keeps its table's fixed rows while the run refreshes)."""

    runs: tuple[OverlayRun, ...]
    #: (data key, log scale) -> the smallest and largest y over every run: the y ranges need no pass over points.
    extents: Mapping[tuple[str, bool], tuple[float, float]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, runs: Sequence[OverlayRun]) -> Overlay:
        """An overlay of ``runs`` with its extremes worked out once."""
        extents: dict[tuple[str, bool], tuple[float, float]] = {}
        for run in runs:
            for key, cols in run.series.items():
                linear = drawable_extent(cols["y"], False)
                if linear is None:
                    continue
                positive = linear if linear[0] > 0 else drawable_extent(cols["y"], True)
                for log, found in ((False, linear), (True, positive)):
                    found = _merge(extents.get((key, log)), found)
                    if found is not None:
                        extents[(key, log)] = found
        return cls(tuple(runs), MappingProxyType(extents))

    def y_range(self, panel: Panel) -> tuple[float, float] | None:
        """The panel's y range over the overlay's lines, padded as ``panels.y_range`` pads (None: none drawn)."""
        log = panel.scale == "log"
        found = None
        for line in panel.lines:
            found = _merge(found, self.extents.get((line.key, log)))
        if found is None:
            return None
        lo, hi = found
        if log:
            return lo / 1.5, hi * 1.3
        pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
        return lo - pad, hi + pad

    def grow(self, live: tuple[float, float] | None, panel: Panel) -> tuple[float, float] | None:
        """``live`` (the panel's y range over the live series) grown to the overlay's lines in that panel."""
        return _merge(live, self.y_range(panel))

    def x_extent(self) -> tuple[float, float] | None:
        """The smallest and largest x of the overlay's lines (the live plot's x range grows to show them)."""
        found = None
        for run in self.runs:
            for cols in run.series.values():
                found = _merge(found, drawable_extent(cols["x"], False))
        return found

    def to_widget(self) -> dict[str, Any]:
        """What the live widget is sent once (its ``compare`` trait): each run's names, colour and status as JSON,
        and each line's x and y as float32 bytes (``series.float32_bytes``), which ipywidgets sends as binary buffers
        beside the message (the page reads them back: ``decodeCompare`` in ``dashboard.js``).  The trait is set after
        the widget has opened (an update, whose buffers every widget manager keeps; Colab's drops those of an
        opening)."""
        return {"runs": [{"label": run.label, "name": run.name, "hover": run.hover, "color": run.color,
                          "status": run.status,
                          "series": {key: {"x": float32_bytes(cols["x"]), "y": float32_bytes(cols["y"])}
                                     for key, cols in run.series.items()}} for run in self.runs]}


def combined_range(live: tuple[float, float] | None, panel: Panel,
                   overlay: Overlay | None) -> tuple[float, float] | None:
    """The panel's y range (``panels.y_range`` over the live series) grown to the overlay's lines, so that no
    earlier curve is clipped; the live plot and the PNG both use it."""
    return live if overlay is None else overlay.grow(live, panel)


# ---------------------------------------------------------------------------------------------- reading


def _records(wanted: int | tuple[Any, ...], notebook: str | None) -> list[RunRecord]:
    """The runs named by ``wanted`` (checked by :func:`check_compare`); unreadable ones skipped with a warning."""
    if isinstance(wanted, int):
        return last_runs(wanted, notebook)
    return load_runs(wanted, notebook)


def _line(cols: Mapping[str, Sequence[Any]], factor: float) -> dict[str, tuple[float | None, ...]]:
    xs = cols["x"] if factor == 1.0 else (None if x is None else x * factor for x in cols["x"])
    return {"x": tuple(xs), "y": tuple(cols["y"])}


def read_overlay(wanted: int | tuple[Any, ...] | None, live_settings: Mapping[str, Any],
                 steps_per_epoch: int | None = None, notebook: str | None = None) -> Overlay | None:
    """The earlier runs ``wanted`` names (the last N of ``notebook``: only their files are read; or the runs named),
    labelled by their ``run_label`` or by what differs from ``live_settings`` (as ``runs.settings_of`` gives them;
    two runs that would read the same add the time they ended), x stretched to ``steps_per_epoch`` (the live
    run's, when both runs know theirs).  Called once per run, at its start.  With a number and no readable earlier
    run in ``notebook``: an overlay without runs (the compared runs' table says there is none yet); None when
    nothing was asked for or none of the runs named could be read (a warning named each).  Records are read here
    and nowhere else."""
    if not wanted:
        return None
    records, seen = [], set()
    for record in _records(wanted, notebook):
        key = str(record.path) if record.path is not None else id(record)
        if key not in seen:
            seen.add(key)
            records.append(record)
    labels = [record.label or label_by_difference(live_settings, record.settings) for record in records]
    twice = {label for label in labels if labels.count(label) > 1}
    times = [record_time(record) for record in records]
    times = [name if times.count(name) == 1 else record.name for name, record in zip(times, records)]
    labels = [f"{label} ({when})" if label in twice else label  # each says when it ended
              for label, when in zip(labels, times)]
    runs = []
    for index in reversed(range(len(records))):  # newest first: it gets the first colour
        record = records[index]
        theirs = record.plot.get("steps_per_epoch")
        factor = 1.0
        if steps_per_epoch and isinstance(theirs, (int, float)) and not isinstance(theirs, bool) and theirs > 0:
            factor = steps_per_epoch / theirs
        series = {key: _line(cols, factor) for key, cols in record.plot["series"].items()}
        final = record.final
        metrics = final.get("metrics") if isinstance(final.get("metrics"), dict) else {}
        loss = final.get("loss") if isinstance(final.get("loss"), (int, float)) else None
        epochs = final.get("epochs_done") if isinstance(final.get("epochs_done"), int) else None
        runs.append(OverlayRun(labels[index], record.name, record.status, loss, MappingProxyType(dict(metrics)),
                               epochs, MappingProxyType(series), RUN_COLORS[len(runs) % len(RUN_COLORS)]))
    return Overlay.of(runs) if runs or isinstance(wanted, int) else None


def record_time(record: RunRecord) -> str:
    """When the run ended, ``HH:MM:SS`` (its ISO time as stored, UTC)."""
    return record.ended[11:19] or record.name


# ---------------------------------------------------------------------------------------------- the table


def _live_metrics(view: View | None) -> dict[str, Any]:
    """The live run's last evaluation (a finished epoch's row when there is one)."""
    if view is None:
        return {}
    rows = [row for row in view.rows if not row.partial] or list(view.rows)
    return dict(rows[-1].values) if rows else {}


def compare_columns(overlay: Overlay, view: View | None) -> tuple[str, ...]:
    """The metric columns of the compared runs' table: the live run's first (from ``view``), then the others'."""
    names = list(_live_metrics(view))
    for run in overlay.runs:
        names += [name for name in run.metrics if name not in names]
    return tuple(names)


def _cell(value: Any) -> str:
    return "–" if value is None else metric(value) if not isinstance(value, float) else number(value)


def live_row(view: View, names: Sequence[str], words: Words = ENGLISH) -> list[str]:
    """The live run's row of the table (``names``: :func:`compare_columns`): its status, epochs, smoothed loss and
    last evaluation; it changes at each refresh."""
    values = _live_metrics(view)
    return [words("compare_this_run"), status_word(view.status, words), str(view.epochs_done),
            _cell(shown_loss(view)), *(_cell(values.get(name)) for name in names)]


def earlier_rows(overlay: Overlay, names: Sequence[str], words: Words = ENGLISH) -> list[list[str]]:
    """The earlier runs' rows, newest first: their final numbers (they change only with the columns)."""
    return [[run.label, status_word(run.status, words), _cell(run.epochs_done),
             _cell(None if run.loss is None else float(run.loss)), *(_cell(run.metrics.get(name)) for name in names)]
            for run in overlay.runs]


def compare_table(overlay: Overlay, view: View | None, words: Words = ENGLISH) -> tuple[list[str], list[list[str]],
                                                                                           list[str]]:
    """The compared runs' final metrics: the header, one row per run (the live run first, from ``view``: its
    smoothed loss and its last evaluation, so it changes at each refresh; then the earlier runs, newest first) and
    each row's colour (the live run's is ``'train'``, the others their overlay colour)."""
    names = compare_columns(overlay, view)
    body = [live_row(view, names, words)] if view is not None else []
    colors = ["train"] if view is not None else []
    return (final_headings(names, words), body + earlier_rows(overlay, names, words),
            colors + [run.color for run in overlay.runs])
