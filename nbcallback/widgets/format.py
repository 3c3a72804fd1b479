"""The picture of a run as words and numbers, for every output (terminal line, log, widget, snapshot): pure
functions of a :class:`~nbcallback.widgets.state.View`, no I/O.  The renderers (``render_text.py``,
``render_html.py``) only lay these out.
"""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Sequence

from nbcallback.widgets.state import View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["share_percent", "short_seconds", "duration", "rate", "number", "metric", "shown_loss", "progress_parts", "run_summary", "table",
           "text_table", "display_width", "bars", "status_line", "lr_note", "is_numeric_cell", "MARKS"]

#: The mark before a final status.
MARKS = {"finished": "✔", "stopped": "■", "error": "✖", "interrupted": "✖"}
_NUMERIC = re.compile(r"^[-+]?[\d.,:]+(e[-+]?\d+)?%?$", re.IGNORECASE)


def duration(seconds: float | None) -> str:
    """``75.3 -> '01:15'``, ``3725 -> '1:02:05'``, ``None -> '?'``."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(max(0, int(round(seconds))), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def rate(per_second: float | None, unit: str = "it") -> str:
    """``512.3 -> '512 it/s'``, ``0.25 -> '4.00 s/it'``, ``32800 -> '32.8k it/s'``."""
    if per_second is None or not math.isfinite(per_second) or per_second <= 0:
        return f"? {unit}/s"
    if per_second < 1:
        return f"{1 / per_second:.2f} s/{unit}"
    if per_second >= 1e4:
        return f"{per_second / 1e3:.1f}k {unit}/s"
    return f"{per_second:.0f} {unit}/s" if per_second >= 100 else f"{per_second:.1f} {unit}/s"


def number(value: float | None, digits: int = 4) -> str:
    """A compact float: ``digits`` significant digits, ``nan``/``inf`` spelled out, None as '-'."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    return f"{value:.{digits}g}" if 1e-3 <= abs(value) < 1e5 else f"{value:.{digits - 1}e}"


def metric(value: Any) -> str:
    """A metric value for a table cell: floats via :func:`number`, lists and long text shortened."""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(metric(v) for v in value[:4]) + (", …" if len(value) > 4 else "") + "]"
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def shown_loss(view: View) -> float | None:
    """The smoothed loss, or the last step's when that is NaN or infinite: the average leaves such steps out, and
    a run whose loss has blown up must say so."""
    last = view.last_loss
    return last if last is not None and not math.isfinite(last) else view.loss


def progress_parts(view: View, words: Words = ENGLISH) -> dict[str, str]:
    """The pieces every renderer shows: ``epoch``, ``phase``, ``steps``, ``rate``, ``time``,
    ``eta_total``, ``loss`` and ``lr`` (the last three may be '')."""
    running, loss = view.status in ("starting", "running"), shown_loss(view)
    if view.kind == "eval" or view.phase == "eval":
        steps = f"{view.eval_step}/{'?' if view.eval_steps is None else view.eval_steps}"
        speed = rate(view.eval_rate)
    else:
        steps = f"{view.step_in_epoch}/{view.steps_per_epoch}"
        speed = rate(view.rate)
        if view.samples_rate is not None:
            speed += " · " + rate(view.samples_rate, words("samples"))
    eta_total = ""
    if view.kind == "eval":
        epoch, phase, eta = words("evaluation"), words("eval"), view.eta_total
    else:
        last = "?" if view.last_epoch is None else view.last_epoch
        epoch = words("epoch_of", epoch="-" if view.epoch is None else view.epoch, last=last)
        phase, eta = words(view.phase), view.eta_train
        if running and view.eta_total is not None and view.eta_total != view.eta_train:
            eta_total = words("total_eta", eta=("~" if view.eta_total_estimated else "") + duration(view.eta_total))
    return {
        "epoch": epoch,
        "phase": phase,
        "steps": steps,
        "rate": speed,
        # An ended run has no time left to predict.
        "time": f"{duration(view.elapsed)}<{duration(eta)}" if running else duration(view.elapsed),
        "eta_total": eta_total,
        "loss": "" if loss is None else words("loss_value", value=number(loss)),
        "lr": "" if view.lr is None else words("lr_value", value=number(view.lr, 3)),
    }


def run_summary(view: View, words: Words = ENGLISH) -> str:
    """One line about the run, for ``text/plain`` and logs."""
    status, elapsed = words.say(view.status_text), duration(view.elapsed)
    if view.kind == "train":
        bits = [words("summary_train", status=status, epochs_done=view.epochs_done, epochs=view.epochs,
                      steps_done=view.steps_done, total_steps=view.total_steps, elapsed=elapsed)]
        if view.elapsed > 0 and view.steps_done:
            bits.append(rate(view.steps_done / view.elapsed))
    else:
        total = "?" if view.eval_steps is None else view.eval_steps
        bits = [words("summary_eval", status=status, steps=f"{view.eval_step}/{total}", elapsed=elapsed)]
    loss = shown_loss(view)
    if loss is not None:
        bits.append(words("summary_loss", value=number(loss)))
    return words("list_separator").join(bits)


