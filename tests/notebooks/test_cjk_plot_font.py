"""CJK titles and labels in the final PNG plot: drawn with an installed CJK font, never as tofu.

nbcallback's own English labels are ASCII (DejaVu Sans, matplotlib's default, has them), and its Chinese labels
(``lang="zh_CN"``) are in the subset font shipped with the package (``nbcallback/widgets/fonts``), the last font of
the figure's fallback list.  Titles and metric names a user passes (``LiveLossPlot(groups={"精度": [...]})``,
``metrics={"准确率": ...}``) need an installed CJK font: ``plot.render_png`` falls back to one (Debian
``fonts-noto-cjk`` or ``fonts-wqy-microhei``, conda-forge ``font-ttf-noto-cjk``), which ``binder/apt.txt``
installs.  Without one, those characters are boxes and one warning names them (not matplotlib's "Glyph ... missing
from font(s)" per glyph); the tests below that need a CJK font are then skipped, and
``tests/widgets/test_plot_without_cjk_font.py`` checks the machine without one, whatever this one has.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import warnings

import pytest

from tests.widgets.conftest import FakeClock
from nbcallback.widgets.panels import Line, Panel, default_panels
from nbcallback.widgets.plot import PANEL_HEIGHT, PANEL_WIDTH, cjk_fallback_fonts, render_png
from nbcallback.widgets.state import TrainingState
from nbcallback.widgets.words import Words

TITLE, METRIC = "精度（测试集）", "准确率"


def _data(metric: str) -> TrainingState:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=50, has_validation=True, eval_steps=5, lr=0.1)
    step = 0
    for epoch in (1, 2):
        state.begin_epoch(epoch, clock())
        clock.advance(1.0)
        step += 50
        state.record_steps(clock(), step, [1.0 / (step + i) for i in range(50)])
        state.set_lr(0.1 / epoch)
        state.add_eval_row(clock(), {metric: 0.8 + 0.05 * epoch, "eval_loss": 0.6 / epoch}, epoch=epoch, step=step)
        state.end_epoch(epoch, clock(), validated=True)
    return state


def _render(panels: list[Panel], state: TrainingState, w: Words = Words("en")) -> tuple[bytes, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = render_png(panels, state.plot_data(), w)
    assert png is not None
    return png, [str(item.message) for item in caught
                 if "missing from font" in str(item.message) or "no installed font has" in str(item.message)]


def _cjk_font_or_skip() -> list[str]:
    fc_list = shutil.which("fc-list")
    system = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=30).stdout \
        if fc_list else ""
    fonts = cjk_fallback_fonts()
    if not fonts:
        pytest.skip("no CJK font that plot.py knows is installed (fc-list :lang=zh: "
                    f"{system.strip() or 'none'}); apt-get install fonts-wqy-microhei or fonts-noto-cjk")
    return fonts


def _user_panels(state: TrainingState, w: Words = Words("en")) -> list[Panel]:
    data = state.plot_data()
    return default_panels(data.metrics, groups={TITLE: [METRIC]}, lr=data.lr_changed, words=w,
                          extra=[Panel("学习率与准确率", [Line("eval:" + METRIC, METRIC, "m2", "points")])])


def test_nbcallbacks_own_english_labels_never_miss_a_glyph() -> None:
    state = _data("accuracy")
    data = state.plot_data()
    _, missing = _render(default_panels(data.metrics, lr=data.lr_changed), state)
    assert not missing, missing


def test_cjk_titles_metric_names_and_legends_render_with_a_cjk_font() -> None:
    _cjk_font_or_skip()
    state = _data(METRIC)
    png, missing = _render(_user_panels(state), state)
    assert not missing, missing  # every glyph came from a font that has it: no tofu
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    assert image.size == (2 * 3 * PANEL_WIDTH, 2 * 2 * PANEL_HEIGHT)  # loss, 精度, lr, the extra panel


def test_the_chinese_display_labels_its_panels_and_axes_without_tofu() -> None:
    _cjk_font_or_skip()
    zh = Words("zh_CN")
    state = _data(METRIC)
    panels = _user_panels(state, zh)
    assert panels[0].title != "loss" and panels[0].lines[0].label != "train"  # the Chinese words are used
    _, missing = _render(panels, state, zh)
    assert not missing, missing


def test_the_check_sees_tofu_when_no_cjk_font_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests above would pass for nothing if nothing were reported: without an installed CJK font the same plot
    must report the user's characters as missing."""
    import nbcallback.widgets.plot as plot

    monkeypatch.setattr(plot, "cjk_fallback_fonts", lambda: [])
    state = _data(METRIC)
    from matplotlib import rc_context

    with rc_context({"font.family": ["DejaVu Sans"]}):
        _, missing = _render(_user_panels(state), state)
    assert missing and any(f"{ord(TITLE[0]):X}" in m or TITLE[0] in m for m in missing), missing


def test_the_fallback_list_is_rcparams_font_then_cjk_fonts_then_the_shipped_subset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import nbcallback.widgets.plot as plot
    from matplotlib import rcParams

    monkeypatch.setattr(plot, "cjk_fallback_fonts", lambda: [])
    assert plot._font_family() == [*rcParams["font.family"], plot.SUBSET_FAMILY]  # nbcallback's words, no boxes
    monkeypatch.setattr(plot, "cjk_fallback_fonts", lambda: ["WenQuanYi Micro Hei"])
    # the user's font first; an installed CJK font before the subset (it has the user's characters too)
    assert plot._font_family() == [*rcParams["font.family"], "WenQuanYi Micro Hei", plot.SUBSET_FAMILY]
