"""Notebook renderers: one live anywidget, or ``display_id`` HTML; then a static snapshot.

:class:`WidgetRenderer` (``display='widget'``)
    One :class:`DashboardWidget`, an ``anywidget.AnyWidget`` whose ES module
    (``static/dashboard.js``, shipped in the package, nothing fetched at run
    time) draws the bars, the table, the controls and the plot panels.  The
    kernel sends data only: each refresh sets the ``view`` trait once (one comm
    message with the new text, table rows and series points), and ``spec`` (the
    panels) when a new metric appears.  A view that joins late (a reloaded
    page) says ``hello`` and gets the whole history with the next refresh.

    At the end of the run the widget's output is replaced, through its
    ``display_id``, by a static HTML snapshot, the final plot is added as an
    ``image/png`` output (drawn from the same panel spec, twice the pixels), and
    the widget is closed; a saved notebook holds no widget of ours and shows the
    final state on GitHub, nbviewer, VS Code and nbconvert.  In marimo the cell
    output is replaced instead.

:class:`StaticRenderer` (``display='static'`` / ``'final'``)
    ``display_id`` HTML at most once per second (``'static'``), or nothing
    until the final snapshot (``'final'``, for docs builds); the final PNG goes
    into its own output slot.

``clear_output`` is never called: other output of the user's cell survives.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import anywidget
import traitlets

from nbcallback.widgets.controls import BusyStatus, release_comm_routing, valid_lr
from nbcallback.widgets.panels import COLORS, Panel
from nbcallback.widgets.render_html import payload, plot_bundle, snapshot_bundle
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import Words, words

__all__ = ["DashboardWidget", "WidgetRenderer", "StaticRenderer"]

STATIC = Path(__file__).parent / "static"
_LABELS = {"stop": "stop", "stopping": "stopping", "lr": "lr", "apply": "apply", "step": "axis_step"}

#: Builds the panels from the plot's facts (``metrics``, ``loss_positive``, ``lr_changed``).
PanelsFor = Callable[[dict[str, Any]], "list[Panel]"]


class DashboardWidget(anywidget.AnyWidget):
    """The live view: the kernel syncs ``spec`` and ``view``; the browser draws.

    Messages from the page (``stop``, ``lr``, ``hello``) arrive on a kernel
    subshell's thread while a foreground run trains (see
    :func:`~nbcallback.widgets.controls.release_comm_routing`); the handlers
    only store the request.
    """

    _esm = STATIC / "dashboard.js"
    _css = STATIC / "dashboard.css"
    spec = traitlets.Dict().tag(sync=True)
    view = traitlets.Dict().tag(sync=True)

    def __init__(
        self, on_stop: Callable[[], None] | None = None, on_lr: Callable[[float], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._on_stop = on_stop
        self._on_lr = on_lr
        #: Set when a view asked for the whole history (a reloaded page).
        self.resync = threading.Event()
        #: Set by the renderer for a foreground run (see :class:`~nbcallback.widgets.controls.BusyStatus`).
        self.busy: BusyStatus | None = None
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
            self.resync.set()


def _close(widget: DashboardWidget) -> None:
    """Stop its busy-status watcher; close the widget and the ``Layout`` model every ipywidgets
    ``DOMWidget`` creates with it (``Widget.close`` leaves child models open: a saved notebook
    would keep the layout's state)."""
    if widget.busy is not None:
        widget.busy.stop()
    layout = getattr(widget, "layout", None)
    widget.close()
    if layout is not None and getattr(layout, "comm", None) is not None:
        layout.close()


def _marimo_output() -> Any:
    """marimo's output module while a marimo notebook runs this cell, else None."""
    from nbcallback.widgets.env import in_marimo

    if not in_marimo():
        return None
    import marimo

    return marimo


class WidgetRenderer:
    """Live anywidget view, then the static snapshot (see the module docstring).

    Args:
        parts: what the callback shows (``progress``, ``table``, ``plot``, ``controls``).
        panels_for: the panels for the plot's facts (only with ``plot``).
        on_stop, on_lr: the control handlers (only with ``controls``).
        hint: the one line on how to stop.
        w: the message table (the language).
        foreground: the run trains in the running cell (not ``run_in_background``):
            keep the kernel indicator at busy (:class:`~nbcallback.widgets.controls.BusyStatus`).
    """

    text_interval = 0.25

    def __init__(
        self,
        parts: frozenset[str],
        *,
        panels_for: PanelsFor | None = None,
        on_stop: Callable[[], None] | None = None,
        on_lr: Callable[[float], None] | None = None,
        hint: str = "",
        w: Words = words,
        foreground: bool = False,
    ) -> None:
        self.parts = parts
        self.w = w
        self.foreground = foreground
        self.panels_for = panels_for
        self.on_stop = on_stop
        self.on_lr = on_lr
        self.hint = hint
        self.widget: DashboardWidget | None = None
        self.saved_to: str | None = None
        self._handle: Any = None
        self._marimo: Any = None
        self._cursors: dict[str, Any] | None = None
        self._panels: list[dict[str, Any]] | None = None
        self._lr: float | None = None

    def _spec(self, panels: list[dict[str, Any]], plot: dict[str, Any]) -> dict[str, Any]:
        return {
            "parts": sorted(self.parts),
            "panels": panels,
            "x_range": plot["x_range"],
            "epoch_marks": plot["epoch_marks"],
            "colors": {name: list(pair) for name, pair in COLORS.items()},
            "labels": {name: self.w(key) for name, key in _LABELS.items()},
        }

    def _data(self, view: View, state: TrainingState, status: bool, full: bool = False) -> tuple[dict[str, Any], Any]:
        data = payload(view, self.parts, hint=self.hint, status=status, w=self.w)
        spec = None
        if "controls" in self.parts:
            data["controls"] = {"enabled": view.status in ("starting", "running"), "lr": view.lr}
        if "plot" in self.parts:
            plot, self._cursors = state.plot_delta(None if full else self._cursors)
            data["series"] = plot["series"]
            panels = [p.to_json() for p in self.panels_for(plot)] if self.panels_for else []
            if full or panels != self._panels or plot["x_range"] != (self.widget.spec.get("x_range") if self.widget else None):
                self._panels = panels
                spec = self._spec(panels, plot)
        elif full:
            spec = self._spec([], {"x_range": [0, 1], "epoch_marks": []})
        return data, spec

    def open(self, view: View, state: TrainingState, status: bool = True) -> None:
        """Create the widget with the current state and show it."""
        self.widget = DashboardWidget(on_stop=self.on_stop, on_lr=self.on_lr)
        if self.foreground:
            busy = BusyStatus.for_foreground_run()
            self.widget.busy = busy.start() if busy is not None else None
        data, spec = self._data(view, state, status, full=True)
        with self.widget.hold_sync():
            self.widget.spec = spec
            self.widget.view = data
        self._marimo = _marimo_output()
        if self._marimo is not None:
            self._marimo.output.replace(self._marimo.ui.anywidget(self.widget))
        else:
            from IPython.display import display

            self._handle = display(self.widget, display_id=True)

    def update(self, view: View, state: TrainingState, status: bool = True) -> None:
        """Send what changed since the last update (one message; two when the panels change)."""
        widget = self.widget
        if widget is None:
            return
        full = widget.resync.is_set()
        if full:
            widget.resync.clear()
        data, spec = self._data(view, state, status, full=full)
        with widget.hold_sync():
            if spec is not None:
                widget.spec = spec
            widget.view = data

    def event(self, kind: str, view: View) -> None:
        """Run events need no message of their own: the next update carries them."""

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """Replace the live view with the snapshot and the final PNG; close the widget."""
        widget, self.widget = self.widget, None
        bundle = snapshot_bundle(view, self.parts, has_plot=png is not None, status=status, w=self.w)
        try:
            if self._marimo is not None:
                self._finish_marimo(bundle, png)
            elif self._handle is not None:
                from IPython.display import display

                if self.parts & {"progress", "table"} or status:
                    self._handle.update(bundle, raw=True)
                    if png is not None:
                        image, metadata = plot_bundle(view, png, css_width, self.w)
                        display(image, raw=True, metadata=metadata)
                else:  # a plot alone: the PNG takes the widget's place
                    image, metadata = plot_bundle(view, png, css_width, self.w)
                    self._handle.update(image if png is not None else bundle, raw=True, metadata=metadata)
        finally:
            if widget is not None:
                _close(widget)

    def _finish_marimo(self, bundle: dict[str, str], png: bytes | None) -> None:
        mo = self._marimo
        items = [mo.Html(bundle["text/html"])]
        if png is not None:
            items.append(mo.image(png))
        mo.output.replace(mo.vstack(items))

    def abort(self) -> None:
        """The display failed: close the widget, leave the rest."""
        widget, self.widget = self.widget, None
        if widget is not None:
            _close(widget)


class StaticRenderer:
    """``display_id`` HTML (``live``: at most once per ``interval`` seconds), then the snapshot and PNG."""

    text_interval = 1.0

    def __init__(self, parts: frozenset[str], live: bool = True, interval: float = 1.0, w: Words = words) -> None:
        self.parts = parts
        self.w = w
        self.live = live
        self.text_interval = float(interval)
        self.saved_to: str | None = None
        self._handle: Any = None
        self._plot_handle: Any = None

    def open(self, view: View, state: TrainingState, status: bool = True) -> None:
        from IPython.display import display

        if self.live:
            self._handle = display(snapshot_bundle(view, self.parts, status=status, w=self.w), raw=True,
                                   display_id=True)
            if "plot" in self.parts:
                self._plot_handle = display({"text/plain": self.w("plot_pending")}, raw=True, display_id=True)

    def update(self, view: View, state: TrainingState, status: bool = True) -> None:
        if self._handle is not None:
            self._handle.update(snapshot_bundle(view, self.parts, status=status, w=self.w), raw=True)

    def event(self, kind: str, view: View) -> None:
        """Run events need no output of their own: the next update carries them."""

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        from IPython.display import display

        bundle = snapshot_bundle(view, self.parts, has_plot=png is not None, status=status, w=self.w)
        image, metadata = plot_bundle(view, png, css_width, self.w)
        if self._handle is not None:
            self._handle.update(bundle, raw=True)
        else:
            display(bundle, raw=True)
        if "plot" in self.parts and view.kind == "train":
            if self._plot_handle is not None:
                self._plot_handle.update(image, raw=True, metadata=metadata)
            else:
                display(image, raw=True, metadata=metadata)

    def abort(self) -> None:
        """Nothing to close: plain outputs stay as they are."""
