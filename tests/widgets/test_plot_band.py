"""The training-loss band of the final PNG: a short run (one step per bucket) still shows its raw losses."""
from __future__ import annotations

import io

import numpy as np
import pytest

from nbcallback.widgets.panels import Line, Panel
from nbcallback.widgets.panels import y_range
from nbcallback.widgets.plot import render_png
from nbcallback.widgets.state import PlotData

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

BLUE = (0x19, 0x76, 0xD2)  # the 'train' colour slot
PANEL = Panel("loss", [Line("loss", "train", "train", "band")], "log")


def _data(raw: list[float], smooth: list[float], spread: float = 0.0) -> PlotData:
    xs = [float(i + 1) for i in range(len(raw))]
    lo = [v * (1 - spread) for v in raw]
    hi = [v * (1 + spread) for v in raw]
    return PlotData(x_range=(0.0, float(len(raw))), epoch_marks=(),
                    series={"loss": {"x": xs, "lo": lo, "hi": hi, "y": smooth}})


def _faint_blue_pixels(png: bytes) -> int:
    """Pixels of the band's pale blue (neither the white card, grey text, nor the bold line)."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int32).reshape(-1, 3)
    r, g, b = pixels[:, 0], pixels[:, 1], pixels[:, 2]
    bold = (abs(r - BLUE[0]) < 40) & (abs(g - BLUE[1]) < 40)
    return int(((b > 200) & (r < 235) & (b - r > 25) & ~bold).sum())


def test_raw_losses_of_a_short_run_are_drawn_and_in_range() -> None:
    raw = [1.0 / (1 + i) * (3 if i % 5 == 0 else 1) for i in range(60)]  # jagged, falling to ~0.02
    smooth = [0.5 + 0.4 / (1 + i) for i in range(60)]  # an EMA lagging well above the raw values
    data = _data(raw, smooth)
    lo, _ = y_range(PANEL, data.series)
    assert lo < min(raw), "the raw values are the line a reader reads: the axis must reach them"
    assert _faint_blue_pixels(render_png([PANEL], data)) > 300, "the raw per-step losses are not visible"


def test_a_wide_band_keeps_the_lines_bottom() -> None:
    raw = [1.0 / (1 + i) for i in range(60)]
    data = _data(raw, raw, spread=0.9)  # easy batches at a tenth of the curve
    lo, _ = y_range(PANEL, data.series)
    assert lo > min(data.series["loss"]["lo"]), "a band's minima must not stretch the axis below the curve"
    assert _faint_blue_pixels(render_png([PANEL], data)) > 300
