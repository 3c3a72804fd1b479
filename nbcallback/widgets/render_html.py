"""The HTML of a run's picture, built once: the bars, the status line and the metrics table (:func:`fragment`).
The live widget shows it (:func:`payload`: the anywidget model sends it, ``static/dashboard.js`` inserts it and
styles it by class from ``dashboard.css``), and so does the static snapshot left at the end (:func:`snapshot_bundle`:
the same elements with inline styles, since a saved notebook has no stylesheet, and ``text/plain``).  The final PNG
is its own ``image/png`` output (:func:`plot_bundle`: GitHub's viewer drops data-URI images in HTML).
"""
from __future__ import annotations

import base64
import dataclasses
from html import escape
from typing import Any

from nbcallback.widgets.format import bars, is_numeric_cell, lr_note, run_summary, status_line, table, text_table
from nbcallback.widgets.state import View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["fragment", "payload", "snapshot_bundle", "plot_bundle"]

_FONT = (
    "font-family:var(--jp-ui-font-family,var(--vscode-font-family,system-ui,sans-serif));"
    "font-size:13px;line-height:1.6;color:var(--jp-ui-font-color1,var(--vscode-foreground,inherit))"
)
_BLUE, _ORANGE = "var(--jp-brand-color1,#1976d2)", "var(--jp-warn-color1,#e65100)"
_GREEN, _RED = "var(--jp-success-color1,#2e7d32)", "var(--jp-error-color1,#c62828)"
_COLORS = {"epoch": _BLUE, "train": _BLUE, "eval": _ORANGE, "finished": _GREEN, "stopped": _ORANGE,
           "error": _RED, "interrupted": _RED}
_CELL = "padding:2px 8px"  # inline: marimo's and some viewers' CSS ignore ``cellpadding``


#: The snapshot's inline styles, by element (the live widget styles the same classes from ``dashboard.css``).
_INLINE = {
    "bar-label": "display:inline-block;min-width:7.5em;color:{color}",
    "bar-track": ("display:inline-block;width:18em;height:.6em;vertical-align:middle;border-radius:3px;"
                  "background:var(--jp-layout-color3,#ddd)"),
    "bar-fill": "display:block;height:100%;width:{width:.1f}%;border-radius:3px;background:{color}",
    "status-text": "color:{color};font-weight:600",
    "error": "color:{color}",
    "table": "border-collapse:collapse;text-align:right;margin-top:4px;font-variant-numeric:tabular-nums",
    "cell": _CELL,
    "omitted": "text-align:center",
    "caption": "caption-side:bottom;opacity:.7;text-align:left",
}


def _tag(tag: str, cls: str, inner: str, style: str = "", **data: str) -> str:
    """``<tag class="nbc-{cls}" data-{name}="..." style="...">inner</tag>`` (no class for '', no style for '')."""
    attrs = f' class="nbc-{cls}"' if cls else ""
    if data:
        attrs += "".join(f' data-{name}="{escape(value)}"' for name, value in data.items())
    if style:
        attrs += f' style="{style}"'
    return f"<{tag}{attrs}>{inner}</{tag}>"


def _bars_html(view: View, words: Words, inline: bool) -> str:
    out = []
    for bar in bars(view, words):
        color, width = _COLORS[bar["kind"]], 100.0 * bar["value"] / bar["max"]
        look = {key: _INLINE[key].format(color=color, width=width) if inline else ""
                for key in ("bar-label", "bar-track", "bar-fill")}
        fill = _tag("span", "bar-fill", "", look["bar-fill"] or f"width:{width:.1f}%")  # the width: both need it
        inner = (_tag("span", "bar-label", escape(bar["label"]), look["bar-label"])
                 + _tag("span", "bar-track", fill, look["bar-track"]) + " "
                 + _tag("span", "bar-text", escape(bar["text"])))
        out.append(_tag("div", "bar", inner, kind=bar["kind"]))
    return _tag("div", "bars", "".join(out)) if out else ""


def _status_html(view: View, words: Words, hint: str, status: bool, inline: bool) -> str:
    pieces = []
    line = status_line(view, words) if status else None
    if line is not None:
        style = _INLINE["status-text"].format(color=_COLORS.get(line["state"], "inherit")) if inline else ""
        pieces.append(_tag("span", "status-text", escape(line["text"]), style))
        if line["note"]:
            pieces.append((" · " if inline else "") + _tag("span", "note", escape(line["note"])))
    if hint:
        pieces.append(_tag("span", "hint", escape(hint)))
    if not pieces:
        return ""
    html = _tag("div", "status", "".join(pieces), state=line["state"] if line else "")
    if line is not None and view.error:
        html += _tag("div", "error", escape(view.error), _INLINE["error"].format(color=_COLORS["error"])
                     if inline else "")
    return html


