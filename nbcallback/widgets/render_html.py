"""What the notebook shows, as data (for the live widget) and as static HTML (for the saved notebook).

:func:`payload` turns a :class:`~nbcallback.widgets.state.View` into the
``view`` dict the front end draws (bars, status, table, hint: every word is
formatted here, so the browser only lays it out).  The end-of-run snapshot is
the same payload as HTML (:func:`snapshot_bundle`), and the final plot is its
own ``image/png`` output (:func:`plot_bundle`): GitHub's notebook viewer drops
data-URI images inside HTML, while every viewer shows an ``image/png``.

The snapshot uses inline styles only (saved outputs must look right without a
stylesheet), colours from JupyterLab / VS Code CSS variables with fallbacks,
and escapes every user-controlled string.
"""
from __future__ import annotations

import base64
import dataclasses
import html
from typing import Any

from nbcallback.widgets import fmt
from nbcallback.widgets.state import View
from nbcallback.widgets.words import Words, words

__all__ = ["payload", "snapshot_html", "snapshot_text", "snapshot_bundle", "plot_bundle"]

_FONT = (
    "font-family:var(--jp-ui-font-family,var(--vscode-font-family,system-ui,sans-serif));"
    "font-size:13px;line-height:1.6;color:var(--jp-ui-font-color1,var(--vscode-foreground,inherit))"
)
_COLORS = {
    "epoch": "var(--jp-brand-color1,#1976d2)",
    "train": "var(--jp-brand-color1,#1976d2)",
    "eval": "var(--jp-warn-color1,#e65100)",
    "finished": "var(--jp-success-color1,#2e7d32)",
    "stopped": "var(--jp-warn-color1,#e65100)",
    "error": "var(--jp-error-color1,#c62828)",
    "interrupted": "var(--jp-error-color1,#c62828)",
}
_MARKS = {"finished": "✔", "stopped": "■", "error": "✖", "interrupted": "✖"}


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _bar(kind: str, label: str, value: float, maximum: float, tail: str) -> dict[str, Any]:
    maximum = max(float(maximum), 1e-12)
    value = min(max(float(value), 0.0), maximum)
    percent = f"{100.0 * value / maximum:3.0f}%".strip()
    return {"kind": kind, "label": label, "value": value, "max": maximum,
            "text": " · ".join(p for p in (percent, tail) if p)}


def _bars(view: View, w: Words) -> list[dict[str, Any]]:
    parts = fmt.progress_parts(view, w)
    if view.kind == "eval":
        total = view.eval_steps or max(view.eval_step, 1)
        tail = " · ".join(p for p in (parts["steps"], parts["rate"], parts["time"]) if p)
        return [_bar("eval", w("evaluation"), view.eval_step, total, tail)]
    spe = max(view.steps_per_epoch, 1)
    # The epoch bar includes the current epoch's share, so a stop mid-epoch reads the same on both bars.
    partial = view.step_in_epoch / spe if view.epochs_done < view.epochs and view.step_in_epoch < spe else 0.0
    epoch_tail = " · ".join(p for p in (parts["eta_total"], parts["loss"], parts["lr"]) if p)
    bars = [_bar("epoch", parts["epoch"], view.epochs_done + partial, max(view.epochs, 1), epoch_tail)]
    if view.phase == "eval":
        total = view.eval_steps or max(view.eval_step, 1)
        bars.append(_bar("eval", w("eval"), view.eval_step, total, " · ".join((parts["steps"], parts["rate"]))))
    else:
        tail = " · ".join(p for p in (parts["steps"], parts["rate"], parts["time"]) if p)
        bars.append(_bar("train", w("train"), view.step_in_epoch, spe, tail))
    return bars


def _lr_note(view: View, w: Words) -> str:
    if not view.lr_changes:
        return ""
    step, lr = view.lr_changes[-1]
    return w("lr_set", lr=fmt.number(lr, 3), step=step)


def _status(view: View, w: Words) -> dict[str, str]:
    text = w.say(view.status_text)
    if view.status == "running" and view.phase == "eval" and view.kind == "train":
        text = w("running_validation")
    note = _lr_note(view, w)
    return {"state": view.status, "text": (_MARKS.get(view.status, "") + " " + text).strip(), "note": note}


def _table(view: View, w: Words) -> dict[str, Any] | None:
    if not view.rows:
        return None
    rows = [fmt.row_cells(view, row, w) for row in view.rows]
    if view.rows_omitted:
        rows.insert(view.omitted_after, [w("rows_omitted", count=view.rows_omitted)])
    caption = ""
    if view.rows_total > len(view.rows) + view.rows_omitted:
        caption = w("last_rows", shown=len(view.rows), total=view.rows_total)
    return {"header": fmt.table_header(view, w), "rows": rows, "caption": caption}


def payload(
    view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, w: Words = words
) -> dict[str, Any]:
    """The front end's ``view`` dict (without series): ``status``, ``bars``, ``table``, ``hint``.

    Args:
        view: the run's state.
        parts: what this callback shows (``progress``, ``table``, ``plot``, ``controls``).
        hint: a short line on how to stop (shown once, small).
        status: False leaves the status out (a plot beside a progress bar: one status line).
        w: the message table (the language).
    """
    shown = parts & {"progress", "table"}
    return {
        "status": _status(view, w) if status else None,
        "bars": _bars(view, w) if "progress" in shown else [],
        "table": _table(view, w) if shown else None,
        "hint": hint,
    }


