"""The final plot as a PNG: the same panels the browser drew live, drawn once with matplotlib.

Drawn once per run, when it ends, for the saved notebook (GitHub, nbviewer,
VS Code and nbconvert show it without a kernel) and for ``save_path``.  It uses
a private ``Figure`` on the Agg canvas (no pyplot, no global state), is
rendered at twice the CSS size and shown at CSS size, so it is sharp on HiDPI
screens, and sits on a white card with dark text, readable in light and dark
themes alike.
"""
from __future__ import annotations

import functools
import io
import math
from typing import Any, Sequence

from nbcallback.widgets.panels import COLORS, Panel
from nbcallback.widgets.state import PlotData
from nbcallback.widgets.words import Words, words

__all__ = ["render_png", "png_size", "warm_up", "cjk_fallback_fonts", "PANEL_WIDTH", "PANEL_HEIGHT"]

#: One panel's CSS size in pixels; the PNG has twice as many pixels.
PANEL_WIDTH, PANEL_HEIGHT = 380, 250
_DENSITY = 2
_TEXT, _MUTED, _GRID = "#212121", "#616161", "#e0e0e0"

#: CJK fonts a figure falls back to, in this order, for glyphs its main font lacks (Chinese titles or
#: metric names a user passes): Debian's fonts-noto-cjk / fonts-wqy-microhei, macOS's and Windows' own.
_CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
              "Noto Sans CJK JP", "PingFang SC", "Microsoft YaHei", "SimHei")


def cjk_fallback_fonts() -> list[str]:
    """The fonts of ``_CJK_FONTS`` that matplotlib finds installed (empty: CJK text shows as boxes)."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return [name for name in _CJK_FONTS if name in installed]


def _font_family() -> list[str] | None:
    """The text font: rcParams' family, then the installed CJK fonts; None (rcParams as is) without one."""
    from matplotlib import rcParams

    fallbacks = cjk_fallback_fonts()
    return list(rcParams["font.family"]) + fallbacks if fallbacks else None


def png_size(panels: int) -> tuple[int, int]:
    """The CSS size (width, height) of the final PNG with ``panels`` panels (at most 3 per row)."""
    columns = min(max(panels, 1), 3)
    rows = math.ceil(max(panels, 1) / 3)
    return PANEL_WIDTH * columns, PANEL_HEIGHT * rows