def _table_html(view: View, words: Words, caption: str, inline: bool) -> str:
    header, rows = table(view, words)
    full = [row for row in rows if len(row) == len(header)]  # not the "rows omitted" line
    numeric = [bool(full) and all(row[j] == "" or is_numeric_cell(row[j]) for row in full) for j in range(len(header))]
    cell_style = _INLINE["cell"] if inline else ""

    def cell(tag: str, text: str, j: int) -> str:
        return _tag(tag, "num" if numeric[j] else "", escape(text), cell_style)

    head = "<tr>" + "".join(cell("th", text, j) for j, text in enumerate(header)) + "</tr>"
    body = ""
    for cells in rows:
        if len(cells) != len(header):
            span = f'<td colspan="{len(header)}"' + (f' style="{_INLINE["omitted"]}"' if inline else "")
            body += f"<tr>{span}>{escape(cells[0])}</td></tr>"
        else:
            body += "<tr>" + "".join(cell("td", text, j) for j, text in enumerate(cells)) + "</tr>"
    caption = _tag("caption", "", escape(caption), _INLINE["caption"] if inline else "") if caption else ""
    return _tag("table", "table", f"{caption}<thead>{head}</thead><tbody>{body}</tbody>",
                _INLINE["table"] if inline else "")


def fragment(view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, words: Words = ENGLISH,
             inline: bool = False) -> dict[str, str]:
    """The picture's HTML in two pieces: ``head`` (the bars with ``progress`` in ``parts``; the status line, its lr
    note and the ``hint`` on how to stop, unless ``status`` is False: left to another callback beside this one) and
    ``table`` (the metrics table with ``progress`` or ``table`` in ``parts``; '' without rows).  ``inline``: with
    the snapshot's inline styles."""
    head = _bars_html(view, words, inline) if "progress" in parts else ""
    head += _status_html(view, words, hint, status, inline)
    grid = ""
    if view.rows and parts & {"progress", "table"}:
        caption = ""
        if view.rows_total > len(view.rows) + view.rows_omitted:
            caption = words("last_rows", shown=len(view.rows), total=view.rows_total)
        grid = _table_html(view, words, caption, inline)
    return {"head": head, "table": grid}


def payload(
    view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, words: Words = ENGLISH
) -> dict[str, Any]:
    """The live widget's ``view`` (without series and controls): ``state`` (the run's status, for the controls) and
    ``html`` (:func:`fragment`, which the front end inserts as it is)."""
    return {"state": view.status, "html": fragment(view, parts, hint=hint, status=status, words=words)}


def snapshot_bundle(
    view: View, parts: frozenset[str], has_plot: bool = False, *, status: bool = True, words: Words = ENGLISH
) -> dict[str, str]:
    """The mime bundle that replaces the live view at the end of a run (the plot comes separately).

    ``text/html``: bars, status, error, the whole (capped) table and a summary line, inline-styled.
    ``text/plain`` (terminals, nbval, viewers without HTML): the summary, the last rows and where the plot is.
    """
    shown = parts | ({"table"} if "progress" in parts else set())
    html = fragment(view, shown, status=status, words=words, inline=True)
    summary = run_summary(view, words)
    blocks = html["head"] + html["table"]
    if status:
        blocks += f'<div style="opacity:.7;font-size:12px">{escape(summary)}</div>'
    lines = [summary] + [text for text in (view.error, lr_note(view, words)) if text]
    if view.rows and parts & {"progress", "table", "plot"}:
        rows = view.rows[-10:]
        last = dataclasses.replace(view.table, rows=tuple(rows), rows_omitted=0, omitted_after=0)
        lines += text_table(dataclasses.replace(view, table=last), words)
        if view.rows_total > len(rows):
            lines.append(words("last_rows_text", shown=len(rows), total=view.rows_total))
    if has_plot:
        lines.append(words("plot_below"))
    return {"text/html": f'<div class="nbc-snapshot" style="{_FONT}">{blocks}</div>',
            "text/plain": "\n".join(lines)}


def plot_bundle(
    view: View, png: bytes | None, css_width: int | None = None, words: Words = ENGLISH
) -> tuple[dict[str, str], dict[str, Any]]:
    """The plot's own output at the end of a run, and its metadata (the PNG's CSS width: it has 2x pixels)."""
    if not png:
        if view.kind == "eval":
            return {"text/plain": words("no_plot_eval")}, {}
        return {"text/plain": words("no_plot_failed" if view.steps_done or view.rows else "no_plot_steps")}, {}
    metadata = {"image/png": {"width": css_width}} if css_width else {}
    image = base64.b64encode(png).decode("ascii")
    return {"image/png": image, "text/plain": words("plot_alt", summary=run_summary(view, words))}, metadata
