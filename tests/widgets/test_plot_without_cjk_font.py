"""The Chinese final PNG on a machine with no CJK font (Colab, a slim image, a stale matplotlib font cache).

Each test reads the results of one child Python process in which matplotlib sees no CJK font at all, whatever this
machine has installed (CI installs one):

* a fresh ``MPLCONFIGDIR``, so no font cache of this machine is read or written;
* ``FONTCONFIG_FILE`` pointing at a fontconfig setup with no font folder, so ``fc-list`` (which matplotlib and
  nbcallback's font refresh ask) lists nothing;
* matplotlib's font list cut down to the fonts matplotlib bundles (DejaVu and friends): its own scan of
  ``/usr/share/fonts`` does not go through fontconfig.

The child checks first that no font it can see has a Chinese glyph, so the tests cannot pass for nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SUBSET_FONT = Path(__file__).resolve().parents[2] / "nbcallback" / "widgets" / "fonts" / "nbcallback-sans-sc-subset.otf"

ROOT = Path(__file__).resolve().parents[2]
#: The Chinese words nbcallback draws in its PNG: panel titles, legends, the x axis.
OWN_WORDS = "损失学习率训练验证步数"

CHILD = r'''
import hashlib, json, os, sys, warnings
from pathlib import Path

import matplotlib
from matplotlib import font_manager as fm

bundled = Path(matplotlib.get_data_path(), "fonts").resolve()
fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist if Path(f.fname).resolve().is_relative_to(bundled)]
fm.fontManager._findfont_cached.cache_clear()

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import nbcallback.widgets.plot as plot
from nbcallback.widgets.panels import Line, Panel, default_panels
from nbcallback.widgets.words import Words
from tests.notebooks.test_cjk_plot_font import METRIC, _data, _user_panels

out = {"visible_fonts": sorted({f.name for f in fm.fontManager.ttflist}),
       "system_cjk": plot.cjk_fallback_fonts(),
       "dejavu_misses": plot.missing_glyphs([OWN_WORDS + "精"], list(matplotlib.rcParams["font.family"]))}
out["refreshed"] = plot._refresh_cjk_fonts()


def record(draw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = draw()
    return result, [f"{w.category.__name__}: {w.message}" for w in caught]


def glyph(char, family):
    fig = Figure(figsize=(0.6, 0.6), dpi=100)
    FigureCanvasAgg(fig)
    fig.text(0.5, 0.5, char, fontfamily=family, fontsize=28, ha="center", va="center")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., 0]
    return hashlib.sha1(pixels.tobytes()).hexdigest(), int((pixels < 128).sum())


zh = Words()  # NBCALLBACK_LANG=zh_CN
out["lang"] = zh.lang
family = plot._font_family()
out["family"] = family
out["glyphs"] = {char: glyph(char, family) for char in OWN_WORDS}
out["boxes"] = {char: glyph(char, ["DejaVu Sans"]) for char in OWN_WORDS}

state = _data("accuracy")
data = state.plot_data()
panels = default_panels(data.metrics, lr=data.lr_changed, words=zh)
png, out["own_warnings"] = record(lambda: plot.render_png(panels, data, zh))
Path(sys.argv[1], "zh_own.png").write_bytes(png)
real_family = plot._font_family
plot._font_family = lambda: ["DejaVu Sans"]  # what the PNG looked like before: boxes
tofu, _ = record(lambda: plot.render_png(panels, data, zh))
plot._font_family = real_family
Path(sys.argv[1], "zh_tofu.png").write_bytes(tofu)

user_state = _data(METRIC)
user_png, out["user_warnings"] = record(lambda: plot.render_png(_user_panels(user_state, zh), user_state.plot_data(), zh))
Path(sys.argv[1], "zh_user.png").write_bytes(user_png)
_, out["user_warnings_again"] = record(lambda: plot.render_png(_user_panels(user_state, zh), user_state.plot_data(), zh))

from tests.widgets.conftest import batches, new_model
from nbcallback.widgets import Dashboard, LiveLossPlot

def fit():
    model, _ = new_model()
    dash = Dashboard(display="text", file=open(os.devnull, "w"), save_path=Path(sys.argv[1], "dashboard.png"))
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[dash])
    return dash.last_png is not None
out["dashboard_png"], out["dashboard_warnings"] = record(fit)
print("RESULT " + json.dumps(out, ensure_ascii=False))
'''.replace("OWN_WORDS", repr(OWN_WORDS))


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The child's results (``out``) and the folder with its PNGs (``folder``)."""
    folder = Path(os.environ.get("NBCB_PLOT_DIR") or tmp_path_factory.mktemp("no_cjk_font"))
    config = tmp_path_factory.mktemp("no_cjk_config")
    fonts_conf = config / "fonts.conf"  # fontconfig with no font folder: fc-list lists nothing
    fonts_conf.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
                          f"<fontconfig><cachedir>{config / 'fc-cache'}</cachedir></fontconfig>\n")
    env = {**os.environ, "MPLCONFIGDIR": str(config / "mpl"), "FONTCONFIG_FILE": str(fonts_conf),
           "NBCALLBACK_LANG": "zh_CN", "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return {"out": json.loads(line[len("RESULT "):]), "folder": folder}


def test_the_child_sees_no_cjk_font(child: dict[str, Any]) -> None:
    out = child["out"]
    assert out["lang"] == "zh_CN"
    assert out["system_cjk"] == [] and not out["refreshed"], out["visible_fonts"]
    assert set(out["dejavu_misses"]) == set(OWN_WORDS + "精"), out["visible_fonts"]  # no visible font has them


def test_nbcallbacks_own_chinese_words_draw_without_a_glyph_warning(child: dict[str, Any]) -> None:
    assert child["out"]["own_warnings"] == []
    assert child["out"]["family"][-1] == "nbcallback Sans SC"  # the shipped font ends the fallback list


def test_a_chinese_training_run_ends_with_no_warning_about_fonts(child: dict[str, Any]) -> None:
    out = child["out"]
    assert out["dashboard_png"]
    assert not [w for w in out["dashboard_warnings"] if "font" in w.lower() or "glyph" in w.lower()], \
        out["dashboard_warnings"]


def test_the_chinese_words_are_glyphs_not_boxes(child: dict[str, Any]) -> None:
    """Boxes all look alike: with only DejaVu every character draws the same picture; with the shipped font each
    of nbcallback's words draws its own."""
    glyphs, boxes = child["out"]["glyphs"], child["out"]["boxes"]
    assert len({image for image, _ in boxes.values()}) == 1  # the control: DejaVu alone draws one box for all
    assert len({image for image, _ in glyphs.values()}) == len(OWN_WORDS), glyphs  # every character differs
    box = next(iter(boxes.values()))[0]
    assert all(image != box and ink > 20 for image, ink in glyphs.values()), glyphs


def test_the_final_png_is_not_the_one_with_boxes(child: dict[str, Any]) -> None:
    folder = child["folder"]
    own, tofu = ((folder / name).read_bytes() for name in ("zh_own.png", "zh_tofu.png"))
    assert own != tofu, f"{folder / 'zh_own.png'} is the picture with boxes"


def test_a_users_chinese_title_without_a_font_gets_one_warning_naming_its_characters(child: dict[str, Any]) -> None:
    warned = child["out"]["user_warnings"]
    assert len(warned) == 1, warned  # not one "Glyph ... missing" per character
    message = warned[0]
    assert message.startswith("UserWarning: nbcallback: no installed font has ")
    from matplotlib.ft2font import FT2Font

    shipped = {chr(code) for code in FT2Font(str(SUBSET_FONT)).get_charmap()}
    named = message.split(" (U+")[0]
    # the user's title 精度（测试集）, metric 准确率, panel 学习率与准确率: what nbcallback's font lacks is named
    for char in "精度测试集准确率学习与（）":
        assert (char in named) == (char not in shipped), (char, message)
    assert set("精度准确与") - shipped and set("率学习（）") <= shipped  # the test sees both kinds
    assert "fonts-noto-cjk" in message and "!apt-get install -y fonts-noto-cjk" in message and "restart" in message
    assert "Glyph" not in message


def test_the_same_plot_drawn_again_warns_again_once(child: dict[str, Any]) -> None:
    assert len(child["out"]["user_warnings_again"]) == 1, child["out"]["user_warnings_again"]


def test_a_cjk_font_installed_after_matplotlibs_font_cache_is_found(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``apt-get install fonts-noto-cjk`` in a running kernel: fontconfig lists the font, matplotlib's cached font
    list does not; the plot asks ``fc-list`` once and adds it."""
    from fontTools.ttLib import TTFont  # a dependency of matplotlib
    from matplotlib import font_manager

    import nbcallback.widgets.plot as plot

    font = TTFont(str(plot.SUBSET_FONT))  # stands in for a newly installed CJK font
    for name_id in (1, 4):
        font["name"].setName("WenQuanYi Micro Hei", name_id, 3, 1, 0x409)
    new_font = tmp_path / "wqy-microhei.otf"
    font.save(str(new_font))
    fake = tmp_path / "bin" / "fc-list"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho '{new_font}: '\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    manager = font_manager.fontManager
    before = list(manager.ttflist)
    try:
        manager.ttflist = [f for f in manager.ttflist if f.name != "WenQuanYi Micro Hei"]
        manager._findfont_cached.cache_clear()
        assert "WenQuanYi Micro Hei" not in plot.cjk_fallback_fonts()
        assert plot._refresh_cjk_fonts.__wrapped__() is True
        assert "WenQuanYi Micro Hei" in plot.cjk_fallback_fonts()
        family = plot._font_family()
        assert family.index("WenQuanYi Micro Hei") < family.index(plot.SUBSET_FAMILY)
        assert plot._refresh_cjk_fonts.__wrapped__() is False  # known now: nothing more to add
    finally:
        manager.ttflist = before
        manager._findfont_cached.cache_clear()
