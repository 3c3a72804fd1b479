"""The HTML of a run's picture, built once: the bars, the status line and the metrics table (:func:`fragment`).
The live widget shows it (:func:`payload`: the anywidget model sends it, ``static/dashboard.js`` inserts it and
styles it by class from ``dashboard.css``), and so does the static snapshot left at the end (:func:`snapshot_bundle`:
the same elements with inline styles, since a saved notebook has no stylesheet, and ``text/plain``).  The final PNG
is its own ``image/png`` output (:func:`plot_bundle`: GitHub's viewer drops data-URI images in HTML).
"""
from __future__ import annotations

import base64
import dataclasses
import functools
from html import escape
from typing import Any

from nbcallback.widgets.format import (
    bars, is_numeric_cell, lr_note, run_summary, share_percent, short_seconds, status_line, table, text_table,
)
from nbcallback.widgets.overlay import Overlay, compare_columns, earlier_rows, live_row
from nbcallback.widgets.panels import COLORS, TIME_COLORS
from nbcallback.widgets.render_text import compare_text, time_text
from nbcallback.widgets.runs import final_headings
from nbcallback.widgets.state import TimeFacts, View
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["fragment", "payload", "snapshot_bundle", "plot_bundle", "time_html", "compare_html"]

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
    "swatch": "display:inline-block;width:14px;height:3px;margin-right:6px;vertical-align:middle",
    "note": "opacity:.7;margin-top:4px",
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


def compare_html(overlay: Overlay, view: View, words: Words = ENGLISH, inline: bool = False) -> str:
    """The compared runs' final metrics as one small table (``Dashboard(compare=...)``): the live run's row first (it
    changes at each refresh), then the earlier runs, each with the colour swatch of its faint curves; hovering a row
    names the run; without earlier runs (a notebook's first run), a line that says so.  ``inline``: with the
    snapshot's inline styles."""
    if not overlay.runs:
        return _tag("div", "note", escape(words("compare_none")), _INLINE["note"] if inline else "")
    names = compare_columns(overlay, view)
    head, earlier = _compare_fixed(overlay, names, words, inline)
    live = _compare_row(live_row(view, names, words), "train", words("compare_this_run"), inline, live=True)
    style = _INLINE["table"] if inline else ""
    return _tag("table", "table nbc-compare", f"<thead>{head}</thead><tbody>{live}{earlier}</tbody>", style)


@functools.lru_cache(maxsize=4)
def _compare_fixed(overlay: Overlay, names: tuple[str, ...], words: Words, inline: bool) -> tuple[str, str]:
    """The compared runs' table header and the earlier runs' rows: they change only with the columns, so a run's
    refreshes build only the live row."""
    cell_style = _INLINE["cell"] if inline else ""
    first_style = cell_style + ";text-align:left" if inline else ""  # the runs' names: left, the numbers right
    head = "<tr>" + "".join(_tag("th", "" if j == 0 else "num", escape(text), first_style if j == 0 else cell_style)
                            for j, text in enumerate(final_headings(names, words))) + "</tr>"
    rows = zip(earlier_rows(overlay, names, words), overlay.runs)
    return head, "".join(_compare_row(cells, run.color, run.hover, inline) for cells, run in rows)


def _compare_row(cells: list[str], color: str, name: str, inline: bool, live: bool = False) -> str:
    """One run's row: its swatch (the colour of its curves; the live widget's stylesheet sizes it) and name, then
    its numbers; ``name`` is what hovering the row says."""
    cell_style = _INLINE["cell"] if inline else ""
    first_style = cell_style + ";text-align:left" if inline else ""
    fill = f"var({COLORS[color][0]},{COLORS[color][1]})" if color in COLORS else color
    look = _INLINE["swatch"] + ("" if color in COLORS else ";opacity:.8") if inline else ""
    swatch = f'<span class="nbc-swatch" style="{look}{";" if look else ""}background:{fill}"></span>'
    tds = "".join(_tag("td", "" if j == 0 else "num", (swatch if j == 0 else "") + escape(text),
                       first_style if j == 0 else cell_style) for j, text in enumerate(cells))
    mark = (' data-live="1"' + (' style="font-weight:600"' if inline else "")) if live else ""
    return f'<tr class="nbc-run"{mark} title="{escape(name)}">{tds}</tr>'


def fragment(view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, words: Words = ENGLISH,
             inline: bool = False, overlay: Overlay | None = None) -> dict[str, str]:
    """The picture's HTML in three pieces: ``head`` (the bars with ``progress`` in ``parts``; the status line, its lr
    note and the ``hint`` on how to stop, unless ``status`` is False: left to another callback beside this one),
    ``table`` (the metrics table with ``progress`` or ``table`` in ``parts``; '' without rows) and, with an
    ``overlay``, ``compare`` (:func:`compare_html`).  ``inline``: with the snapshot's inline styles."""
    head = _bars_html(view, words, inline) if "progress" in parts else ""
    head += _status_html(view, words, hint, status, inline)
    grid = ""
    if view.rows and parts & {"progress", "table"}:
        caption = ""
        if view.rows_total > len(view.rows) + view.rows_omitted:
            caption = words("last_rows", shown=len(view.rows), total=view.rows_total)
        grid = _table_html(view, words, caption, inline)
    if overlay is None:
        return {"head": head, "table": grid}
    return {"head": head, "table": grid, "compare": compare_html(overlay, view, words, inline)}


