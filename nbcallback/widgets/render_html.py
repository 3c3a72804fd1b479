"""HTML for the live widget view and for the static end-of-run snapshot.

Small and self-contained on purpose:

* ``<progress>`` elements instead of nested ``div`` bars: a few bytes each,
  drawn natively in every front end and theme, and the text next to each bar
  ("312/938") keeps the information where a sanitiser strips the element.
* Only inline styles: the HTML widget's value and a saved notebook's output
  must look right on their own, without a stylesheet (GitHub and nbviewer
  drop ``<style>`` blocks in some paths).  Colours come from JupyterLab /
  VS Code CSS variables with fallbacks, so dark themes work (tqdm/tqdm#1457,
  Lightning-AI/pytorch-lightning#8447).
* Every user-controlled string (metric names, error messages) is escaped.
* The live view shows only the last few table rows, so the bytes per refresh
  do not grow with the number of epochs (Hugging Face's tracker re-sends its
  whole growing table every update).
* The final plot is its own ``image/png`` output (:func:`plot_bundle`), not a
  data-URI ``<img>`` inside the HTML: GitHub's notebook viewer drops data-URI
  images in HTML outputs (activeviam/atoti-notebooks#425), while every viewer
  shows an ``image/png`` output.
"""
from __future__ import annotations

import base64
import dataclasses
import html
from typing import Iterable

from nbcallback.widgets import fmt
from nbcallback.widgets.state import View

__all__ = ["live_html", "snapshot_html", "snapshot_text", "snapshot_bundle", "plot_bundle", "PLOT_PENDING"]

_FONT = (
    "font-family:var(--jp-ui-font-family,var(--vscode-font-family,system-ui,sans-serif));"
    "font-size:12.5px;line-height:1.55;color:var(--jp-ui-font-color1,var(--vscode-foreground,inherit))"
)
_TRAIN_COLOR = "var(--jp-brand-color1,#1976d2)"
_EVAL_COLOR = "var(--jp-warn-color1,#e68a00)"
_STATUS_COLORS = {
    "finished": "var(--jp-success-color1,#2e7d32)",
    "stopped": "var(--jp-warn-color1,#e68a00)",
    "error": "var(--jp-error-color1,#d32f2f)",
    "interrupted": "var(--jp-error-color1,#d32f2f)",
}
_STATUS_MARKS = {"finished": "✔", "stopped": "■", "error": "✖", "interrupted": "✖"}

PARTS = frozenset({"progress", "table", "plot", "controls"})
_LIVE_TABLE = "border-collapse:separate;border-spacing:12px 0;margin-left:-12px"


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _bar(label: str, value: float, maximum: float, right: str, color: str) -> str:
    maximum = max(maximum, 1e-12)
    value = min(max(value, 0.0), maximum)
    percent = 100.0 * value / maximum
    return (
        f'<div><span style="display:inline-block;min-width:7.5em;color:{color}">{_esc(label)}</span>'
        f'<progress value="{value:g}" max="{maximum:g}" '
        f'style="width:18em;height:0.9em;vertical-align:middle;accent-color:{color}"></progress> '
        f"{percent:3.0f}% {right}</div>"
    )


def _progress_block(view: View) -> str:
    parts = fmt.progress_parts(view)
    out = []
    if view.kind == "eval":
        total = view.eval_steps or max(view.eval_step, 1)
        tail = " · ".join(p for p in (parts["steps"], parts["rate"], parts["time"]) if p)
        out.append(_bar("evaluation", view.eval_step, total, _esc(tail), _EVAL_COLOR))
        return "".join(out)
    epochs = max(view.epochs, 1)
    epoch_tail = " · ".join(p for p in (parts["eta_total"], parts["loss"], parts["lr"]) if p)
    out.append(_bar(parts["epoch"], view.epochs_done, epochs, _esc(epoch_tail), _TRAIN_COLOR))
    if view.phase == "eval":
        total = view.eval_steps or max(view.eval_step, 1)
        tail = " · ".join((parts["steps"], parts["rate"]))
        out.append(_bar("eval", view.eval_step, total, _esc(tail), _EVAL_COLOR))
    else:
        tail = " · ".join(p for p in (parts["steps"], parts["rate"], parts["time"]) if p)
        out.append(_bar("train", view.step_in_epoch, max(view.steps_per_epoch, 1), _esc(tail), _TRAIN_COLOR))
    return "".join(out)


def _status_line(view: View, hint: str = "") -> str:
    color = _STATUS_COLORS.get(view.status, "inherit")
    mark = _STATUS_MARKS.get(view.status, "")
    text = view.status_text
    if view.status == "running" and view.phase == "eval" and view.kind == "train":
        text = "running (validation)"
    line = f'<span style="color:{color};font-weight:600">{_esc((mark + " " + text).strip())}</span>'
    if view.lr_changes:
        step, lr = view.lr_changes[-1]
        line += f" · lr set to {_esc(fmt.number(lr, 3))} at step {step}"
    if hint:
        line += f' <span style="opacity:.65">· {_esc(hint)}</span>'
    return f"<div>{line}</div>"


