"""The final plot as a PNG: the panels the browser drew live, drawn once with matplotlib when the run ends.

A private ``Figure`` on the Agg canvas (no pyplot, no global state), at twice the CSS size so it is sharp on
HiDPI screens, on a white card with dark text that reads in light and dark themes alike.

Chinese text needs no system font for nbcallback's own words: ``fonts/nbcallback-sans-sc-subset.otf`` (a subset of
Noto Sans CJK SC, OFL, rebuilt by ``fonts/build_subset.py``) holds every character of the message catalogs and is
the last font of the fallback list, after rcParams' font and any installed CJK font (preferred for a user's own
titles and metric names).  A user's character that no font has is named in one warning, with the fix, instead of
matplotlib's "Glyph ... missing from font(s)" warning for every glyph.
"""
from __future__ import annotations

import functools
import io
import math
import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from nbcallback.widgets.panels import COLORS, Line, Panel, is_raw_band, y_range
from nbcallback.widgets.state import PlotData

if TYPE_CHECKING:
    from nbcallback.widgets.overlay import Overlay
from nbcallback.widgets.words import ENGLISH, Words

__all__ = ["drawable", "render_png", "png_size", "warm_up", "cjk_fallback_fonts", "missing_glyphs", "SUBSET_FONT",
           "SUBSET_FAMILY", "PANEL_WIDTH", "PANEL_HEIGHT", "font_family", "palette_png", "draw_run_line", "style_axes",
           "MARGINS"]

#: One panel's CSS size in pixels; the PNG has twice as many pixels.
PANEL_WIDTH, PANEL_HEIGHT = 380, 250
#: A panel's fixed pixel margins (left, right, top, bottom): ``tight_layout`` would draw the figure twice.
MARGINS = (58, 16, 46, 42)
_TEXT, _MUTED, _GRID = "#212121", "#616161", "#e0e0e0"
#: CJK fonts for glyphs the main font lacks (Chinese titles and metric names), in this order: Debian's
#: fonts-noto-cjk / fonts-wqy-microhei, macOS's and Windows' own.
_CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
              "Noto Sans CJK JP", "PingFang SC", "Microsoft YaHei", "SimHei")


#: The font shipped for nbcallback's own Chinese words (see ``fonts/build_subset.py``) and its family name.
SUBSET_FONT = Path(__file__).with_name("fonts") / "nbcallback-sans-sc-subset.otf"
SUBSET_FAMILY = "nbcallback Sans SC"
#: matplotlib's warning for a glyph no font of the fallback list has (one per glyph, per draw).
_GLYPH_WARNING = r"Glyph \d+ .*missing from (current )?font"
FIX = ("install a CJK font, e.g. `apt-get install fonts-noto-cjk` (on Colab: `!apt-get install -y fonts-noto-cjk`), "
       "then restart the kernel")


def cjk_fallback_fonts() -> list[str]:
    """The fonts of ``_CJK_FONTS`` that matplotlib finds installed (none: only nbcallback's subset font)."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return [name for name in _CJK_FONTS if name in installed]


def _register_subset_font() -> None:
    """Make the shipped subset font known to matplotlib (once per font manager: a rebuilt one gets it again)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    if not any(font.name == SUBSET_FAMILY for font in manager.ttflist):
        manager.addfont(str(SUBSET_FONT))


def _font_family() -> list[str]:
    """The figure's fallback list: rcParams' font family, the installed CJK fonts, then the shipped subset."""
    from matplotlib import rcParams

    _register_subset_font()
    return [*rcParams["font.family"], *cjk_fallback_fonts(), SUBSET_FAMILY]


def font_family() -> list[str]:
    """The fonts every nbcallback figure uses, in fallback order (rcParams' family, installed CJK fonts, the
    shipped subset): the live run's PNG and :func:`~nbcallback.widgets.compare`'s."""
    return _font_family()


def palette_png(rgba: Any) -> bytes:
    """A drawn figure's ``canvas.buffer_rgba()`` as the small 128-colour PNG every nbcallback figure is saved as."""
    return _palette_png(rgba)


@functools.lru_cache(maxsize=None)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib import font_manager

    return frozenset(font_manager.get_font(path).get_charmap())