def table(view: View, words: Words = ENGLISH) -> tuple[list[str], list[list[str]]]:
    """The metrics table: its header and rows; the "rows omitted" line (in the middle of a capped table) is a row
    of one cell."""
    train = view.kind == "train"
    header = ([words("col_epoch"), words("col_step")] if train else []) + list(view.columns) + [words("col_time")]
    rows = []
    for row in view.rows:
        cells = [metric(row.values[name]) if name in row.values else "" for name in view.columns]
        if train:
            epoch = "-" if row.epoch is None else str(row.epoch) + (" " + words("partial") if row.partial else "")
            cells = [epoch, "-" if row.step is None else str(row.step)] + cells
        rows.append(cells + [duration(row.elapsed)])
    if view.rows_omitted:
        rows.insert(view.omitted_after, [words("rows_omitted", count=view.rows_omitted)])
    return header, rows


def display_width(text: str) -> int:
    """The terminal columns ``text`` takes: two for each wide character (Chinese), one for the others."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """``table``'s rows as text lines in terminal columns (a Chinese cell takes two a character): the first column
    left-aligned (names), the others right-aligned (numbers), two spaces between."""
    widths = [max(display_width(row[j]) for row in table) for j in range(len(table[0]))] if table else []

    def pad(text: str, j: int) -> str:
        room = " " * (widths[j] - display_width(text))
        return text + room if j == 0 else room + text

    return ["  ".join(pad(cell, j) for j, cell in enumerate(row)).rstrip() for row in table]


def text_table(view: View, words: Words = ENGLISH) -> list[str]:
    """The metrics table as right-aligned plain-text lines, the header first (aligned in terminal columns, so a
    Chinese header lines up with its numbers)."""
    header, rows = table(view, words)
    full = [row for row in rows if len(row) == len(header)]  # not the "rows omitted" line
    widths = [max(display_width(text) for text in column) for column in zip(header, *full)]
    lines = []
    for row in [header] + rows:
        aligned = len(row) == len(header)
        cells = (" " * (width - display_width(text)) + text for text, width in zip(row, widths))
        lines.append("  ".join(cells) if aligned else row[0])
    return lines


def _bar(kind: str, label: str, value: float, maximum: float, *tail: str) -> dict[str, Any]:
    maximum = max(float(maximum), 1e-12)
    value = min(max(float(value), 0.0), maximum)
    text = " · ".join([f"{100.0 * value / maximum:.0f}%"] + [t for t in tail if t])
    return {"kind": kind, "label": label, "value": value, "max": maximum, "text": text}


def bars(view: View, words: Words = ENGLISH) -> list[dict[str, Any]]:
    """The progress bars: ``kind`` (``epoch``, ``train``, ``eval``), ``label``, ``value``, ``max`` and ``text``."""
    parts = progress_parts(view, words)
    steps, speed, time = parts["steps"], parts["rate"], parts["time"]
    eval_total = view.eval_steps or max(view.eval_step, 1)
    if view.kind == "eval":
        return [_bar("eval", words("evaluation"), view.eval_step, eval_total, steps, speed, time)]
    spe = max(view.steps_per_epoch, 1)
    # The epoch bar includes the current epoch's share, so a stop mid-epoch reads the same on both bars.
    partial = view.step_in_epoch / spe if view.epochs_done < view.epochs and view.step_in_epoch < spe else 0.0
    epoch = _bar("epoch", parts["epoch"], view.epochs_done + partial, max(view.epochs, 1),
                 parts["eta_total"], parts["loss"], parts["lr"])
    if view.phase == "eval":
        return [epoch, _bar("eval", words("eval"), view.eval_step, eval_total, steps, speed)]
    return [epoch, _bar("train", words("train"), view.step_in_epoch, spe, steps, speed, time)]


def lr_note(view: View, words: Words = ENGLISH) -> str:
    if not view.lr_changes:
        return ""
    step, lr = view.lr_changes[-1]
    return words("lr_set", lr=number(lr, 3), step=step)


def is_numeric_cell(text: str) -> bool:
    """Whether a table cell holds a number or a time (right-aligned)."""
    return bool(_NUMERIC.match(str(text).strip()))


def status_line(view: View, words: Words = ENGLISH) -> dict[str, str]:
    """The status line: ``state`` (the run's status), ``text`` (with its mark) and ``note`` (the last lr change)."""
    text = words.say(view.status_text)
    if view.status == "running" and view.phase == "eval" and view.kind == "train":
        text = words("running_validation")
    text = (MARKS.get(view.status, "") + " " + text).strip()
    return {"state": view.status, "text": text, "note": lr_note(view, words)}


def share_percent(share: float) -> str:
    """``0.713 -> '71.3 %'``, ``0.0004 -> '0.04 %'`` (a small part still shows a number), ``0.00001 -> '< 0.01 %'``,
    ``0 -> '0 %'``."""
    value = 100 * share
    if value == 0:
        return "0 %"
    if value < 0.01:
        return "< 0.01 %"
    return f"{value:.1f} %" if value >= 0.1 else f"{value:.2f} %"


def short_seconds(seconds: float) -> str:
    """``1.5 -> '1.50 s'``, ``0.0123 -> '12.3 ms'``."""
    return f"{seconds:.2f} s" if seconds >= 1 else f"{1e3 * seconds:.1f} ms"
