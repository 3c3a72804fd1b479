"""The Dashboard's "where the time goes" bar: the data the widget is sent, the snapshot, the words.

A ``CallbackProfiler`` in the same callbacks list times the run; the Dashboard reads its totals at each refresh
(never per step) and sends the bar as one HTML fragment, which the snapshot a saved notebook keeps shows too.
The profiler's totals are faked where the test checks numbers (no absolute time is asserted).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest

from nbcallback.train import Callback, CallbackProfiler
from nbcallback.widgets import Dashboard, ProgressBar
from nbcallback.widgets.panels import TIME_COLORS, time_facts
from nbcallback.widgets.render_html import time_html
from nbcallback.widgets.render_text import time_text
from nbcallback.widgets.state import TrainingState
from nbcallback.widgets.words import Words
from tests.widgets.conftest import FakeClock, batches, new_model

pytest.importorskip("anywidget")

from nbcallback.widgets.render_widget import WidgetRenderer, with_time  # noqa: E402
from tests.widgets.test_renderers import FakeDisplay, kernel, sink  # noqa: E402,F401  (fixtures)


@dataclass
class Row:
    """A ProfileRow's fields that the bar reads."""

    kind: str
    name: str
    total_s: float


def rows(*items: tuple[str, str, float]) -> list[Row]:
    return [Row(*item) for item in items]


FIT = rows(("step", "train step", 3.0), ("step", "train step", 2.0), ("step", "train step", 1.0),
           ("evaluation", "validation", 0.5), ("evaluation", "validation", 0.3),
           ("callback", "LossMonitor", 0.4), ("callback", "LossMonitor", 0.2), ("callback", "Dashboard", 0.1),
           ("loop", "loop", 1.5))


def shares(facts: Any) -> dict[str, float]:
    return {seg.label: round(seg.share, 6) for seg in facts.segments}


def test_the_bar_sums_each_callbacks_hooks_and_the_steps_parts_in_a_fixed_order() -> None:
    facts = time_facts(FIT, 10.0)
    assert [(seg.key, seg.label) for seg in facts.segments] == [
        ("step", "train step"), ("validation", "validation"), ("callback", "LossMonitor"),
        ("callback", "Dashboard"), ("loop", "loop (data, the rest)")]
    assert shares(facts) == {"train step": 0.6, "validation": 0.08, "LossMonitor": 0.06, "Dashboard": 0.01,
                             "loop (data, the rest)": 0.15}
    assert sum(seg.share for seg in facts.segments) == pytest.approx(0.9)  # a 10 s wall over 9 s of rows
    assert facts.wall_s == 10.0 and [seg.seconds for seg in facts.segments][:2] == [6.0, pytest.approx(0.8)]
    assert len({seg.color for seg in facts.segments}) == len(facts.segments)  # each part its own colour
    assert all(seg.color in TIME_COLORS for seg in facts.segments)


def test_small_callbacks_fold_into_one_segment_and_an_eval_run_says_evaluation() -> None:
    many = rows(("evaluation", "eval", 1.0), ("loop", "loop", 1.0),
                *[("callback", f"C{k}", 0.1 * (k + 1)) for k in range(6)])
    facts = time_facts(many, 4.1)
    labels = [seg.label for seg in facts.segments]
    assert labels == ["evaluation", "C5", "C4", "C3", "C2", "2 more callbacks", "loop (data, the rest)"]
    assert facts.segments[-2].seconds == pytest.approx(0.1 + 0.2) and facts.segments[-2].key == "other"
    assert sum(seg.share for seg in facts.segments) == pytest.approx(1.0)
    five = time_facts(rows(*[("callback", f"C{k}", 1.0) for k in range(5)]), 5.0)
    assert [seg.label for seg in five.segments][-2] == "C4"  # one more is named, not "1 more callbacks"
    assert time_facts([], 0.0).segments[0].share == 0.0  # nothing measured yet: no division by zero


def test_callbacks_keep_the_lists_order_and_their_colours_while_their_times_change() -> None:
    order = ("CallbackProfiler", "Dashboard", "LossMonitor")
    early = time_facts(FIT, 10.0, order=order)
    assert [seg.label for seg in early.segments if seg.key == "callback"] == ["Dashboard", "LossMonitor"]
    later = time_facts(FIT + rows(("callback", "Dashboard", 5.0), ("callback", "Unlisted", 0.05)), 16.0, order=order)
    colours = {seg.label: seg.color for seg in later.segments}
    assert [seg.label for seg in later.segments if seg.key == "callback"] == ["Dashboard", "LossMonitor", "Unlisted"]
    assert all(colours[seg.label] == seg.color for seg in early.segments)  # a part keeps its colour


