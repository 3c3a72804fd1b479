"""Number and time formatting shared by the text, HTML and snapshot renderers.

Kept in one place so that a terminal line, the live widget and the saved
snapshot say the same thing in the same words.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from nbcallback.widgets.state import View
from nbcallback.widgets.words import Words, words

__all__ = [
    "duration",
    "rate",
    "number",
    "metric",
    "progress_parts",
    "run_summary",
    "row_cells",
    "table_header",
]


def duration(seconds: float | None) -> str:
    """``75.3 -> '01:15'``, ``3725 -> '1:02:05'``, ``None -> '?'``."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes:02d}:{secs:02d}"


def rate(per_second: float | None, unit: str = "it") -> str:
    """``512.3 -> '512 it/s'``, ``0.25 -> '4.00 s/it'``, ``32800 -> '32.8k it/s'``."""
    if per_second is None or not math.isfinite(per_second) or per_second <= 0:
        return f"? {unit}/s"
    if per_second < 1:
        return f"{1 / per_second:.2f} s/{unit}"
    if per_second >= 1e4:
        return f"{per_second / 1e3:.1f}k {unit}/s"
    if per_second >= 100:
        return f"{per_second:.0f} {unit}/s"
    return f"{per_second:.1f} {unit}/s"


def number(value: float | None, digits: int = 4) -> str:
    """A compact float: 4 significant digits, ``nan``/``inf`` spelled out, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e5:
        return f"{value:.{digits}g}"
    return f"{value:.{digits - 1}e}"


def metric(value: Any) -> str:
    """A metric value for a table cell: floats via :func:`number`, lists shortened."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return number(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, (list, tuple)):
        items = [metric(v) for v in value[:4]]
        more = ", …" if len(value) > 4 else ""
        return "[" + ", ".join(items) + more + "]"
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def progress_parts(view: View, w: Words = words) -> dict[str, str]:
    """The pieces every renderer shows, as strings.

    Keys: ``epoch`` ("epoch 2/5"), ``phase`` ("train"/"eval"), ``steps``
    ("312/938"), ``rate`` ("512 it/s · 32.8k samples/s"), ``time``
    ("00:12<00:40"), ``eta_total`` ("total ETA ~00:52" or ''), ``loss``
    ("loss 0.2345" or ''), ``lr`` ("lr 0.01" or '').
    """
    parts: dict[str, str] = {}
    running = view.status in ("starting", "running")
    if view.kind == "eval":
        parts["epoch"] = w("evaluation")
        parts["phase"] = w("eval")
        total = view.eval_steps if view.eval_steps is not None else "?"
        parts["steps"] = f"{view.eval_step}/{total}"
        parts["rate"] = rate(view.eval_rate)
        eta = view.eta_total
        parts["eta_total"] = ""
    else:
        last = view.last_epoch if view.last_epoch is not None else "?"
        epoch = view.epoch if view.epoch is not None else "-"
        parts["epoch"] = w("epoch_of", epoch=epoch, last=last)
        parts["phase"] = w(view.phase)
        if view.phase == "eval":
            total = view.eval_steps if view.eval_steps is not None else "?"
            parts["steps"] = f"{view.eval_step}/{total}"
            parts["rate"] = rate(view.eval_rate)
        else:
            parts["steps"] = f"{view.step_in_epoch}/{view.steps_per_epoch}"
            text = rate(view.rate)
            if view.samples_rate is not None:
                text += " · " + rate(view.samples_rate, w("samples"))
            parts["rate"] = text
        eta = view.eta_train
        if running and view.eta_total is not None and view.eta_total != view.eta_train:
            parts["eta_total"] = w("total_eta", eta=("~" if view.eta_total_estimated else "") + duration(view.eta_total))
        else:
            parts["eta_total"] = ""
    # An ended run has no time left to predict.
    parts["time"] = f"{duration(view.elapsed)}<{duration(eta)}" if running else duration(view.elapsed)
    parts["loss"] = w("loss_value", value=number(view.loss)) if view.loss is not None else ""
    parts["lr"] = w("lr_value", value=number(view.lr, 3)) if view.lr is not None else ""
    return parts


def run_summary(view: View, w: Words = words) -> str:
    """One line about a finished (or running) run, for text/plain and logs."""
    status = w.say(view.status_text)
    if view.kind == "train":
        bits = [w("summary_train", status=status, epochs_done=view.epochs_done, epochs=view.epochs,
                  steps_done=view.steps_done, total_steps=view.total_steps, elapsed=duration(view.elapsed))]
        if view.elapsed > 0 and view.steps_done:
            bits.append(rate(view.steps_done / view.elapsed))
    else:
        total = view.eval_steps if view.eval_steps is not None else "?"
        bits = [w("summary_eval", status=status, steps=f"{view.eval_step}/{total}", elapsed=duration(view.elapsed))]
    if view.loss is not None:
        bits.append(w("summary_loss", value=number(view.loss)))
    return (", " if w.lang == "en" else "，").join(bits)


def table_header(view: View, w: Words = words) -> list[str]:
    """Column titles of the metrics table."""
    head = [w("col_epoch"), w("col_step")] if view.kind == "train" else []
    return head + list(view.columns) + [w("col_time")]


def row_cells(view: View, row: Any, w: Words = words) -> list[str]:
    """The cells of one :class:`~nbcallback.widgets.state.EvalRow`, matching :func:`table_header`."""
    cells: list[str] = []
    if view.kind == "train":
        cells.append("-" if row.epoch is None else str(row.epoch) + (" " + w("partial") if row.partial else ""))
        cells.append("-" if row.step is None else str(row.step))
    for name in view.columns:
        cells.append(metric(row.values[name]) if name in row.values else "")
    cells.append(duration(row.elapsed))
    return cells


def text_table(view: View, rows: Sequence[Any] | None = None, w: Words = words) -> list[str]:
    """The metrics table as aligned plain-text lines (header first)."""
    header = table_header(view, w)
    body = [row_cells(view, row, w) for row in (view.rows if rows is None else rows)]
    if view.rows_omitted:
        body.insert(view.omitted_after, [w("rows_omitted", count=view.rows_omitted)] + [""] * (len(header) - 1))
    widths = [len(h) for h in header]
    for cells in body:
        for i, cell in enumerate(cells):
            if not (view.rows_omitted and cells[0].startswith("…")):
                widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    for cells in body:
        if cells[0].startswith("…"):
            lines.append(cells[0])
        else:
            lines.append("  ".join(c.rjust(w) for c, w in zip(cells, widths)))
    return lines
