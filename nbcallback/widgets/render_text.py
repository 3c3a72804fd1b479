"""Text renderers: one ``\\r`` line on a terminal, plain log lines elsewhere.

* :class:`TTYRenderer` rewrites a single line (tqdm/Keras style) at most 4
  times per second, and leaves one permanent line per epoch, so the scrollback
  shows the history without every intermediate frame.
* :class:`LogRenderer` is for CI, redirected output and notebooks in ``'text'``
  mode: no ``\\r``, no backspaces, no escape codes; one line every
  ``log_interval`` seconds (30 by default), one per epoch and evaluation, and a
  summary with the metrics table at the end.  A 10-minute CI run writes a few
  dozen lines, not thousands (keras-team/keras#7523, #1007).

Both write to the stream given, or to ``sys.stdout`` as it is at the time of
writing (so pytest's capture and ``contextlib.redirect_stdout`` work).
"""
from __future__ import annotations

import shutil
import sys
from typing import Any, TextIO

from nbcallback.widgets import fmt
from nbcallback.widgets.state import View
from nbcallback.widgets.words import Words, words

__all__ = ["TTYRenderer", "LogRenderer", "NullRenderer"]


class NullRenderer:
    """Shows nothing (``display='off'`` and non-zero ranks)."""

    text_interval = 5.0

    def open(self, view: View, state: Any = None, status: bool = True) -> None:
        """Nothing to open."""

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        """Nothing to draw."""

    def event(self, kind: str, view: View) -> None:
        """Nothing to announce."""

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """Nothing to leave behind."""

    def abort(self) -> None:
        """Nothing to release."""


class _TextBase(NullRenderer):
    def __init__(self, parts: frozenset[str], stream: TextIO | None = None, w: Words = words) -> None:
        self.parts = parts
        self.w = w
        self._stream = stream
        self.saved_to: str | None = None

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def _write(self, text: str) -> None:
        stream = self.stream
        stream.write(text)
        stream.flush()

    def _progress_line(self, view: View, bar_width: int = 0) -> str:
        parts = fmt.progress_parts(view, self.w)
        if view.kind == "eval":
            head = self.w("eval")
        else:
            head = f"{parts['epoch']} {parts['phase']}"
        bar = ""
        if bar_width > 0:
            if view.kind == "eval" or view.phase == "eval":
                done, total = view.eval_step, view.eval_steps or 0
            else:
                done, total = view.step_in_epoch, view.steps_per_epoch
            bar = " |" + _bar(done, total, bar_width, getattr(self.stream, "encoding", None)) + "|"
        bits = [p for p in (parts["steps"], parts["time"], parts["rate"]) if p]
        tail = " ".join(p for p in (parts["loss"], parts["eta_total"]) if p)
        return f"{head}{bar} {' '.join(bits[:1])} [{', '.join(bits[1:])}]" + (f" {tail}" if tail else "")

    def _epoch_line(self, view: View) -> str:
        bits = [self.w("epoch_of", epoch=view.epoch, last=view.last_epoch if view.last_epoch is not None else "?")]
        if view.loss is not None:
            bits.append(self.w("loss_value", value=fmt.number(view.loss)))
        if view.rows and view.rows[-1].epoch == view.epoch:
            row = view.rows[-1]
            values = " ".join(f"{name} {fmt.metric(value)}" for name, value in row.values.items())
            bits.append(values + (" " + self.w("partial") if row.partial else ""))
        bits.append(fmt.duration(view.elapsed))
        return " · ".join(bits)

    def _final_lines(self, view: View, png: bytes | None) -> list[str]:
        if "progress" not in self.parts and "table" not in self.parts:
            # A plot-only callback: the progress callbacks print the summary.
            return [self.w("text_plot_saved", path=self.saved_to) if self.saved_to else self.w("text_plot_none")]
        lines = [fmt.run_summary(view, self.w)]
        if view.error:
            lines.append(view.error)
        if view.rows and "table" in self.parts:
            lines += fmt.text_table(view, w=self.w)
        return lines


