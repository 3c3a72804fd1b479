"""What the notebook shows: :func:`payload`, the live widget's ``view`` with every word formatted; the same as
the static snapshot left at the end (:func:`snapshot_bundle`: escaped, inline-styled HTML and ``text/plain``); the
final PNG as its own ``image/png`` output (:func:`plot_bundle`: GitHub's viewer drops data-URI images in HTML).
"""
from __future__ import annotations

import base64
import dataclasses
from html import escape
from typing import Any

from nbcallback.widgets.render_text import number, progress_parts, run_summary, table, text_table
from nbcallback.widgets.state import View
from nbcallback.widgets.words import Words, words

__all__ = ["payload", "snapshot_bundle", "plot_bundle"]

_FONT = (
    "font-family:var(--jp-ui-font-family,var(--vscode-font-family,system-ui,sans-serif));"
    "font-size:13px;line-height:1.6;color:var(--jp-ui-font-color1,var(--vscode-foreground,inherit))"
)
_BLUE, _ORANGE = "var(--jp-brand-color1,#1976d2)", "var(--jp-warn-color1,#e65100)"
_GREEN, _RED = "var(--jp-success-color1,#2e7d32)", "var(--jp-error-color1,#c62828)"
_COLORS = {"epoch": _BLUE, "train": _BLUE, "eval": _ORANGE, "finished": _GREEN, "stopped": _ORANGE,
           "error": _RED, "interrupted": _RED}
_MARKS = {"finished": "✔", "stopped": "■", "error": "✖", "interrupted": "✖"}
_CELL = "padding:2px 8px"  # inline: marimo's and some viewers' CSS ignore ``cellpadding``


def _bar(kind: str, label: str, value: float, maximum: float, *tail: str) -> dict[str, Any]:
    maximum = max(float(maximum), 1e-12)
    value = min(max(float(value), 0.0), maximum)
    text = " · ".join([f"{100.0 * value / maximum:.0f}%"] + [t for t in tail if t])
    return {"kind": kind, "label": label, "value": value, "max": maximum, "text": text}


def _bars(view: View, w: Words) -> list[dict[str, Any]]:
    parts = progress_parts(view, w)
    steps, speed, time = parts["steps"], parts["rate"], parts["time"]
    eval_total = view.eval_steps or max(view.eval_step, 1)
    if view.kind == "eval":
        return [_bar("eval", w("evaluation"), view.eval_step, eval_total, steps, speed, time)]
    spe = max(view.steps_per_epoch, 1)
    # The epoch bar includes the current epoch's share, so a stop mid-epoch reads the same on both bars.
    partial = view.step_in_epoch / spe if view.epochs_done < view.epochs and view.step_in_epoch < spe else 0.0
    epoch = _bar("epoch", parts["epoch"], view.epochs_done + partial, max(view.epochs, 1),
                 parts["eta_total"], parts["loss"], parts["lr"])
    if view.phase == "eval":
        return [epoch, _bar("eval", w("eval"), view.eval_step, eval_total, steps, speed)]
    return [epoch, _bar("train", w("train"), view.step_in_epoch, spe, steps, speed, time)]


def _lr_note(view: View, w: Words) -> str:
    if not view.lr_changes:
        return ""
    step, lr = view.lr_changes[-1]
    return w("lr_set", lr=number(lr, 3), step=step)


def payload(
    view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, w: Words = words
) -> dict[str, Any]:
    """The front end's ``view`` dict (without series): ``status`` (None: left to another callback beside this
    one), ``bars`` (with ``progress`` in ``parts``), ``table`` and the ``hint`` on how to stop."""
    state = None
    if status:
        text = w.say(view.status_text)
        if view.status == "running" and view.phase == "eval" and view.kind == "train":
            text = w("running_validation")
        text = (_MARKS.get(view.status, "") + " " + text).strip()
        state = {"state": view.status, "text": text, "note": _lr_note(view, w)}
    grid = None
    if view.rows and parts & {"progress", "table"}:
        header, rows = table(view, w)
        caption = ""
        if view.rows_total > len(view.rows) + view.rows_omitted:
            caption = w("last_rows", shown=len(view.rows), total=view.rows_total)
        grid = {"header": header, "rows": rows, "caption": caption}
    bars = _bars(view, w) if "progress" in parts else []
    return {"status": state, "bars": bars, "table": grid, "hint": hint}


