"""Notebook renderers: a small live widget tree, or ``display_id`` HTML, then a static snapshot.

:class:`WidgetRenderer` (``display='widget'``)
    One ``HTML`` widget for bars, status and the last table rows, one
    ``Image`` widget for the plot (PNG as a binary buffer, no base64), and for
    the Dashboard a Stop ``Button`` and an lr ``FloatText``.  All widgets share
    one ``Layout`` model.  A text refresh changes one trait of one widget, so it
    is exactly one comm message; a plot frame is one more.  The tree is created
    once per run and reused across epochs and the train/eval phases (tqdm's
    nested bars open 11 models per bar).

    Two outputs: the HTML (and controls) first, the plot ``Image`` second.  At
    the end of the run each is replaced through its ``display_id``: the first
    by a static HTML snapshot with a meaningful ``text/plain``, the second by
    the final plot as an ``image/png`` output (which GitHub renders, unlike a
    data-URI image inside HTML); then every model (widgets, their layout and
    style models) is closed, so a saved notebook holds no widget state of ours
    and shows the final state on GitHub, nbviewer, VS Code and nbconvert.  The heavy traits are blanked
    before closing, because some clients (nbclient 0.11) keep the last state of
    closed models in the notebook they save.  The snapshot goes out, and the
    live view's models are closed, while the plot helper still draws the final
    frame.

:func:`display_output` / :func:`replace_output`
    IPython's ``display`` and ``DisplayHandle.update`` flush stdout and stderr
    first (two round trips to the kernel's IO thread, 1-3 ms each time on a
    busy 2-core machine).  In an ipykernel these send the same message
    without them where order cannot change: an update replaces an output in
    place, and a new output needs no flush when nothing printed is waiting.

:class:`StaticRenderer` (``display='static'`` / ``'final'``)
    ``display_id`` HTML updates at most once per second (``'static'``), or
    nothing until the final snapshot (``'final'``, for docs builds); the plot
    has its own output slot, filled with the final PNG at the end.

``clear_output`` is never called: other output of the user's cell survives.
IPython and ipywidgets are imported when a renderer opens (or when a widget
callback is created in a notebook kernel), not before.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Union

from nbcallback.widgets import fmt
from nbcallback.widgets.controls import release_comm_routing, valid_lr
from nbcallback.widgets.render_html import PLOT_PENDING, live_html, plot_bundle, snapshot_bundle
from nbcallback.widgets.state import View

__all__ = ["WidgetRenderer", "StaticRenderer"]

# A 1x1 transparent PNG, so the Image widget shows nothing (not a broken image) before the first frame.
_EMPTY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: The final plot handed to ``finish``: PNG bytes, None (no plot), or a function that waits
#: for the PNG (the plot helper is still drawing it) and returns it.
FinalPng = Union[bytes, None, Callable[[], Union[bytes, None]]]


def _kernel_publisher() -> Any:
    """ipykernel's display publisher when a display message can be sent through it
    directly (its session, socket, parent header and hooks are there), else None."""
    try:
        from IPython import get_ipython

        publisher = getattr(get_ipython(), "display_pub", None)
        needed = ("session", "pub_socket", "_hooks", "parent_header")
        if publisher is None or any(getattr(publisher, name, None) is None for name in needed):
            return None
        return publisher
    except Exception:  # an unusual shell: IPython's own path is used
        return None


def _send_display(publisher: Any, msg_type: str, bundle: dict[str, Any], display_id: str) -> None:
    """Send a ``display_data`` / ``update_display_data`` message as ipykernel would
    (same parent header, through the display hooks, e.g. an ``Output`` widget's
    capture), only without first flushing stdout and stderr."""
    content = {"data": bundle, "metadata": {}, "transient": {"display_id": display_id}}
    message = publisher.session.msg(msg_type, content, parent=publisher.parent_header)
    for hook in list(publisher._hooks):
        message = hook(message)
        if message is None:  # taken by the hook
            return
    publisher.session.send(publisher.pub_socket, message, ident=getattr(publisher, "topic", None))


def replace_output(handle: Any, bundle: dict[str, Any]) -> None:
    """Replace the output behind ``handle`` (an ``IPython.display.DisplayHandle``) with ``bundle``.

    ``DisplayHandle.update`` first flushes stdout and stderr, each a round trip
    to the kernel's IO thread (0.2 ms on an idle kernel, 1-3 ms on a busy
    2-core machine), so that a *new* output lands after what was printed
    before it.  An update replaces an output in place, where order does not
    matter, so in an ipykernel it is sent without the flushes.  Anywhere else
    (another kernel, a terminal IPython) it is a plain ``handle.update``.
    """
    publisher = _kernel_publisher()
    if publisher is None:
        handle.update(bundle, raw=True)
        return
    _send_display(publisher, "update_display_data", bundle, handle.display_id)


def _streams_flushed() -> bool:
    """True when ipykernel's stdout and stderr hold nothing waiting to be sent.

    Reads the streams' pending-flush flags; a stream without them (redirected
    to a file or a ``StringIO``, another kernel) counts as not flushed.
    """
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "_flush_pending", None) is not False:
            return False
        if getattr(stream, "_subprocess_flush_pending", None) is not False:
            return False
    return True


def display_output(bundle: dict[str, Any], *, follows_own_output: bool = False) -> Any:
    """Display ``bundle`` as a new output; returns its ``DisplayHandle``.

    ``display`` flushes stdout and stderr first (two round trips to the
    kernel's IO thread) so that the output lands after what was printed
    before it.  In an ipykernel the message is sent directly when there is
    nothing to flush: the streams have no pending output, or
    (``follows_own_output``) this thread displayed an output just before and
    printed nothing since.  Otherwise, and outside a kernel, it is IPython's
    ``display``.
    """
    from IPython.display import DisplayHandle, display

    publisher = _kernel_publisher()
    if publisher is None or not (follows_own_output or _streams_flushed()):
        return display(bundle, raw=True, display_id=True)
    handle = DisplayHandle()
    _send_display(publisher, "display_data", bundle, handle.display_id)
    return handle


def _send_snapshot(
    handle: Any, view: View, parts: frozenset[str], png: FinalPng, meanwhile: Callable[[], None] | None = None
) -> bytes | None:
    """Replace the first output with the snapshot, then collect the final PNG.

    The HTML goes out first: when ``png`` is still being drawn (a callable),
    the snapshot is built and sent meanwhile (and ``meanwhile`` runs), and the
    run only waits for what is left of the drawing.  Should no PNG come after
    all, the snapshot's text is sent again without its pointer to the plot.
    """
    promised = png is not None
    if handle is not None:
        replace_output(handle, snapshot_bundle(view, parts, has_plot=promised))
    if meanwhile is not None:
        meanwhile()
    if callable(png):
        png = png()
        if png is None and handle is not None:
            replace_output(handle, snapshot_bundle(view, parts, has_plot=False))
    return png


def _placeholder_text(view: View) -> str:
    what = "Evaluation" if view.kind == "eval" else "Training"
    return f"{what} in progress (live view; the final summary replaces it when the run ends)"


class WidgetRenderer:
    """Live ipywidgets view, replaced by a static snapshot at the end.

    Args:
        parts: what to show: any of ``'progress'``, ``'table'``, ``'plot'``, ``'controls'``.
        on_stop: called (from the comm thread) when the Stop button is clicked.
        on_lr: called (from the comm thread) with a new learning rate.
        hint: a short line about how to stop (shown next to the status).
        release_routing: clear ipykernel 7's per-comm routing hint of the
            control widgets (see :func:`~nbcallback.widgets.controls.release_comm_routing`).
    """

    text_interval = 0.25

    def __init__(
        self,
        parts: frozenset[str],
        on_stop: Callable[[], None] | None = None,
        on_lr: Callable[[float], None] | None = None,
        hint: str = "",
        release_routing: bool = True,
    ) -> None:
        self.parts = parts
        self.shows_plot = "plot" in parts
        self._on_stop = on_stop
        self._on_lr = on_lr
        self.hint = hint
        self._release_routing = release_routing
        self._handle: Any = None
        self._plot_handle: Any = None
        self._html: Any = None
        self._image: Any = None
        self._button: Any = None
        self._lr: Any = None
        self._root: Any = None
        self._widgets: list[Any] = []
        self._last_html = ""
        self._last_view: View | None = None
        self._syncing = False
        self.closed = False
        self.models_opened = 0

    # ------------------------------------------------------------------ opening

    def open(self, view: View) -> None:
        """Create the widget tree and display it (once per run)."""
        import ipywidgets as widgets

        layout = widgets.Layout(max_width="100%")
        children: list[Any] = []
        self._last_html = live_html(view, self.parts, self.hint)
        self._html = widgets.HTML(value=self._last_html, layout=layout)
        children.append(self._html)
        controls: list[Any] = []
        if "controls" in self.parts and self._on_stop is not None:
            self._button = widgets.Button(
                description="Stop", icon="stop", button_style="danger", tooltip="Stop after the current step",
                layout=layout,
            )
            self._button.on_click(self._clicked)
            controls.append(self._button)
        if "controls" in self.parts and self._on_lr is not None:
            self._lr = widgets.FloatText(
                value=view.lr or 0.0, description="lr", tooltip="Learning rate, applied at the next step",
                layout=layout, style={"description_width": "initial"},
            )
            self._lr.observe(self._lr_changed, names="value")
            controls.append(self._lr)
        if controls:
            children.append(widgets.HBox(controls, layout=layout))
        self._root = children[0] if len(children) == 1 else widgets.VBox(children, layout=layout)
        self._widgets = _all_models(self._root)
        placeholder = _placeholder_text(view)
        self._handle = display_output(_widget_bundle(self._root, placeholder))
        if self.shows_plot:
            self._image = widgets.Image(value=_EMPTY_PNG, format="png", layout=layout)
            self._widgets += [w for w in _all_models(self._image) if w not in self._widgets]
            self._plot_handle = display_output(_widget_bundle(self._image, "(live loss plot)"), follows_own_output=True)
        self.models_opened = len(self._widgets)
        if self._release_routing:
            for control in (self._button, self._lr):
                if control is not None:
                    release_comm_routing(control)

    # ------------------------------------------------------------------ handlers (comm thread)

    def _clicked(self, _button: Any) -> None:
        if not self.closed and self._on_stop is not None:
            self._on_stop()

    def _lr_changed(self, change: dict[str, Any]) -> None:
        if self._syncing or self.closed or self._on_lr is None:
            return
        lr = valid_lr(change.get("new"))
        if lr is not None:
            self._on_lr(lr)

    def sync_lr(self, lr: float | None) -> None:
        """Show the optimizer's learning rate in the lr box without treating it as a request.

        Only used when the view was opened before the optimizer was known
        (background runs); it publishes on the control's comm, so in foreground
        runs it is never called after the routing hint was cleared.
        """
        if self._lr is None or lr is None or self.closed:
            return
        self._syncing = True
        try:
            self._lr.value = float(lr)
        finally:
            self._syncing = False

    # ------------------------------------------------------------------ updates (training thread)

    def update(self, view: View, png: bytes | None) -> None:
        """One trait change per changed widget: the HTML text and, when given, the PNG."""
        if self.closed:
            return
        self._last_view = view
        if self._html is not None:
            text = live_html(view, self.parts, self.hint)
            if text != self._last_html:
                self._last_html = text
                self._html.value = text
        if png is not None and self._image is not None:
            self._image.value = png

    def event(self, kind: str, view: View) -> None:
        """Nothing special: events are visible at the next refresh."""

    #: ``finish`` takes the final PNG as a function too, and sends the snapshot while it is drawn.
    collects_final_png = True

    def finish(self, view: View, png: FinalPng) -> None:
        """Replace the view with the static snapshot, then close every model."""
        if self.closed:
            return
        try:
            png = _send_snapshot(self._handle, view, self.parts, png, meanwhile=self._close_view_models)
            if self._plot_handle is not None:
                replace_output(self._plot_handle, plot_bundle(view, png))
        finally:
            self._close_models()

    def abort(self) -> None:
        """Close every model without a snapshot (used when drawing the snapshot failed).

        The output keeps a text/plain summary of the last refresh, never a
        dangling widget reference.
        """
        if self.closed:
            return
        try:
            if self._handle is not None and self._last_view is not None:
                replace_output(self._handle, {"text/plain": fmt.run_summary(self._last_view)})
            if self._plot_handle is not None:
                replace_output(self._plot_handle, {"text/plain": "(no loss plot: the display failed)"})
        finally:
            self._close_models()

    def _close_view_models(self) -> None:
        """Close the models of the first output (replaced by the snapshot), except those
        the plot's Image still uses (the shared layout); the final frame may still be
        on its way."""
        keep = {id(model) for model in _all_models(self._image)} if self._image is not None else set()
        if self._html is not None and self._last_html:
            self._html.value = ""  # blank what is heavy: clients that ignore comm_close keep the last state
            self._last_html = ""
        closing = [model for model in self._widgets if id(model) not in keep]
        self._widgets = [model for model in self._widgets if id(model) in keep]
        for model in reversed(closing):
            model.close()

    def _close_models(self) -> None:
        self.closed = True
        # Blank what is heavy: clients that ignore comm_close keep the last state.
        if self._image is not None:
            self._image.value = b""
        if self._html is not None and self._last_html:
            self._html.value = ""
        for model in reversed(self._widgets):
            model.close()
        self._widgets = []


def _widget_bundle(widget: Any, text: str) -> dict[str, Any]:
    """The output that shows ``widget`` live (``text`` where widgets cannot be shown)."""
    return {_WIDGET_VIEW: {"model_id": widget.model_id, "version_major": 2, "version_minor": 0}, "text/plain": text}


def _all_models(root: Any) -> list[Any]:
    """Every widget model reachable from ``root``: children, layouts and styles, each once."""
    seen: dict[str, Any] = {}
    stack = [root]
    while stack:
        widget = stack.pop()
        model_id = getattr(widget, "model_id", None)
        if model_id is None or model_id in seen:
            continue
        seen[model_id] = widget
        for name in ("layout", "style"):
            child = getattr(widget, name, None)
            if child is not None and hasattr(child, "model_id"):
                stack.append(child)
        stack.extend(getattr(widget, "children", ()) or ())
    return list(seen.values())


class StaticRenderer:
    """``display_id`` HTML: live at <= 1 Hz (``live=True``) or only the final snapshot.

    Args:
        parts: what to show: any of ``'progress'``, ``'table'``, ``'plot'``.
        live: show progress while running (``'static'``); False shows only the
            final snapshot (``'final'``, docs builds).
        interval: seconds between two live updates.
    """

    shows_plot = False  # the plot appears in the final snapshot only

    def __init__(self, parts: frozenset[str], live: bool = True, interval: float = 1.0) -> None:
        self.parts = parts - {"controls"}
        self.live = live
        self.text_interval = float(interval) if live else 3600.0
        self._handle: Any = None
        self._plot_handle: Any = None
        self._last = ""
        self.closed = False

    def _bundle(self, view: View) -> dict[str, str]:
        return {"text/html": live_html(view, self.parts), "text/plain": fmt.run_summary(view)}

    def open(self, view: View) -> None:
        """Display the first frame (live mode only)."""
        if not self.live or not (self.parts & {"progress", "table"}):
            return
        bundle = self._bundle(view)
        self._last = bundle["text/html"]
        self._handle = display_output(bundle)
        if "plot" in self.parts:  # keep the plot's place next to the progress
            self._plot_handle = display_output({"text/plain": PLOT_PENDING}, follows_own_output=True)

    def update(self, view: View, png: bytes | None) -> None:
        """Re-send the HTML when it changed."""
        if self._handle is None or self.closed:
            return
        bundle = self._bundle(view)
        if bundle["text/html"] != self._last:
            self._last = bundle["text/html"]
            replace_output(self._handle, bundle)

    def event(self, kind: str, view: View) -> None:
        """Nothing special: events are visible at the next refresh."""

    collects_final_png = True

    def finish(self, view: View, png: FinalPng) -> None:
        """Show the final snapshot (replacing the live output when there is one)."""
        if self.closed:
            return
        self.closed = True
        from IPython.display import display

        if self._handle is not None:
            png = _send_snapshot(self._handle, view, self.parts, png)
        else:  # 'final' mode: nothing shown yet, one output with the finished snapshot
            png = png() if callable(png) else png
            display(snapshot_bundle(view, self.parts, has_plot=png is not None), raw=True)
        if "plot" in self.parts:
            plot = plot_bundle(view, png)
            if self._plot_handle is not None:
                replace_output(self._plot_handle, plot)
            else:
                display(plot, raw=True)

    def abort(self) -> None:
        """Nothing to release; the plot's slot must not keep promising a plot."""
        self.closed = True
        if self._plot_handle is not None:
            replace_output(self._plot_handle, {"text/plain": "(no loss plot: the display failed)"})
