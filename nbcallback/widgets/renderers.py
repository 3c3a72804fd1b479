"""The choice of renderer: which one shows a run, from the display mode and what the callback shows."""
from __future__ import annotations

from typing import Any, Callable, TextIO

from nbcallback.widgets.env import describe_frontend_support, host, kernel_supports_subshells
from nbcallback.widgets.panels import Panel
from nbcallback.widgets.render_text import LogRenderer, NullRenderer, TTYRenderer
from nbcallback.widgets.words import Words

__all__ = ["choose_renderer"]


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
) -> Any:
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