def _bar_html(bar: dict[str, Any]) -> str:
    color = _COLORS[bar["kind"]]
    width = 100.0 * bar["value"] / bar["max"]
    return (
        f'<div><span style="display:inline-block;min-width:7.5em;color:{color}">{escape(bar["label"])}</span>'
        '<span style="display:inline-block;width:18em;height:.6em;vertical-align:middle;border-radius:3px;'
        f'background:var(--jp-layout-color3,#ddd)"><span style="display:block;height:100%;width:{width:.1f}%;'
        f'border-radius:3px;background:{color}"></span></span> {escape(bar["text"])}</div>'
    )


def _table_html(grid: dict[str, Any]) -> str:
    head = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in grid["header"])
    body = ""
    for cells in grid["rows"]:
        if len(cells) != len(grid["header"]):  # the "rows omitted" line
            body += f'<tr><td colspan="{len(grid["header"])}" style="text-align:center">{escape(cells[0])}</td></tr>'
        else:
            body += "<tr>" + "".join(f'<td style="{_CELL}">{escape(c)}</td>' for c in cells) + "</tr>"
    caption = ""
    if grid["caption"]:
        caption = f'<caption style="caption-side:bottom;opacity:.7;text-align:left">{escape(grid["caption"])}</caption>'
    return (
        '<table style="border-collapse:collapse;text-align:right;margin-top:4px;font-variant-numeric:tabular-nums">'
        f"{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def snapshot_bundle(
    view: View, parts: frozenset[str], has_plot: bool = False, *, status: bool = True, w: Words = words
) -> dict[str, str]:
    """The mime bundle that replaces the live view at the end of a run (the plot comes separately).

    ``text/html``: bars, status, error, the whole (capped) table and a summary line, inline-styled.
    ``text/plain`` (terminals, nbval, viewers without HTML): the summary, the last rows and where the plot is.
    """
    data = payload(view, parts | ({"table"} if "progress" in parts else set()), status=status, w=w)
    blocks = [_bar_html(bar) for bar in data["bars"]]
    state = data["status"]
    if state is not None:
        color = _COLORS.get(state["state"], "inherit")
        line = f'<span style="color:{color};font-weight:600">{escape(state["text"])}</span>'
        blocks.append(f"<div>{line}{' · ' + escape(state['note']) if state['note'] else ''}</div>")
        if view.error:
            blocks.append(f'<div style="color:{_COLORS["error"]}">{escape(view.error)}</div>')
    if data["table"] is not None:
        blocks.append(_table_html(data["table"]))
    summary = run_summary(view, w)
    if state is not None:
        blocks.append(f'<div style="opacity:.7;font-size:12px">{escape(summary)}</div>')
    lines = [summary] + [text for text in (view.error, _lr_note(view, w)) if text]
    if view.rows and parts & {"progress", "table", "plot"}:
        rows = view.rows[-10:]
        lines += text_table(dataclasses.replace(view, rows=tuple(rows), rows_omitted=0, omitted_after=0), w)
        if view.rows_total > len(rows):
            lines.append(w("last_rows_text", shown=len(rows), total=view.rows_total))
    if has_plot:
        lines.append(w("plot_below"))
    return {"text/html": f'<div class="nbc-snapshot" style="{_FONT}">{"".join(blocks)}</div>',
            "text/plain": "\n".join(lines)}


def plot_bundle(
    view: View, png: bytes | None, css_width: int | None = None, w: Words = words
) -> tuple[dict[str, str], dict[str, Any]]:
    """The plot's own output at the end of a run, and its metadata (the PNG's CSS width: it has 2x pixels)."""
    if not png:
        if view.kind == "eval":
            return {"text/plain": w("no_plot_eval")}, {}
        return {"text/plain": w("no_plot_failed" if view.steps_done or view.rows else "no_plot_steps")}, {}
    metadata = {"image/png": {"width": css_width}} if css_width else {}
    image = base64.b64encode(png).decode("ascii")
    return {"image/png": image, "text/plain": w("plot_alt", summary=run_summary(view, w))}, metadata
