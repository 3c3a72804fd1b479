"""Notebook renderers: a live anywidget (``static/dashboard.js`` draws, the kernel syncs data) or ``display_id``
HTML while a run trains; at the end a static snapshot and the PNG replace it, so a saved notebook shows the final
state anywhere.  ``clear_output`` is never called: the cell's other output stays.
"""
from __future__ import annotations

import threading
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Callable

import anywidget
import IPython.display
import traitlets

from nbcallback.widgets import env
from nbcallback.widgets.controls import BusyStatus, release_comm_routing, valid_lr
from nbcallback.widgets.overlay import Overlay, combined_range
from nbcallback.widgets.panels import COLORS, Panel, y_range
from nbcallback.widgets.render_html import payload, plot_bundle, snapshot_bundle, time_html
from nbcallback.widgets.render_text import time_text
from nbcallback.widgets.renderers import NullRenderer
from nbcallback.widgets.series import float32_bytes, float32_list
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["DashboardWidget", "WidgetRenderer", "StaticRenderer", "with_time", "wire_series"]

STATIC = Path(__file__).parent / "static"
_COLUMNS = ("x", "y", "lo", "hi")  # a series delta's columns (series.Buckets.delta)
_LABELS = {"stop": "stop", "stopping": "stopping", "lr": "lr", "apply": "apply", "step": "axis_step"}
#: What a closed widget's module becomes (see :meth:`DashboardWidget.drop_front_end`).
_EMPTY_ESM = "export default {};"