def _pairs(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[list[float], list[float]]:
    """Points as float lists, missing values as NaN (matplotlib leaves a gap)."""
    return [float(x) for x in xs], [math.nan if y is None else float(y) for y in ys]


def _raw_band(series: dict[str, list[Any]]) -> bool:
    """Whether a band holds raw values (one step per bucket: lo == hi everywhere)."""
    lo, hi = series.get("lo", []), series.get("hi", [])
    return bool(lo) and list(lo) == list(hi)


def _draw_line(ax: Any, line: Any, data: dict[str, list[Any]], color: str, log: bool) -> bool:
    """Draw one spec line on ``ax``; False when there is nothing to draw."""
    from matplotlib.colors import to_rgba

    xs, ys = _pairs(data.get("x", []), data.get("y", []))
    if not xs:
        return False
    if log:
        ys = [y if y > 0 else math.nan for y in ys]
    if line.style == "band":
        _, lo = _pairs(data["x"], data.get("lo", []))
        _, hi = _pairs(data["x"], data.get("hi", []))
        if log:
            lo = [v if v > 0 else math.nan for v in lo]
            hi = [v if v > 0 else math.nan for v in hi]
        # One step per bucket (a short run): lo == hi, the area is empty and its faint edge is the
        # raw per-step loss.
        edge = to_rgba(color, 0.5) if _raw_band(data) else "none"
        ax.fill_between(xs, lo, hi, facecolor=to_rgba(color, 0.18), edgecolor=edge, linewidth=0.7, step="mid")
        ax.plot(xs, ys, color=color, linewidth=1.8, label=line.label)
    elif line.style == "points":
        ax.plot(xs, ys, color=color, linewidth=1.2, marker="o", markersize=4.5, label=line.label,
                clip_on=False)  # the last evaluation sits on the right edge: show all of its mark
    elif line.style == "step":
        ax.step(xs, ys, where="post", color=color, linewidth=1.6, label=line.label)
        changes = [i for i in range(1, len(ys)) if ys[i] != ys[i - 1]]
        ax.plot([xs[i] for i in changes], [ys[i] for i in changes], linestyle="none", marker="o", markersize=4,
                color=color, clip_on=False)
    else:
        ax.plot(xs, ys, color=color, linewidth=1.6, label=line.label)
    return True


def y_limits(panel: Panel, data: PlotData) -> tuple[float, float] | None:
    """The panel's y range: everything's top, but the *lines'* bottom (a raw band counts as a line).

    A band's per-step minima (an easy batch's loss of 1e-5) would otherwise
    stretch the axis far below the curve anyone reads; the band is clipped
    there instead.  A spike still shows: the top covers the band.
    """
    log = panel.scale == "log"
    lows: list[float] = []
    highs: list[float] = []
    for line in panel.lines:
        series = data.series.get(line.key)
        if series is None:
            continue
        values = [v for v in series.get("y", []) if v is not None and (v > 0 or not log)]
        lows += values
        if line.style == "band" and _raw_band(series):  # raw values are drawn as a line: in range
            lows += [v for v in series["lo"] if v is not None and (v > 0 or not log)]
        highs += values + [v for v in series.get("hi", []) if v is not None and (v > 0 or not log)]
    if not lows:
        return None
    lo, hi = min(lows), max(highs)
    if log:
        return lo / 1.5, hi * 1.3
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def _log_axis(ax: Any, limits: tuple[float, float] | None) -> None:
    """A log y axis labelled 0.01, 0.02, 0.05 ... (no 10^x notation, no crowded minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    decades = math.log10(limits[1] / limits[0]) if limits else 3.0
    subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=20))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _axes_box(index: int, width: int, height: int) -> list[float]:
    """Panel ``index``'s axes in figure fractions: fixed pixel margins for the tick labels, the title
    and legend above and the axis label below (a fixed layout costs nothing; ``tight_layout`` draws
    the figure twice)."""
    left, right, top, bottom = 58, 16, 46, 42
    x0 = (index % 3) * PANEL_WIDTH + left
    y0 = height - (index // 3 + 1) * PANEL_HEIGHT + bottom
    return [x0 / width, y0 / height, (PANEL_WIDTH - left - right) / width, (PANEL_HEIGHT - top - bottom) / height]


def render_png(panels: Sequence[Panel], data: PlotData, w: Words = words) -> bytes | None:
    """The panels as a PNG (``None`` when no panel has data)."""
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    drawable = [p for p in panels if any(line.key in data.series for line in p.lines)]
    if not drawable:
        return None
    width, height = png_size(len(drawable))
    fig = Figure(figsize=(width / 100, height / 100), dpi=100 * _DENSITY, facecolor="white")
    FigureCanvasAgg(fig)
    family = _font_family()
    text = {"fontfamily": family} if family else {}
    x_lo, x_hi = data.x_range
    for index, panel in enumerate(drawable):
        ax = fig.add_axes(_axes_box(index, width, height))
        ax.set_facecolor("white")
        log = panel.scale == "log"
        limits = y_limits(panel, data)
        if log:
            _log_axis(ax, limits)
        drawn = False
        for line in panel.lines:
            series = data.series.get(line.key)
            if series is not None:
                drawn = _draw_line(ax, line, series, COLORS[line.color][1], log) or drawn
        for mark in data.epoch_marks:
            ax.axvline(mark, color=_MUTED, linewidth=0.8, linestyle=(0, (2, 3)), zorder=0)
        ax.set_xlim(x_lo, max(x_hi, x_lo + 1))
        if limits is not None and limits[0] < limits[1]:
            ax.set_ylim(*limits)
        ax.set_title(panel.title, fontsize=11, color=_TEXT, loc="left", pad=18, **text)
        ax.grid(True, color=_GRID, linewidth=0.7)
        ax.tick_params(labelsize=9.5, colors=_MUTED)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_color(_GRID)
        ax.set_xlabel(w("axis_step"), fontsize=9.5, color=_MUTED, **text)
        handles, labels = ax.get_legend_handles_labels()
        if handles:  # above the data area, right-aligned: never over a line
            ax.legend(handles, labels, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(handles),
                      fontsize=9.5, frameon=False, borderaxespad=0.2, handlelength=1.6, prop=family and {
                          "family": family, "size": 9.5})
    fig.canvas.draw()
    return _palette_png(fig.canvas.buffer_rgba())


def _palette_png(rgba: Any) -> bytes:
    """The picture as a 128-colour PNG: a third of an RGBA PNG's bytes (a saved notebook keeps it as
    base64 text) and no visible change on flat colours and anti-aliased lines."""
    from PIL import Image

    image = Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), bytes(rgba), "raw", "RGBA", 0, 1)
    palette = image.convert("RGB").quantize(colors=128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG")
    return buffer.getvalue()


@functools.cache
def warm_up() -> None:
    """Draw one small plot, once per process: the first figure loads fonts and builds caches
    (~0.4 s), which a notebook then pays when the callback is created, not when a run ends."""
    from nbcallback.widgets.panels import Line

    data = PlotData(x_range=(0.0, 2.0), epoch_marks=(1.0,),
                    series={"loss": {"x": [1.0, 2.0], "lo": [0.5, 0.4], "hi": [0.6, 0.5], "y": [0.55, 0.45]}})
    render_png([Panel("loss", [Line("loss", "train", "train", "band")], "log")], data)