def test_the_words_are_english_or_chinese() -> None:
    zh = Words("zh_CN")
    facts = time_facts(FIT, 10.0, zh)
    assert [seg.label for seg in facts.segments][:2] == ["训练步", "验证"]
    text = time_text(facts, zh)
    assert text.startswith("时间花在哪里（总用时 10.00 s）：训练步 60.0 %，验证 8.0 %")
    html = time_html(facts, zh)
    assert "时间花在哪里" in html and "由 CallbackProfiler 测量" in html
    assert time_text(time_facts(FIT, 10.0)).startswith("where the time goes (wall time 10.00 s): train step 60.0 %")


def test_the_html_draws_each_segment_at_its_share_with_theme_colours_and_tooltips() -> None:
    html = time_html(time_facts(FIT, 10.0))
    widths = [float(w) for w in re.findall(r'class="nbc-time-seg"[^>]*flex:0 0 ([\d.]+)%', html)]
    assert widths == [60.0, 8.0, 6.0, 1.0, 15.0]
    assert html.count('class="nbc-time-item"') == 5  # the legend: one entry per segment
    assert "var(--jp-brand-color1,#1976d2)" in html and "var(--jp-layout-color3," in html  # themed
    tips = [unescape(t) for t in re.findall(r'class="nbc-time-seg"[^>]*title="([^"]*)"', html)]
    assert tips[2] == "LossMonitor: 600.0 ms, 6.0 % of the wall time"
    assert "<script" not in html and "&lt;b&gt;" in time_html(time_facts(rows(("callback", "<b>", 1.0)), 1.0))


def test_a_view_carries_the_bar_and_a_new_run_forgets_it() -> None:
    clock, state = FakeClock(), TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=10)
    assert state.view(clock()).time is None
    state.set_time(time_facts(FIT, 10.0))
    assert state.view(clock()).time == time_facts(FIT, 10.0)
    state.start(clock(), epochs=1, steps_per_epoch=10)
    assert state.view(clock()).time is None


class FakeProfiler(CallbackProfiler):
    """A CallbackProfiler whose totals the test sets (``rows``, ``wall_s``), counting how often they are read."""

    def __init__(self) -> None:
        super().__init__()
        self.fake: list[Row] = rows(("step", "train step", 1.0), ("loop", "loop", 1.0))
        self.fake_wall = 2.0
        self.reads = 0

    @property
    def rows(self) -> list[Any]:  # type: ignore[override]
        self.reads += 1
        return list(self.fake)

    @property
    def wall_s(self) -> float:  # type: ignore[override]
        return self.fake_wall


class Tick(Callback):
    """Advance the fake clock by ``dt`` each step; at step ``at`` change the fake profiler's totals."""

    def __init__(self, clock: FakeClock, dt: float, profiler: FakeProfiler, at: int) -> None:
        super().__init__()
        self.clock, self.dt, self.profiler, self.at = clock, dt, profiler, at

    def on_train_step_end(self, run_context: Any) -> None:
        self.clock.advance(self.dt)
        if run_context.original_args().cur_step_num == self.at:
            self.profiler.fake = rows(("step", "train step", 1.0), ("callback", "Slow", 3.0), ("loop", "loop", 0.0))
            self.profiler.fake_wall = 4.0


def _time_html(view: dict[str, Any]) -> str | None:
    return view.get("time")


def test_the_widget_is_sent_the_bar_at_refreshes_and_the_snapshot_keeps_the_last(kernel: FakeDisplay,
                                                                                  monkeypatch) -> None:
    views: list[dict[str, Any]] = []
    traits = WidgetRenderer._traits

    def spy(self: WidgetRenderer, *args: Any, **kwargs: Any) -> Any:
        spec, data = traits(self, *args, **kwargs)
        views.append(data)
        return spec, data

    monkeypatch.setattr(WidgetRenderer, "_traits", spy)
    clock = FakeClock()
    profiler = FakeProfiler()
    dash = Dashboard(display="widget", clock=clock, refresh_interval=1.0)
    model, _ = new_model()
    model.train(1, batches(40), callbacks=[profiler, Tick(clock, 0.1, profiler, at=25), dash])
    sent = [_time_html(view) for view in views]
    assert sent[0] is None  # the view opens before the run's callbacks are looked at
    bars = [html for html in sent if html]
    assert len(bars) >= 3 and profiler.reads == len(bars) + 1  # one read per refresh, one at the end: not per step
    assert profiler.reads < 40 / 2
    assert "train step 50.0 %" in unescape(bars[0]) and "Slow 75.0 %" in unescape(bars[-1])
    final = kernel.handles[0].bundles[-1]
    assert final["text/html"].endswith(time_html(time_facts(profiler.fake, 4.0)))
    assert final["text/plain"].splitlines()[-1] == "where the time goes (wall time 4.00 s): train step 25.0 %, " \
                                                   "Slow 75.0 %, loop (data, the rest) 0 %"
    assert dash.view().time == time_facts(profiler.fake, 4.0)