_CELL = "padding:2px 8px"


def _bar_html(bar: dict[str, Any]) -> str:
    color = _COLORS[bar["kind"]]
    width = 100.0 * bar["value"] / bar["max"]
    return (
        f'<div><span style="display:inline-block;min-width:7.5em;color:{color}">{_esc(bar["label"])}</span>'
        '<span style="display:inline-block;width:18em;height:.6em;vertical-align:middle;border-radius:3px;'
        f'background:var(--jp-layout-color3,#ddd)"><span style="display:block;height:100%;width:{width:.1f}%;'
        f'border-radius:3px;background:{color}"></span></span> {_esc(bar["text"])}</div>'
    )


def _table_html(table: dict[str, Any]) -> str:
    # Inline padding: marimo's and some viewers' CSS ignore ``cellpadding`` and run the columns together.
    head = "".join(f'<th style="{_CELL}">{_esc(h)}</th>' for h in table["header"])
    body = []
    for cells in table["rows"]:
        if len(cells) == 1:
            body.append(f'<tr><td colspan="{len(table["header"])}" style="text-align:center">{_esc(cells[0])}</td></tr>')
        else:
            body.append("<tr>" + "".join(f'<td style="{_CELL}">{_esc(c)}</td>' for c in cells) + "</tr>")
    caption = ""
    if table["caption"]:
        caption = f'<caption style="caption-side:bottom;opacity:.7;text-align:left">{_esc(table["caption"])}</caption>'
    return (
        '<table style="border-collapse:collapse;text-align:right;margin-top:4px;font-variant-numeric:tabular-nums">'
        f'{caption}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def snapshot_html(view: View, parts: frozenset[str], *, status: bool = True, w: Words = words) -> str:
    """The final static HTML: bars, status, error and the whole (capped) table, then a summary line."""
    data = payload(view, parts | ({"table"} if "progress" in parts else set()), status=status, w=w)
    blocks = [_bar_html(bar) for bar in data["bars"]]
    if data["status"] is not None:
        state = data["status"]
        line = f'<span style="color:{_COLORS.get(state["state"], "inherit")};font-weight:600">{_esc(state["text"])}</span>'
        if state["note"]:
            line += f" · {_esc(state['note'])}"
        blocks.append(f"<div>{line}</div>")
        if view.error:
            blocks.append(f'<div style="color:{_COLORS["error"]}">{_esc(view.error)}</div>')
    if data["table"] is not None:
        blocks.append(_table_html(data["table"]))
    if data["status"] is not None:
        blocks.append(f'<div style="opacity:.7;font-size:12px">{_esc(fmt.run_summary(view, w))}</div>')
    return f'<div class="nbc-snapshot" style="{_FONT}">{"".join(blocks)}</div>'


def snapshot_text(
    view: View, parts: frozenset[str], has_plot: bool = False, max_rows: int = 10, w: Words = words
) -> str:
    """The snapshot's ``text/plain``: a summary line, the progress line and the last rows.

    This is what terminals, nbval and viewers without HTML show, so it must
    say what happened on its own (tqdm saves its bar as it was at display time:
    usually 0 %).
    """
    lines = [fmt.run_summary(view, w)]
    if view.error:
        lines.append(view.error)
    if view.lr_changes:
        lines.append(_lr_note(view, w))
    if view.rows and ("table" in parts or "progress" in parts or "plot" in parts):
        rows = view.rows[-max_rows:]
        shown = dataclasses.replace(view, rows=tuple(rows), rows_omitted=0, omitted_after=0)
        lines += fmt.text_table(shown, w=w)
        if view.rows_total > len(rows):
            lines.append(w("last_rows_text", shown=len(rows), total=view.rows_total))
    if has_plot:
        lines.append(w("plot_below"))
    return "\n".join(lines)


def snapshot_bundle(
    view: View, parts: frozenset[str], has_plot: bool = False, *, status: bool = True, w: Words = words
) -> dict[str, str]:
    """The mime bundle that replaces the live view at the end of a run (the plot comes separately)."""
    return {"text/html": snapshot_html(view, parts, status=status, w=w),
            "text/plain": snapshot_text(view, parts, has_plot, w=w)}


def plot_bundle(
    view: View, png: bytes | None, css_width: int | None = None, w: Words = words
) -> tuple[dict[str, str], dict[str, Any]]:
    """The plot's own output at the end of a run, and its metadata (the PNG's CSS width: it has 2x pixels)."""
    if not png:
        if view.kind == "eval":
            text = w("no_plot_eval")
        elif not view.steps_done and not view.rows:
            text = w("no_plot_steps")
        else:
            text = w("no_plot_failed")
        return {"text/plain": text}, {}
    metadata = {"image/png": {"width": css_width}} if css_width else {}
    return {
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": w("plot_alt", summary=fmt.run_summary(view, w)),
    }, metadata