class DashboardWidget(anywidget.AnyWidget):
    """The live view: the kernel syncs ``spec`` (the panels) and ``view`` (everything, when the widget opens or a page
    says ``hello``: the bars, status and table as HTML, the series, the panels' y ranges, the controls' state) and
    sends each refresh's news as a ``{"type": "view"}`` message; ``compare`` (the earlier runs a
    ``Dashboard(compare=...)`` draws faint: ``Overlay.to_widget``, the curves as binary buffers) is set once, when
    they have been read.  The page sends ``stop``, ``lr`` and ``hello``, maybe on a kernel subshell's thread while
    the run trains: the handlers only store the request."""

    _esm = STATIC / "dashboard.js"
    _css = STATIC / "dashboard.css"
    spec = traitlets.Dict().tag(sync=True)
    view = traitlets.Dict().tag(sync=True)
    compare = traitlets.Dict().tag(sync=True)

    def __init__(
        self, on_stop: Callable[[], None] | None = None, on_lr: Callable[[float], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._on_stop = on_stop
        self._on_lr = on_lr
        self.resync = threading.Event()  # a page asked for the whole history
        self.binary = True  # the series deltas' columns as binary buffers (until a page says it got none)
        self.busy: BusyStatus | None = None  # keeps the kernel indicator at busy during a foreground run
        release_comm_routing(self)
        self.on_msg(self._message)

    def _message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if self.busy is not None:
            self.busy.message_arrived()
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "stop" and self._on_stop is not None:
            self._on_stop()
        elif kind == "lr" and self._on_lr is not None:
            lr = valid_lr(content.get("value"))
            if lr is not None:
                self._on_lr(lr)
        elif kind == "hello":
            if content.get("binary") is False:  # its widget manager drops a message's buffers: JSON from now on
                self.binary = False
            self.resync.set()

    def drop_front_end(self) -> None:
        """Drop the front-end code (and the earlier runs' curves) once the snapshot has replaced every view:
        ``jupyter nbconvert --execute`` saves a closed widget's last state in the notebook's metadata, and the ES
        module and the CSS are most of it."""
        with self.hold_sync():
            self._esm, self._css = _EMPTY_ESM, ""
            self.compare = {}  # the earlier runs' curves: the PNG below keeps them

    def close(self) -> None:
        """Stop the busy-status watcher; close the widget and its ``Layout`` model (``Widget.close`` leaves it
        open, and a saved notebook would keep its state)."""
        if getattr(self, "busy", None) is not None:
            self.busy.stop()
        layout = getattr(self, "layout", None)
        super().close()
        if layout is not None and layout.comm is not None:
            layout.close()


def wire_series(view: dict[str, Any], *, binary: bool) -> tuple[list[list[str]], list[bytes]]:
    """Put ``view``'s series deltas (``TrainingState.plot_delta``'s, as kept) in the form the page is sent, in place:
    each column as float32 bytes (``series.float32_bytes``), taken out of the message into the returned buffers with
    its place in the returned paths (the page puts them back: ``putBuffers`` in dashboard.js, as ipywidgets does for
    a trait); or, when not ``binary`` (the ``view`` trait, which a page may get with the widget's opening, where not
    every widget manager keeps buffers: Colab's drops them; or a page that said it got none), as JSON numbers
    rounded to float32 (``series.float32_list``: the page holds the same numbers either way).  A tail, a few
    numbers, is JSON, rounded the same."""
    paths: list[list[str]] = []
    buffers: list[bytes] = []
    for key, delta in (view.get("series") or {}).items():
        for column in _COLUMNS:
            if column not in delta:
                continue
            if binary and delta[column]:  # (an empty column stays [])
                paths.append(["series", key, column])
                buffers.append(float32_bytes(delta[column]))
                delta[column] = None
            elif column != "x":  # (steps stay whole numbers)
                delta[column] = float32_list(delta[column])
        tail = delta.get("tail")
        if tail is not None:
            names = [name for name in tail if name != "x"]
            delta["tail"] = {"x": tail["x"], **dict(zip(names, float32_list([tail[name] for name in names])))}
    return paths, buffers


@dataclass(eq=False)
class WidgetRenderer(NullRenderer):
    """The live widget, then the snapshot and the PNG.  ``panels_for`` gives the panels for the plot's facts;
    ``on_stop``/``on_lr`` handle the controls; ``foreground``: keep the kernel indicator at busy."""

    parts: frozenset[str]
    _: KW_ONLY
    panels_for: Callable[[dict[str, Any]], list[Panel]] | None = None
    on_stop: Callable[[], None] | None = None
    on_lr: Callable[[float], None] | None = None
    hint: str = ""
    words: Words = ENGLISH
    foreground: bool = False
    widget: DashboardWidget | None = field(default=None, init=False)
    _handle: Any = field(default=None, init=False)
    _marimo: Any = field(default=None, init=False)
    _cursors: dict[str, Any] | None = field(default=None, init=False)
    _panels_json: tuple[list[Panel], list[dict[str, Any]]] | None = field(default=None, init=False)
    overlay: Overlay | None = field(default=None, init=False)
    text_interval = 1 / 3  # 3 Hz: under the 4 Hz cap, well within the 0.5 s floor when a check comes late

    @property
    def late_updates(self) -> bool:
        """A comm message may go out from any thread in a Jupyter kernel; marimo sends only from the cell's."""
        return self._marimo is None

    def open(self, view: View, state: TrainingState, status: bool = True) -> None:
        """Show the widget with everything so far in its first message (no update right after)."""
        spec, data = self._traits(view, state, status, full=True)
        wire_series(data, binary=False)
        self.widget = DashboardWidget(on_stop=self.on_stop, on_lr=self.on_lr, spec=spec, view=data)
        if self.foreground:
            busy = BusyStatus.for_foreground_run()
            self.widget.busy = busy.start() if busy is not None else None
        if env.in_marimo():
            import marimo

            self._marimo = marimo
            marimo.output.replace(marimo.ui.anywidget(self.widget))
        else:
            self._handle = IPython.display.display(self.widget, display_id=True)

    def show_runs(self, overlay: Overlay, view: View) -> None:
        """Draw ``overlay`` under the live curves: its lines go to the page once, as the widget's ``compare`` trait
        (a view opened later gets it with the rest of the state); the refreshes send only its table's HTML."""
        self.overlay = overlay
        if self.widget is not None and "plot" in self.parts and overlay.runs:
            self.widget.compare = overlay.to_widget()

    def update(self, view: View, state: TrainingState, status: bool = True) -> None:
        """Send what is new as a custom message (every view of the widget merges it); after a page's ``hello``,
        set the ``view`` trait to all of it instead.  ``spec`` is set when the panels or the x range changed."""
        widget = self.widget
        if widget is None:
            return
        full = widget.resync.is_set()
        if full:
            widget.resync.clear()
        spec, data = self._traits(view, state, status, full)
        paths, buffers = wire_series(data, binary=widget.binary and not full)
        if spec is not None:
            widget.spec = spec
        if full:
            widget.view = data  # what a view opened later starts from
        else:  # cheaper than a trait change: nothing is kept, compared or searched for binary buffers
            widget.send({"type": "view", "view": data, "buffer_paths": paths}, buffers)

    def _traits(
        self, view: View, state: TrainingState, status: bool, full: bool
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The new ``spec`` (None when the panels and the x range are unchanged) and the ``view``: the series from
        the start when ``full``, else what the page lacks."""
        overlay = self.overlay
        data = payload(view, self.parts, hint=self.hint, status=status, words=self.words, overlay=overlay)
        if view.time is not None:
            data["time"] = time_html(view.time, self.words)
        if "controls" in self.parts:
            data["controls"] = {"enabled": view.status in ("starting", "running"), "lr": view.lr}
        plot: dict[str, Any] = {"x_range": [0, 1], "epoch_marks": []}
        shown: list[Panel] = []
        if "plot" in self.parts:
            plot, self._cursors = state.plot_delta(None if full else self._cursors)
            data["series"] = plot["series"]
            shown = self.panels_for(plot) if self.panels_for else []
            # The y ranges: the PNG's rule, from the extremes the series keep (not every point at each refresh).
            data["y_ranges"] = state.read_series(lambda series: [combined_range(y_range(panel, series), panel, overlay)
                                                                 for panel in shown])
        if self._panels_json is None or self._panels_json[0] is not shown:  # the callback keeps its list until the
            self._panels_json = (shown, [panel.to_json() for panel in shown])  # panels change
        panels = self._panels_json[1]
        old = self.widget.spec if self.widget is not None else {}
        if not full and panels == old.get("panels") and plot["x_range"] == old.get("x_range"):
            return None, data
        return {
            "parts": sorted(self.parts),
            "panels": panels,
            "x_range": plot["x_range"],
            "epoch_marks": plot["epoch_marks"],
            "colors": {name: list(pair) for name, pair in COLORS.items()},
            "labels": {name: self.words(key) for name, key in _LABELS.items()},
        }, data

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        widget, self.widget = self.widget, None
        snapshot = snapshot_bundle(view, self.parts, has_plot=png is not None, status=status, words=self.words,
                                   overlay=self.overlay)
        bundle = with_time(snapshot, view, self.words)
        image, metadata = plot_bundle(view, png, css_width, self.words)
        try:
            if self._marimo is not None:
                mo = self._marimo
                items = [mo.Html(bundle["text/html"])] + ([mo.image(png)] if png is not None else [])
                mo.output.replace(mo.vstack(items))
            elif self._handle is not None and not (self.parts & {"progress", "table"} or status):
                # A plot alone: the PNG takes the widget's place.
                self._handle.update(image if png is not None else bundle, raw=True, metadata=metadata)
            elif self._handle is not None:
                self._handle.update(bundle, raw=True)
                if png is not None:
                    IPython.display.display(image, raw=True, metadata=metadata)
            if self._handle is not None and widget is not None:
                widget.drop_front_end()
        finally:
            if widget is not None:
                widget.close()

    def abort(self) -> None:
        widget, self.widget = self.widget, None
        if widget is not None:
            widget.close()


def with_time(bundle: dict[str, str], view: View, words: Words = ENGLISH) -> dict[str, str]:
    """The snapshot ``bundle`` with the "where the time goes" bar after it (HTML) and its line (text), when the view
    has one (a Dashboard beside a CallbackProfiler)."""
    if view.time is None:
        return bundle
    return {**bundle, "text/html": bundle.get("text/html", "") + time_html(view.time, words),
            "text/plain": bundle.get("text/plain", "") + "\n" + time_text(view.time, words)}


class StaticRenderer(NullRenderer):
    """``display_id`` HTML (``live``: at most once per ``interval`` seconds), then the snapshot and the PNG."""

    def __init__(self, parts: frozenset[str], live: bool = True, interval: float = 1.0, words: Words = ENGLISH) -> None:
        self.parts = parts
        self.live = live
        self.text_interval = float(interval)
        self.words = words
        self._handle: Any = None
        self._plot_handle: Any = None
        self.overlay: Overlay | None = None

    def show_runs(self, overlay: Overlay, view: View) -> None:
        """The earlier runs a ``Dashboard(compare=...)`` compares with: their table from now on (the final PNG draws
        their curves)."""
        self.overlay = overlay

    def open(self, view: View, state: TrainingState, status: bool = True) -> None:
        if self.live:
            bundle = with_time(snapshot_bundle(view, self.parts, status=status, words=self.words), view, self.words)
            self._handle = IPython.display.display(bundle, raw=True, display_id=True)
            if "plot" in self.parts:
                pending = {"text/plain": self.words("plot_pending")}
                self._plot_handle = IPython.display.display(pending, raw=True, display_id=True)

    def update(self, view: View, state: TrainingState, status: bool = True) -> None:
        if self._handle is not None:
            bundle = snapshot_bundle(view, self.parts, status=status, words=self.words, overlay=self.overlay)
            self._handle.update(with_time(bundle, view, self.words), raw=True)

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        snapshot = snapshot_bundle(view, self.parts, has_plot=png is not None, status=status, words=self.words,
                                   overlay=self.overlay)
        bundle = with_time(snapshot, view, self.words)
        image, metadata = plot_bundle(view, png, css_width, self.words)
        if self._handle is not None:
            self._handle.update(bundle, raw=True)
        else:
            IPython.display.display(bundle, raw=True)
        if "plot" in self.parts and view.kind == "train":
            if self._plot_handle is not None:
                self._plot_handle.update(image, raw=True, metadata=metadata)
            else:
                IPython.display.display(image, raw=True, metadata=metadata)