def _bar(done: float, total: float, width: int, encoding: str | None = None) -> str:
    if total <= 0:
        return " " * width
    fraction = min(max(done / total, 0.0), 1.0)
    encoding = (encoding or "utf-8").lower()
    if "utf" in encoding:
        blocks = " ▏▎▍▌▋▊▉█"
        eighths = int(round(fraction * width * 8))
        full, rest = divmod(eighths, 8)
        return ("█" * full + (blocks[rest] if full < width and rest else "")).ljust(width)
    return ("#" * int(round(fraction * width))).ljust(width)


class TTYRenderer(_TextBase):
    """One line rewritten with ``\\r`` (at most 4 Hz), one permanent line per epoch.

    Args:
        parts: what the callback shows (``'progress'``, ``'table'``, ``'plot'``).
        stream: where to write (``sys.stdout`` at write time when None).
    """

    text_interval = 0.25

    def __init__(self, parts: frozenset[str], stream: TextIO | None = None, w: Words = words) -> None:
        super().__init__(parts, stream, w)
        self._last_len = 0

    def _rewrite(self, line: str, newline: bool = False) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        line = line[: max(20, width - 1)]
        pad = max(0, self._last_len - len(line))
        self._write("\r" + line + " " * pad + ("\n" if newline else ""))
        self._last_len = 0 if newline else len(line)

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        """Rewrite the progress line."""
        if "progress" in self.parts:
            self._rewrite(self._progress_line(view, bar_width=20))

    def event(self, kind: str, view: View) -> None:
        """Leave a permanent line at each epoch end."""
        if kind == "epoch_end" and "progress" in self.parts:
            self._rewrite(self._epoch_line(view), newline=True)

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """Replace the live line with the run summary (and the table)."""
        lines = self._final_lines(view, png)
        self._rewrite(lines[0], newline=True)
        if len(lines) > 1:
            self._write("\n".join(lines[1:]) + "\n")

    def abort(self) -> None:
        """End the live line so later output starts on a fresh line."""
        if self._last_len:
            self._write("\n")
            self._last_len = 0


class LogRenderer(_TextBase):
    """Plain lines for logs: every ``log_interval`` seconds, per epoch, and at the end.

    Args:
        parts: what the callback shows (``'progress'``, ``'table'``, ``'plot'``).
        stream: where to write (``sys.stdout`` at write time when None).
        log_interval: seconds between two progress lines within an epoch.
    """

    def __init__(
        self, parts: frozenset[str], stream: TextIO | None = None, log_interval: float = 30.0, w: Words = words
    ) -> None:
        super().__init__(parts, stream, w)
        if log_interval <= 0:
            raise ValueError(f"log_interval must be > 0, got {log_interval!r}")
        self.text_interval = float(log_interval)
        self._started = False
        self._last_line_at = 0.0

    def update(self, view: View, state: Any = None, status: bool = True) -> None:
        """A progress line, at most every ``log_interval`` seconds of the run.

        Forced refreshes (epoch ends) are covered by the epoch line, and a line
        before the rate is known would only say "?".
        """
        if "progress" not in self.parts:
            return
        if not self._started:
            self.event("start", view)
            return
        measured = view.eval_rate if (view.kind == "eval" or view.phase == "eval") else view.rate
        if measured is None or view.elapsed - self._last_line_at < self.text_interval:
            return
        self._last_line_at = view.elapsed
        self._write(f"[{fmt.duration(view.elapsed)}] " + self._progress_line(view) + "\n")

    def event(self, kind: str, view: View) -> None:
        """Lines for the start of the run and each epoch end."""
        if "progress" not in self.parts:
            return
        if kind == "start" and not self._started:
            self._started = True
            if view.kind == "eval":
                self._write(self.w("log_evaluation", steps=view.eval_steps or "?") + "\n")
            else:
                extra = self.w("log_with_validation") if view.validates else ""
                self._write(self.w("log_training", epochs=view.epochs, steps=view.steps_per_epoch) + extra + "\n")
        elif kind == "epoch_end":
            self._write(self._epoch_line(view) + "\n")

    def finish(self, view: View, png: bytes | None, status: bool = True, css_width: int | None = None) -> None:
        """The run summary, and the metrics table for progress/table callbacks."""
        self._write("\n".join(self._final_lines(view, png)) + "\n")