def test_a_real_profiler_feeds_the_bar_and_its_shares_add_up(kernel: FakeDisplay) -> None:
    class Slow(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            time.sleep(0.005)

    profiler = CallbackProfiler()
    dash = Dashboard(display="widget", lang="zh_CN")
    model, _ = new_model()
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[profiler, Slow(), dash])
    facts = dash.view().time
    assert facts is not None
    keys = [seg.key for seg in facts.segments]
    assert keys[:2] == ["step", "validation"] and keys[-1] == "loop"
    callbacks = {seg.label: seg.share for seg in facts.segments if seg.key == "callback"}
    assert list(callbacks) == ["Slow", "Dashboard"]  # the list's order; the display's own cost is shown too
    assert callbacks["Slow"] > callbacks["Dashboard"]  # 5 ms a step: the slow one stands out
    assert sum(seg.share for seg in facts.segments) == pytest.approx(1.0, abs=0.02)
    final = kernel.handles[0].bundles[-1]
    assert "时间花在哪里" in final["text/html"] and 'data-key="validation"' in final["text/html"]


def test_without_a_profiler_or_with_time_panel_false_nothing_is_read_or_sent(kernel: FakeDisplay) -> None:
    model, _ = new_model()
    dash = Dashboard(display="widget")
    model.train(1, batches(20), callbacks=[dash])
    assert dash.view().time is None and "nbc-time" not in kernel.handles[-1].bundles[-1]["text/html"]
    profiler = FakeProfiler()
    off = Dashboard(display="widget", time_panel=False)
    model.train(1, batches(20), callbacks=[profiler, off])
    assert profiler.reads == 0 and off.view().time is None
    text = Dashboard(display="text", file=__import__("io").StringIO())
    model.train(1, batches(20), callbacks=[profiler, text])
    assert profiler.reads == 0  # a terminal shows no bar: print(profiler) says it
    bar = ProgressBar(display="widget")  # only the Dashboard has the bar
    model.train(1, batches(20), callbacks=[profiler, bar])
    assert profiler.reads == 0 and "nbc-time" not in kernel.handles[-1].bundles[-1]["text/html"]


def test_time_panel_true_without_a_profiler_warns_and_a_bad_value_is_refused(kernel: FakeDisplay) -> None:
    model, _ = new_model()
    with pytest.warns(RuntimeWarning, match=r"callbacks=\[CallbackProfiler\(\), Dashboard\(time_panel=True\)\]"):
        model.train(1, batches(10), callbacks=[Dashboard(display="widget", time_panel=True)])
    with pytest.raises(ValueError, match="time_panel must be 'auto', True or False, got 'yes'"):
        Dashboard(time_panel="yes")


def test_a_standalone_eval_shows_the_evaluation_share(kernel: FakeDisplay) -> None:
    model, _ = new_model()
    profiler = CallbackProfiler()
    dash = Dashboard(display="widget")
    model.eval(batches(10), callbacks=[profiler, dash])
    facts = dash.view().time
    assert facts is not None and [seg.key for seg in facts.segments][0] == "eval"
    assert "evaluation" in kernel.handles[-1].bundles[-1]["text/plain"]


def test_with_time_leaves_a_bundle_without_the_bar_as_it_is() -> None:
    clock, state = FakeClock(), TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=10)
    bundle = {"text/html": "<div></div>", "text/plain": "done"}
    assert with_time(bundle, state.view(clock()), Words("en")) == bundle
    state.set_time(time_facts(FIT, 10.0))
    both = with_time(bundle, state.view(clock()), Words("en"))
    assert both["text/html"].startswith("<div></div><div class=\"nbc-time\"") and both["text/plain"].startswith("done\n")