def _table(view: View, rows: Iterable[object] | None = None, live: bool = False) -> str:
    header = fmt.table_header(view)
    chosen = list(view.rows if rows is None else rows)
    if not chosen:
        return ""
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = []
    for index, row in enumerate(chosen):
        if view.rows_omitted and index == view.omitted_after:
            body.append(f'<tr><td colspan="{len(header)}" style="text-align:center">… {view.rows_omitted} rows omitted …</td></tr>')
        body.append("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in fmt.row_cells(view, row)) + "</tr>")
    caption = ""
    if view.rows_total > len(chosen) + view.rows_omitted:
        caption = f'<caption style="caption-side:bottom;opacity:.65;text-align:left">last {len(chosen)} of {view.rows_total} evaluations</caption>'
    return (
        # The live HTML widget gets no table styles from the front end (its cells would touch),
        # so it spaces the columns itself; a rendered output uses the front end's table style.
        f'<table style="{_LIVE_TABLE if live else "border-collapse:collapse"};text-align:right;margin-top:4px;'
        'font-variant-numeric:tabular-nums" '
        f'cellpadding="2">{caption}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def live_html(view: View, parts: frozenset[str], hint: str = "") -> str:
    """The HTML widget's value while the run is live (progress, status, last rows)."""
    blocks = []
    if "progress" in parts:
        blocks.append(_progress_block(view))
    blocks.append(_status_line(view, hint))
    if "table" in parts:
        blocks.append(_table(view, live=True))
    return f'<div style="{_FONT}">{"".join(blocks)}</div>'


def snapshot_html(view: View, parts: frozenset[str]) -> str:
    """The final static HTML: bars, status and the whole (capped) table; the plot is :func:`plot_bundle`."""
    blocks = []
    if "progress" in parts or "table" in parts:
        blocks.append(_progress_block(view))
    blocks.append(_status_line(view))
    if view.error:
        blocks.append(f'<div style="color:{_STATUS_COLORS["error"]}">{_esc(view.error)}</div>')
    if "table" in parts or "progress" in parts:
        blocks.append(_table(view))
    blocks.append(f'<div style="opacity:.6;font-size:11px">{_esc(fmt.run_summary(view))}</div>')
    return f'<div style="{_FONT}">{"".join(blocks)}</div>'


def snapshot_text(view: View, parts: frozenset[str], has_plot: bool = False, max_rows: int = 10) -> str:
    """The snapshot's ``text/plain``: a summary line, the progress line and the last rows.

    This is what terminals, nbval and viewers without HTML show, so it must
    say what happened on its own (tqdm saves its bar as it was at display time:
    usually 0 %).
    """
    lines = [fmt.run_summary(view)]
    if view.error:
        lines.append(view.error)
    if view.lr_changes:
        step, lr = view.lr_changes[-1]
        lines.append(f"lr set to {fmt.number(lr, 3)} at step {step}")
    if view.rows and ("table" in parts or "progress" in parts or "plot" in parts):
        rows = view.rows[-max_rows:]
        shown = dataclasses.replace(view, rows=tuple(rows), rows_omitted=0, omitted_after=0)
        lines += fmt.text_table(shown)
        if view.rows_total > len(rows):
            lines.append(f"(last {len(rows)} of {view.rows_total} evaluations)")
    if has_plot:
        lines.append("(loss plot: the PNG output below)")
    return "\n".join(lines)


def snapshot_bundle(view: View, parts: frozenset[str], has_plot: bool = False) -> dict[str, str]:
    """The mime bundle that replaces the live view at the end of a run (the plot comes separately)."""
    return {"text/html": snapshot_html(view, parts), "text/plain": snapshot_text(view, parts, has_plot)}


#: The ``text/plain`` of the plot's output slot before the final frame exists (static display modes).
PLOT_PENDING = "(loss plot: drawn here when the run ends)"


def plot_bundle(view: View, png: bytes | None) -> dict[str, str]:
    """The plot's own output at the end of a run: the final PNG, or a line saying why there is none."""
    if not png:
        if view.kind == "eval":
            return {"text/plain": "(no loss plot: an evaluation run has no training curve)"}
        if not view.steps_done and not view.rows:
            return {"text/plain": "(no loss plot: no training step was recorded)"}
        return {"text/plain": "(no loss plot: it could not be drawn, see the warning above)"}
    return {
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": f"<loss plot, PNG: {fmt.run_summary(view)}>",
    }
