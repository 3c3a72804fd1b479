"""The text renderers: :class:`TTYRenderer` for terminals, :class:`LogRenderer` for logs and CI (no ``\\r``, a few
dozen lines a run), and :func:`time_text`, the time bar in one line.  The words and numbers
come from :mod:`nbcallback.widgets.format`.
"""
from __future__ import annotations

import shutil
import sys
from typing import Any, TextIO

from nbcallback.widgets.env import is_tty
from nbcallback.widgets.format import (
    aligned, display_width, duration, metric, number, progress_parts, run_summary, share_percent, short_seconds, shown_loss,
    text_table,
)
from nbcallback.widgets.overlay import Overlay, compare_table
from nbcallback.widgets.state import TimeFacts, View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["TTYRenderer", "LogRenderer", "time_text", "compare_text"]


class _TextBase:
    """What the terminal and log renderers share (they implement :class:`~nbcallback.widgets.renderers.Renderer`)."""

    text_interval = 5.0
    late_updates = False

    def __init__(self, parts: frozenset[str], stream: TextIO | None = None, words: Words = ENGLISH) -> None:
        self.parts = parts
        self.words = words
        self._stream = stream
        self.plot_note: str | None = None  # a plot alone: the line about its PNG (where it was saved)
        self.overlay: Overlay | None = None  # the earlier runs a Dashboard compares with (listed at start and end)

    def open(self, view: View, state: Any = None, status: bool = True) -> None:
        """Nothing to open: the first line comes with the first update (a terminal renderer overrides it)."""

    def abort(self) -> None:
        """Nothing to close (a terminal renderer ends its line)."""

    def show_runs(self, overlay: Overlay, view: View) -> None:
        """The earlier runs a ``Dashboard(compare=...)`` compares with: listed once, with their final metrics."""
        self.overlay = overlay
        self._write("\n".join(compare_text(overlay, None, self.words)) + "\n")

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _line(self, text: str) -> None:
        self._write(text + "\n")

    def _progress_line(self, view: View, bar_width: int = 0) -> str:
        parts = progress_parts(view, self.words)
        line = parts["phase"] if view.kind == "eval" else f"{parts['epoch']} {parts['phase']}"
        if bar_width:
            if view.kind == "eval" or view.phase == "eval":
                done, total = view.eval_step, view.eval_steps or 0
            else:
                done, total = view.step_in_epoch, view.steps_per_epoch
            unicode = "utf" in (getattr(self.stream, "encoding", None) or "utf-8").lower()
            line += " |" + _bar(done, total, bar_width, unicode) + "|"
        line += f" {parts['steps']} [{parts['time']}, {parts['rate']}]"
        return " ".join([line] + [p for p in (parts["loss"], parts["eta_total"]) if p])

    def event(self, kind: str, view: View) -> None:
        """One permanent line per epoch: the loss, the epoch's metrics and the time."""
        if kind != "epoch_end" or "progress" not in self.parts:
            return
        last = "?" if view.last_epoch is None else view.last_epoch
        bits = [self.words("epoch_of", epoch=view.epoch, last=last)]
        loss = shown_loss(view)
        if loss is not None:
            bits.append(self.words("loss_value", value=number(loss)))
        if view.rows and view.rows[-1].epoch == view.epoch:
            row = view.rows[-1]
            values = " ".join(f"{name} {metric(value)}" for name, value in row.values.items())
            bits.append(values + (" " + self.words("partial") if row.partial else ""))
        self._line(" · ".join(bits + [duration(view.elapsed)]))

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """The run summary (the metrics table, the compared runs); for a plot alone, where its PNG was saved."""
        if not self.parts & {"progress", "table"}:  # the progress callbacks print the summary
            self._line(self.plot_note or self.words("text_plot_none"))
            if self.overlay is not None and self.overlay.runs:  # (a note that there is none: at the start only)
                self._write("\n".join(compare_text(self.overlay, view, self.words)) + "\n")
            return
        self._line(run_summary(view, self.words))
        rest = [view.error] if view.error else []
        if view.rows and "table" in self.parts:
            rest += text_table(view, self.words)
        if self.overlay is not None and self.overlay.runs:
            rest += compare_text(self.overlay, view, self.words)
        if rest:
            self._write("\n".join(rest) + "\n")


def _bar(done: float, total: float, width: int, unicode: bool) -> str:
    if total <= 0:
        return " " * width
    fraction = min(max(done / total, 0.0), 1.0)
    if not unicode:
        return ("#" * int(round(fraction * width))).ljust(width)
    full, rest = divmod(int(round(fraction * width * 8)), 8)
    return ("█" * full + (" ▏▎▍▌▋▊▉"[rest] if full < width and rest else "")).ljust(width)