def payload(
    view: View, parts: frozenset[str], *, hint: str = "", status: bool = True, words: Words = ENGLISH,
    overlay: Overlay | None = None,
) -> dict[str, Any]:
    """The live widget's ``view`` (without series and controls): ``state`` (the run's status, for the controls) and
    ``html`` (:func:`fragment`, which the front end inserts as it is)."""
    html = fragment(view, parts, hint=hint, status=status, words=words, overlay=overlay)
    return {"state": view.status, "html": html}


def snapshot_bundle(
    view: View, parts: frozenset[str], has_plot: bool = False, *, status: bool = True, words: Words = ENGLISH,
    overlay: Overlay | None = None,
) -> dict[str, str]:
    """The mime bundle that replaces the live view at the end of a run (the plot comes separately).

    ``text/html``: bars, status, error, the whole (capped) table, the compared runs' table (with an ``overlay``)
    and a summary line, inline-styled.  ``text/plain`` (terminals, nbval, viewers without HTML): the summary, the
    last rows, the compared runs and where the plot is.
    """
    shown = parts | ({"table"} if "progress" in parts else set())
    html = fragment(view, shown, status=status, words=words, inline=True, overlay=overlay)
    summary = run_summary(view, words)
    blocks = html["head"] + html["table"] + html.get("compare", "")
    if status:
        blocks += f'<div style="opacity:.7;font-size:12px">{escape(summary)}</div>'
    lines = [summary] + [text for text in (view.error, lr_note(view, words)) if text]
    if view.rows and parts & {"progress", "table", "plot"}:
        rows = view.rows[-10:]
        lines += text_table(dataclasses.replace(view, rows=tuple(rows), rows_omitted=0, omitted_after=0), words)
        if view.rows_total > len(rows):
            lines.append(words("last_rows_text", shown=len(rows), total=view.rows_total))
    if overlay is not None:
        lines += compare_text(overlay, view, words)
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


# ---------------------------------------------------------------------- where the time goes

_STRIPES = "repeating-linear-gradient(135deg,transparent 0 3px,rgba(127,127,127,.45) 3px 5px)"


def _time_color(slot: str) -> str:
    name, fallback = TIME_COLORS[slot]
    return f"var({name},{fallback})"


def time_html(time: TimeFacts, words: Words = ENGLISH) -> str:
    """The "where the time goes" panel as one HTML fragment with inline styles: a title with the wall time, the
    stacked bar (a tooltip per segment) and a legend with each segment's share.  The live widget inserts it as it
    is; the snapshot left at the end of the run shows the same."""
    segs, items = [], []
    for seg in time.segments:
        tip = escape(words("time_tip", label=seg.label, seconds=short_seconds(seg.seconds),
                           share=share_percent(seg.share)))
        color = _time_color(seg.color)
        background = f"{_STRIPES},{color}" if seg.key == "loop" else color
        width = 100 * min(1.0, max(0.0, seg.share))
        segs.append(f'<span class="nbc-time-seg" data-key="{seg.key}" title="{tip}" style="display:block;'
                    f'flex:0 0 {width:.2f}%;height:100%;background:{background}"></span>')
        swatch = (f'<span style="display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;'
                  f'vertical-align:-1px;background:{background}"></span>')
        text = escape(f"{seg.label} {share_percent(seg.share)}")
        items.append(f'<span class="nbc-time-item" data-key="{seg.key}" title="{tip}" style="white-space:nowrap">'
                     f'{swatch}{text}</span>')
    title = (f'<div class="nbc-time-title"><span style="font-weight:600">{escape(words("time_title"))}</span>'
             f'<span style="opacity:.7"> · {escape(words("time_wall", time=short_seconds(time.wall_s)))} · '
             f'{escape(words("time_source", profiler="CallbackProfiler"))}</span></div>')
    bar = (f'<div class="nbc-time-bar" role="img" aria-label="{escape(time_text(time, words))}" style="display:flex;'
           "width:100%;max-width:42em;height:14px;margin:3px 0;border-radius:3px;overflow:hidden;"
           f'background:var(--jp-layout-color3,rgba(127,127,127,.2))">{"".join(segs)}</div>')
    legend = (f'<div class="nbc-time-legend" style="display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;'
              f'font-variant-numeric:tabular-nums">{"".join(items)}</div>')
    return f'<div class="nbc-time" style="{_FONT};margin-top:6px">{title}{bar}{legend}</div>'