def missing_glyphs(texts: Iterable[str], family: Sequence[str] | None = None) -> list[str]:
    """The characters of ``texts`` (sorted, no duplicates, no whitespace) that no font of ``family`` (default: the
    figure's fallback list) has: matplotlib draws them as boxes."""
    from matplotlib import font_manager

    chars = {char for text in texts for char in str(text) if not char.isspace()}
    if not chars:
        return []
    props = font_manager.FontProperties(family=list(family) if family is not None else _font_family())
    paths = [os.fspath(path) for path in font_manager.fontManager._find_fonts_by_props(props)]
    covered = set().union(*(_charmap(path) for path in paths))
    return sorted(char for char in chars if ord(char) not in covered)


@functools.cache
def _refresh_cjk_fonts() -> bool:
    """Add the CJK fonts fontconfig knows but matplotlib's font cache does not (a font installed after the cache
    was built, e.g. ``apt-get install fonts-noto-cjk`` in a running kernel); whether one was added.  Once per
    process: it runs ``fc-list``."""
    from matplotlib import font_manager

    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    try:
        listed = subprocess.run([fc_list, ":lang=zh", "file"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    known = {os.path.realpath(font.fname) for font in font_manager.fontManager.ttflist}
    added = False
    for line in listed.splitlines():
        path = line.strip().rstrip(":").strip()
        if path and os.path.isfile(path) and os.path.realpath(path) not in known \
                and path.lower().endswith((".ttf", ".otf", ".ttc")):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a font FreeType cannot read: skip it
                continue
            known.add(os.path.realpath(path))
            added = True
    return added


def _warn_missing(missing: Sequence[str]) -> None:
    shown = " ".join(missing[:20]) + (f" (and {len(missing) - 20} more)" if len(missing) > 20 else "")
    codes = ", ".join(f"U+{ord(char):04X}" for char in missing[:5])
    warnings.warn(f"nbcallback: no installed font has {shown} ({codes}{', ...' if len(missing) > 5 else ''}), "
                  f"used in a title or metric name of the final plot; they show as boxes there. To fix it, {FIX}.",
                  UserWarning, stacklevel=3)


def png_size(panels: int) -> tuple[int, int]:
    """The CSS size (width, height) of the final PNG with ``panels`` panels (at most 3 per row)."""
    panels = max(panels, 1)
    return PANEL_WIDTH * min(panels, 3), PANEL_HEIGHT * math.ceil(panels / 3)


def _floats(values: Sequence[Any], log: bool = False) -> list[float]:
    """Values as floats, missing ones (and on a log axis non-positive ones) as NaN: matplotlib leaves a gap."""
    return [math.nan if v is None or (log and v <= 0) else float(v) for v in values]


#: How each style draws its line; ``points`` are not clipped: the last evaluation sits on the right edge.
_STYLES: dict[str, dict[str, Any]] = {
    "band": {"linewidth": 1.8},
    "line": {"linewidth": 1.6},
    "step": {"linewidth": 1.6, "drawstyle": "steps-post"},
    "points": {"linewidth": 1.2, "marker": "o", "markersize": 4.5, "clip_on": False},
}


def _draw_line(ax: Any, line: Line, data: dict[str, list[Any]], log: bool) -> None:
    from matplotlib.colors import to_rgba

    color = COLORS[line.color][1]
    xs, ys = _floats(data["x"]), _floats(data.get("y", []), log)
    ax.plot(xs, ys, color=color, label=line.label, **_STYLES[line.style])
    if line.style == "band":  # one step per bucket (a short run): lo == hi, and the faint edge is the raw loss
        edge = to_rgba(color, 0.5) if is_raw_band(data) else "none"
        ax.fill_between(xs, _floats(data.get("lo", []), log), _floats(data.get("hi", []), log), step="mid",
                        facecolor=to_rgba(color, 0.18), edgecolor=edge, linewidth=0.7)
    elif line.style == "step":  # a mark where the value changes
        changes = [i for i in range(1, len(ys)) if ys[i] != ys[i - 1]]
        ax.plot([xs[i] for i in changes], [ys[i] for i in changes], linestyle="none", marker="o", markersize=4,
                color=color, clip_on=False)


def draw_run_line(ax: Any, style: str, xs: Sequence[Any], ys: Sequence[Any], color: str, *, faint: bool = False,
                  log: bool = False, label: str | None = None) -> Any:
    """One run's line in a panel, the way every picture of compared runs draws it: the smoothed loss (a ``band``)
    and other lines solid, a ``step`` line as steps, evaluations (``points``) dashed with a mark each.  ``faint``:
    an earlier run under the live one (``Dashboard(compare=...)``): thinner, translucent, under the live lines;
    else a run of :func:`~nbcallback.widgets.compare` at full strength.  Returns the matplotlib line."""
    width = 1.1 if faint else 1.5
    style_of: dict[str, Any] = {"linewidth": width}
    if style == "points":
        style_of = {"linewidth": width * 0.75, "linestyle": (0, (4, 2)), "marker": "o",
                    "markersize": 3 if faint else 4, "clip_on": False}
    elif style == "step":
        style_of["drawstyle"] = "steps-post"
    if faint:
        style_of.update(alpha=0.7, zorder=1.5)
    return ax.plot(_floats(xs), _floats(ys, log), color=color, label=label, **style_of)[0]


def style_axes(ax: Any, title: str, xlabel: str, family: Sequence[str]) -> None:
    """A panel's title, x label, grid, ticks and spines, as every nbcallback figure draws them."""
    text = {"fontfamily": list(family)}
    # y=1.0: at the top, where matplotlib's automatic placement puts it anyway (nothing is drawn above the
    # panels' top edge); the automatic placement measures every tick label first.
    ax.set_title(title, fontsize=11, color=_TEXT, loc="left", pad=18, y=1.0, **text)
    ax.set_xlabel(xlabel, fontsize=9.5, color=_MUTED, **text)
    ax.grid(True, color=_GRID, linewidth=0.7)
    ax.tick_params(labelsize=9.5, colors=_MUTED)
    ax.spines[["top", "right"]].set_visible(False)
    ax.spines[["left", "bottom"]].set_color(_GRID)


def drawable(panels: Sequence[Panel], data: PlotData) -> list[Panel]:
    """The panels with data to draw, in order (the final PNG shows these)."""
    return [panel for panel in panels if any(line.key in data.series for line in panel.lines)]


def render_png(panels: Sequence[Panel], data: PlotData, words: Words = ENGLISH,
               overlay: Overlay | None = None) -> bytes | None:
    """The panels that have data as a PNG (``None`` when none has); ``overlay``: earlier runs drawn faint under the
    live lines (:mod:`~nbcallback.widgets.overlay`), the y and x ranges grown to them, their labels in a legend
    above the panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = drawable(panels, data)
    if not shown:
        return None
    width, height = png_size(len(shown))
    strip = _strip_height(overlay, len(shown))
    fig = Figure(figsize=(width / 100, (height + strip) / 100), dpi=200, facecolor="white")
    FigureCanvasAgg(fig)
    family = _font_family()
    texts = [words("axis_step"), *(panel.title for panel in shown),
             *(line.label for panel in shown for line in panel.lines if data.series.get(line.key, {}).get("x")),
             *(run.label for run in (overlay.runs if overlay is not None else ()))]
    missing = missing_glyphs(texts, family)
    if missing and _refresh_cjk_fonts():  # a CJK font installed since matplotlib's font cache was built
        family = _font_family()
        missing = missing_glyphs(texts, family)
    with warnings.catch_warnings():  # one note below, not one warning per glyph
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        png = _draw(fig, shown, data, words, family, width, height, overlay)
    if missing:
        _warn_missing(missing)
    return png


def _strip_height(overlay: Overlay | None, panels: int) -> int:
    """The height of the compared runs' legend above the panels (0 without an overlay)."""
    if overlay is None or not overlay.runs:
        return 0
    return 24 * math.ceil(len(overlay.runs) / _per_row(overlay, panels)) + 6


def _per_row(overlay: Overlay, panels: int) -> int:
    return max(1, min(len(overlay.runs), 2 * min(panels, 3)))


def _draw(fig: Any, shown: Sequence[Panel], data: PlotData, words: Words, family: list[str], width: int,
          height: int, overlay: Overlay | None = None) -> bytes:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    legend_font = {"family": family, "size": 9.5}
    left, right, top, bottom = MARGINS
    total = height + _strip_height(overlay, len(shown))
    x_lo, x_hi = data.x_range[0], max(data.x_range[1], data.x_range[0] + 1)
    spread = overlay.x_extent() if overlay is not None else None
    if spread is not None:
        x_lo, x_hi = min(x_lo, spread[0]), max(x_hi, spread[1])
    handles: dict[str, Any] = {}
    for index, panel in enumerate(shown):
        x0 = (index % 3) * PANEL_WIDTH + left
        y0 = height - (index // 3 + 1) * PANEL_HEIGHT + bottom
        box = [x0 / width, y0 / total, (PANEL_WIDTH - left - right) / width, (PANEL_HEIGHT - top - bottom) / total]
        ax = fig.add_axes(box, facecolor="white")
        limits = y_range(panel, data.series)
        if overlay is not None:  # (the widget's rule too: overlay.combined_range)
            limits = overlay.grow(limits, panel)
        if panel.scale == "log":  # labelled 0.01, 0.02, 0.05 ...: no 10^x notation, no crowded minor labels
            ax.set_yscale("log")
            decades = math.log10(limits[1] / limits[0]) if limits else 3.0
            subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=20))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:.3g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        log = panel.scale == "log"
        for run in overlay.runs if overlay is not None else ():  # under the live lines
            for line in panel.lines:
                cols = run.series.get(line.key)
                if cols and cols["x"]:
                    drawn = draw_run_line(ax, line.style, cols["x"], cols["y"], run.color, faint=True, log=log)
                    if line.style != "points":
                        handles.setdefault(run.label, drawn)
        for line in panel.lines:
            if data.series.get(line.key, {}).get("x"):
                _draw_line(ax, line, data.series[line.key], log)
        for mark in data.epoch_marks:
            ax.axvline(mark, color=_MUTED, linewidth=0.8, linestyle=(0, (2, 3)), zorder=0)
        ax.set_xlim(x_lo, x_hi)
        if limits is not None and limits[0] < limits[1]:
            ax.set_ylim(*limits)
        style_axes(ax, panel.title, words("axis_step"), family)
        live = [(h, l) for h, l in zip(*ax.get_legend_handles_labels()) if l and not l.startswith("_")]
        if live:  # above the data area, right-aligned: never over a line
            ax.legend([h for h, _ in live], [l for _, l in live], loc="lower right", bbox_to_anchor=(1.0, 1.0),
                      ncol=len(live), frameon=False, borderaxespad=0.2, handlelength=1.6, prop=legend_font)
    if overlay is not None and handles:  # the earlier runs, named by what differs, above the panels
        fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(left / width, 1 - 4 / total),
                   ncol=_per_row(overlay, len(shown)), frameon=False, prop=legend_font, handlelength=1.8,
                   columnspacing=1.6, borderaxespad=0)
    fig.canvas.draw()
    return _palette_png(fig.canvas.buffer_rgba())


def _palette_png(rgba: Any) -> bytes:
    """The picture as a 128-colour PNG: much smaller than an RGBA PNG (a saved notebook keeps it as base64
    text), no visible change on flat colours and anti-aliased lines."""
    from PIL import Image

    image = Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), bytes(rgba), "raw", "RGBA", 0, 1)
    palette = image.convert("RGB").quantize(colors=128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG")
    return buffer.getvalue()


@functools.cache
def warm_up() -> None:
    """Draw one small plot, once per process: the first figure loads fonts and builds caches, paid when the
    callback is created rather than when a run ends (the README gives the cost)."""
    data = PlotData(x_range=(0.0, 2.0), epoch_marks=(1.0,),
                    series={"loss": {"x": [1.0, 2.0], "lo": [0.5, 0.4], "hi": [0.6, 0.5], "y": [0.55, 0.45]}})
    render_png([Panel("loss", [Line("loss", "train", "train", "band")], "log")], data)