def _fit(text: str, limit: int | None) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` terminal columns (None: not cut), and its width in columns."""
    width = 0
    for index, char in enumerate(text):
        if limit is not None and width + display_width(char) > limit:
            return text[:index], width
        width += display_width(char)
    return text, width


class _ClearsTheLine:
    """Stands in for the terminal's ``sys.stdout`` or ``sys.stderr`` while a progress line is shown: what another
    callback prints (``LossMonitor``'s lines, a warning) first clears the line, which the next refresh draws below."""

    def __init__(self, stream: TextIO, renderer: TTYRenderer) -> None:
        self.stream = stream
        self._renderer = renderer

    def write(self, text: str) -> int:
        self._renderer.clear()
        return self.stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class TTYRenderer(_TextBase):
    """One line rewritten with ``\\r`` (at most 4 Hz), one permanent line per epoch."""

    text_interval = 0.25

    def __init__(self, parts: frozenset[str], stream: TextIO | None = None, words: Words = ENGLISH) -> None:
        super().__init__(parts, stream, words)
        self._last_len = 0  # the line's width in terminal columns
        self._stand_ins: dict[str, _ClearsTheLine] = {}

    def open(self, view: View, state: Any = None, status: bool = True) -> None:
        """Drawing on the terminal's own stdout: stand in for stdout and stderr until the run ends."""
        if self._stream is not None or "progress" not in self.parts:
            return
        self._stream = sys.stdout  # the line itself goes to the terminal
        for name in ("stdout", "stderr"):
            if is_tty(getattr(sys, name)):
                self._stand_ins[name] = _ClearsTheLine(getattr(sys, name), self)
                setattr(sys, name, self._stand_ins[name])

    def clear(self) -> None:
        """Blank the progress line and go back to its start (nothing when none is shown)."""
        if self._last_len:
            self._write("\r" + " " * self._last_len + "\r")
            self._last_len = 0

    def _give_back(self) -> None:
        for name, stand_in in self._stand_ins.items():
            if getattr(sys, name) is stand_in:  # not if someone has replaced it since
                setattr(sys, name, stand_in.stream)
        self._stand_ins = {}

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        try:
            super().finish(view, png, status, css_width)
        finally:
            self._give_back()

    def _rewrite(self, text: str, newline: bool = False) -> None:
        """Write over the live line: a live line is cut to the terminal's width (one that wraps cannot be rewritten
        in place), a permanent one (``newline``) is kept whole."""
        text, width = _fit(text, None if newline else max(20, shutil.get_terminal_size((100, 20)).columns - 1))
        self._write("\r" + text + " " * (self._last_len - width) + ("\n" if newline else ""))
        self._last_len = 0 if newline else width

    def _line(self, text: str) -> None:
        self._rewrite(text, newline=True)

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        if "progress" in self.parts:
            self._rewrite(self._progress_line(view, bar_width=20))

    def abort(self) -> None:
        try:
            if self._last_len:
                self._write("\n")
                self._last_len = 0
        finally:
            self._give_back()


class LogRenderer(_TextBase):
    """Plain lines for logs: every ``log_interval`` seconds, per epoch, and at the end."""

    def __init__(
        self, parts: frozenset[str], stream: TextIO | None = None, log_interval: float = 30.0, words: Words = ENGLISH
    ) -> None:
        super().__init__(parts, stream, words)
        if log_interval <= 0:
            raise ValueError(f"log_interval must be > 0, got {log_interval!r}")
        self.text_interval = float(log_interval)
        self._started = False
        self._last_line_at = 0.0

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        # The first update announces the run; no line before the rate is known (it would say "?").
        if "progress" not in self.parts:
            return
        if not self._started:
            self.event("start", view)
            return
        measured = view.eval_rate if (view.kind == "eval" or view.phase == "eval") else view.rate
        if measured is not None and view.elapsed - self._last_line_at >= self.text_interval:
            self._last_line_at = view.elapsed
            self._line(f"[{duration(view.elapsed)}] {self._progress_line(view)}")

    def event(self, kind: str, view: View) -> None:
        """A line at the start of the run, and one per epoch."""
        if kind != "start" or "progress" not in self.parts:
            super().event(kind, view)
        elif not self._started:
            self._started = True
            if view.kind == "eval":
                self._line(self.words("log_evaluation", steps=view.eval_steps or "?"))
            else:
                extra = self.words("log_with_validation") if view.validates else ""
                self._line(self.words("log_training", epochs=view.epochs, steps=view.steps_per_epoch) + extra)


def time_text(time: TimeFacts, words: Words = ENGLISH) -> str:
    """The bar in one line: ``where the time goes (wall time 12.31 s): train step 71.3 %, loop 20.1 %, ...``."""
    parts = words("list_separator").join(f"{seg.label} {share_percent(seg.share)}" for seg in time.segments)
    return words("time_text", wall=words("time_wall", time=short_seconds(time.wall_s)), parts=parts)


def compare_text(overlay: Overlay, view: View | None, words: Words = ENGLISH) -> list[str]:
    """The compared runs and their final metrics as text lines: a heading, then a table (with ``view``: the live
    run's row first); without earlier runs, a line that says so."""
    if not overlay.runs:
        return [words("compare_none")]
    header, rows, _colors = compare_table(overlay, view, words)
    lines = aligned([header, *rows])
    return [words("compare_text", count=len(overlay.runs)), *("  " + line for line in lines)]
