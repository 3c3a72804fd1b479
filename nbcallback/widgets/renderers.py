"""Renderers: the interface every renderer implements (:class:`Renderer`, called by ``base.py`` through the
scheduler's guard), :class:`NullRenderer` (shows nothing) and :func:`choose_renderer`, which one shows a run, from
the display mode and what the callback shows."""
from __future__ import annotations

from typing import Any, Callable, Protocol, TextIO

from nbcallback.widgets.env import describe_frontend_support, host, kernel_supports_subshells
from nbcallback.widgets.overlay import Overlay
from nbcallback.widgets.panels import Panel
from nbcallback.widgets.render_text import LogRenderer, TTYRenderer
from nbcallback.widgets.state import View
from nbcallback.widgets.words import Words

__all__ = ["NullRenderer", "Renderer", "choose_renderer"]


class Renderer(Protocol):
    """What ``base.py`` calls on the renderer of a run (the terminal and log renderers in ``render_text.py``, the
    widget and static ones in ``render_widget.py``)."""

    #: Seconds between refreshes when the callback's ``refresh_interval`` is None.
    text_interval: float
    #: Whether ``update`` may be called from a timer thread (a phase change sent while a step stalls).
    late_updates: bool

    def open(self, view: View, state: Any = None, status: bool = True) -> None:
        """Show the run's first view (``status``: this callback shows the run's status line)."""

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        """Show a refresh (at most once per interval)."""

    def event(self, kind: str, view: View) -> None:
        """A moment of the run: ``'start'``, ``'epoch_end'``."""

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """The end: the final view and the plot's PNG (None without one), shown ``css_width`` px wide."""

    def abort(self) -> None:
        """The display failed: close what is open (never raises)."""

    def show_runs(self, overlay: Overlay, view: View) -> None:
        """The earlier runs a ``Dashboard(compare=...)`` draws under this one, given once, after ``open``: at the
        run's start, or (the live widget in a Jupyter kernel) from the thread that read them, under the lock the
        refreshes take: kept for the refreshes and the end."""


class NullRenderer:
    """Shows nothing (``display='off'``, non-zero ranks); the base of the widget renderers."""

    text_interval = 5.0
    late_updates = False

    def open(self, view: View, state: Any = None, status: bool = True) -> None: ...
    def update(self, view: View, state: Any = None, status: bool = True) -> None: ...
    def event(self, kind: str, view: View) -> None: ...
    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None: ...
    def abort(self) -> None: ...
    def show_runs(self, overlay: Overlay, view: View) -> None: ...


def choose_renderer(
    mode: str,
    parts: frozenset[str],
    *,
    words: Words,
    background: bool = False,
    graceful_interrupt: bool = True,
    repeats_another: bool = False,
    file: TextIO | None = None,
    log_interval: float = 30.0,
    panels_for: Callable[[dict[str, Any]], list[Panel]] | None = None,
    on_stop: Callable[[], None] | None = None,
    on_lr: Callable[[float], None] | None = None,
) -> Renderer:
    """The renderer of a run in display ``mode`` (``'widget'``, ``'static'``, ``'final'``, ``'tty'``, ``'log'``,
    ``'off'``) showing ``parts``.

    Args:
        background: the run trains on another thread (``run_in_background``).
        graceful_interrupt: the kernel's interrupt stops at a step boundary (the view says so).
        repeats_another: in a terminal or log, a progress callback before this one already prints the run's lines.
        panels_for, on_stop, on_lr: the widget's panels for the plot's facts, and what its controls call.
    """
    if mode == "widget":
        from nbcallback.widgets.render_widget import WidgetRenderer

        support = describe_frontend_support(mode, background, kernel_supports_subshells())
        controls = "controls" in parts and bool(support["controls"])
        key = ""
        if "controls" in parts and (controls or graceful_interrupt):
            key = str(support["hint"])
        elif "controls" not in parts and "progress" in parts and graceful_interrupt and not background:
            key = "hint_marimo" if host() == "marimo" else "hint_interrupt"  # no Stop button to mention
        return WidgetRenderer(parts if controls else parts - {"controls"}, panels_for=panels_for,
                              on_stop=on_stop if controls else None, on_lr=on_lr if controls else None,
                              hint=words(key) if key else "", words=words, foreground=not background)
    if mode in ("static", "final"):
        from nbcallback.widgets.render_widget import StaticRenderer

        return StaticRenderer(parts, live=mode == "static", words=words)
    if mode in ("tty", "log") and repeats_another:
        parts = parts - {"progress", "table"}
    if mode == "tty":
        return TTYRenderer(parts, file, words)
    return LogRenderer(parts, file, log_interval, words) if mode == "log" else NullRenderer()
