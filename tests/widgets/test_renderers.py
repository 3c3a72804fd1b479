"""Renderers without a kernel: the data the widget is sent, the static snapshot, the text lines.

``IPython.display.display`` is replaced by a sink that records what a notebook
would show; the anywidget model is real (outside a kernel its comm is a dummy).
"""
from __future__ import annotations

import base64
import io
import json
import random
import re
import threading
import time
import warnings
from html import unescape
from typing import Any

import pytest

from nbcallback.train import Callback
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar
from tests.widgets.conftest import FakeClock
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.format import bars, status_line, table
from nbcallback.widgets.render_html import fragment, payload, plot_bundle, snapshot_bundle
from nbcallback.widgets.render_text import LogRenderer, TTYRenderer
from nbcallback.widgets.state import TrainingState
from tests.widgets._reader import accumulate, float32, wire_size
from tests.widgets.conftest import Pace, Ticker, batches, new_model, record_views

pytest.importorskip("anywidget")

from nbcallback.widgets.render_widget import DashboardWidget, StaticRenderer, WidgetRenderer  # noqa: E402

ALL = frozenset({"progress", "table", "plot", "controls"})
PROGRESS = frozenset({"progress", "table"})


class FakeHandle:
    def __init__(self, sink: "FakeDisplay", bundle: Any) -> None:
        self.sink = sink
        self.bundles = [bundle]
        self.metadata: list[Any] = [None]

    def update(self, obj: Any, raw: bool = False, metadata: Any = None, **kwargs: Any) -> None:
        assert raw, "the end of a run replaces the view with a mime bundle"
        self.bundles.append(obj)
        self.metadata.append(metadata)
        self.sink.updates += 1


class FakeDisplay:
    """Stands in for IPython.display.display: records what would be shown."""

    def __init__(self) -> None:
        self.handles: list[FakeHandle] = []
        self.plain: list[tuple[Any, Any]] = []
        self.updates = 0

    def __call__(self, obj: Any, raw: bool = False, display_id: Any = None, metadata: Any = None, **kw: Any) -> Any:
        assert raw or isinstance(obj, DashboardWidget), f"renderers send mime bundles or the widget, got {obj!r}"
        if display_id:
            handle = FakeHandle(self, obj)
            self.handles.append(handle)
            return handle
        self.plain.append((obj, metadata))
        return None


@pytest.fixture()
def sink(monkeypatch: pytest.MonkeyPatch) -> FakeDisplay:
    import IPython.display

    fake = FakeDisplay()
    monkeypatch.setattr(IPython.display, "display", fake)
    return fake


@pytest.fixture()
def kernel(monkeypatch: pytest.MonkeyPatch, sink: FakeDisplay) -> FakeDisplay:
    """Make the callbacks believe they run in a notebook kernel."""
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    return sink


def _state(phase: str = "train") -> tuple[TrainingState, FakeClock]:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=100, has_validation=True, eval_steps=20, lr=0.1)
    state.begin_epoch(1, clock())
    for step in (10, 20, 30):
        clock.advance(0.1)
        state.record_steps(clock(), step, [1.0 / step] * 10)
    state.add_eval_row(clock(), {"accuracy": 0.5, "<b>x</b>": 1.0}, epoch=1, step=30)
    if phase == "eval":
        state.begin_eval(clock(), 20)
        state.record_eval_steps(clock(), 5)
    return state, clock


def _panels(facts: dict[str, Any]) -> list[Panel]:
    return default_panels(facts.get("metrics", ()), lr=bool(facts.get("lr_changed")),
                          loss_positive=bool(facts.get("loss_positive", True)))


# ---------------------------------------------------------------------- payload: what the browser lays out


def _text(html: str) -> str:
    """What a reader sees of an HTML fragment: its text, tags dropped."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def _unstyled(html: str) -> str:
    """An HTML fragment without its inline styles and the snapshot's " · " separators."""
    return re.sub(r' style="[^"]*"', "", html).replace(" · <", "<")


def _has_status(view: dict[str, Any]) -> bool:
    """Whether a widget view shows a status line."""
    return 'class="nbc-status-text"' in view["html"]["head"]


def _bar_kinds(view: dict[str, Any]) -> list[str]:
    """The kinds of the bars a widget view shows, in order."""
    return re.findall(r'class="nbc-bar" data-kind="(\w+)"', view["html"]["head"])


def test_the_picture_has_the_bars_status_and_table() -> None:
    state, clock = _state()
    view = state.view(clock())
    epoch, train = bars(view)
    assert (epoch["kind"], epoch["label"], epoch["value"], epoch["max"]) == ("epoch", "epoch 1/2", 0.3, 2.0)
    assert epoch["text"].startswith("15%") and "loss 0.0" in epoch["text"] and "lr 0.1" in epoch["text"]
    assert (train["kind"], train["label"], train["value"], train["max"]) == ("train", "train", 30.0, 100.0)
    assert "30/100" in train["text"] and "100.0 it/s" in train["text"]
    assert status_line(view) == {"state": "running", "text": "running", "note": ""}
    assert table(view) == (["epoch", "step", "accuracy", "<b>x</b>", "time"], [["1", "30", "0.5", "1", "00:00"]])
    # The validation pass has its own bar.
    state.begin_eval(clock(), 20)
    state.record_eval_steps(clock(), 5)
    during = state.view(clock())
    assert [bar["kind"] for bar in bars(during)] == ["epoch", "eval"] and bars(during)[1]["value"] == 5.0
    assert status_line(during)["text"] == "running (validation)"


def test_the_widget_gets_the_picture_as_html_and_the_snapshot_shows_the_same() -> None:
    state, clock = _state()
    data = payload(state.view(clock()), PROGRESS, hint="press interrupt")
    assert json.loads(json.dumps(data)) == data  # plain JSON: what a message can carry
    assert data["state"] == "running" and set(data["html"]) == {"head", "table"}
    head, grid = data["html"]["head"], data["html"]["table"]
    assert head.count('class="nbc-bar"') == 2 and 'data-kind="epoch"' in head and 'data-kind="train"' in head
    assert 'style="width:15.0%"' in head and 'style="width:30.0%"' in head  # the fills' widths
    assert _text(head).startswith("epoch 1/2 15%") and "train 30% · 30/100" in _text(head)
    assert 'data-state="running"' in head and "press interrupt" in _text(head)
    assert "&lt;b&gt;x&lt;/b&gt;" in grid and "<b>x</b>" not in grid  # escaped once, in Python
    assert _text(grid) == "epoch step accuracy <b>x</b> time 1 30 0.5 1 00:00"
    assert '<td class="nbc-num">0.5</td>' in grid  # numbers right-aligned
    # The snapshot is the same fragment with inline styles (a saved notebook has no stylesheet).
    state.finish(clock(), "finished")
    view = state.view(clock(), live_rows=None)
    live = fragment(view, PROGRESS)
    snapshot = snapshot_bundle(view, PROGRESS)["text/html"]
    assert _unstyled(live["head"]) in _unstyled(snapshot) and _unstyled(live["table"]) in _unstyled(snapshot)
    # A plot beside a progress bar leaves the status line to it: no bars, no status, no table.
    plot_only = payload(state.view(clock()), frozenset({"plot"}), status=False)
    assert plot_only == {"state": "finished", "html": {"head": "", "table": ""}}


def test_payload_of_a_stand_alone_evaluation_and_of_an_lr_change() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), kind="eval", eval_steps=50)
    state.begin_eval(clock(), 50)
    state.record_eval_steps(clock(), 25)
    assert [(b["kind"], b["label"], b["value"], b["max"]) for b in bars(state.view(clock()))] == [
        ("eval", "evaluation", 25.0, 50.0)]
    head = payload(state.view(clock()), PROGRESS)["html"]["head"]
    assert head.count('class="nbc-bar"') == 1 and _text(head).startswith("evaluation 50%")
    train, clock = _state()
    train.set_lr(0.02, changed_at=30)
    assert status_line(train.view(clock()))["note"] == "lr set to 0.02 at step 30"
    assert '<span class="nbc-note">lr set to 0.02 at step 30</span>' in payload(train.view(clock()), PROGRESS)[
        "html"]["head"]


def test_a_loss_that_blew_up_shows_as_nan_not_as_the_last_good_average() -> None:
    state, clock = _state()  # smoothed loss over steps 1-30, all finite
    finite = bars(state.view(clock()))[0]["text"]
    state.record_steps(clock(), 35, [0.02, float("nan"), float("nan"), float("inf"), float("nan")])
    view = state.view(clock())
    assert view.loss is not None and view.loss == view.loss  # the average leaves the NaN steps out ...
    assert "loss nan" in bars(view)[0]["text"] and "loss nan" not in finite  # ... but the bar shows the blow-up
    assert "loss nan" in _text(payload(view, frozenset({"progress"}))["html"]["head"])
    state.finish(clock(), "finished")
    out = io.StringIO()
    LogRenderer(frozenset({"progress"}), out).finish(state.view(clock(), live_rows=None), None)
    assert out.getvalue().splitlines()[0].endswith(", loss nan")
    state.start(clock(), epochs=1, steps_per_epoch=10)
    state.record_steps(clock(), 2, [float("nan"), 0.5])  # a NaN step, then a finite one: the average again
    assert "loss 0.5" in bars(state.view(clock()))[0]["text"]


def test_text_table_of_an_evaluation_without_metrics_is_aligned() -> None:
    """A one-column table (``Model.eval`` with no metrics: only the time) is a table, not "rows omitted" lines."""
    from nbcallback.widgets.format import text_table

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), kind="eval", eval_steps=5)
    clock.advance(65)
    state.add_eval_row(clock(), {}, epoch=None, step=None)
    assert text_table(state.view(clock(), live_rows=None)) == [" time", "01:05"]
    html = snapshot_bundle(state.view(clock(), live_rows=None), PROGRESS)["text/html"]
    assert "colspan" not in html and "01:05" in html


def test_a_chinese_text_table_lines_up_in_terminal_columns() -> None:
    """A Chinese header word takes two terminal columns a character: the numbers below it end where it ends."""
    import unicodedata

    from nbcallback.widgets.format import text_table
    from nbcallback.widgets.words import Words

    def columns(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=100)
    clock.advance(61)
    state.add_eval_row(clock(), {"accuracy": 0.7703, "eval_loss": 1.054}, epoch=1, step=100)
    lines = text_table(state.view(clock(), live_rows=None), Words("zh_CN"))
    assert "轮次" in lines[0] and "用时" in lines[0]
    assert len({columns(line) for line in lines}) == 1, lines  # header and row are equally wide
    header, row = lines
    # each column's right edge (where a cell ends) is the same in the header and the row
    edges = [columns(header[: header.index(word) + len(word)]) for word in header.split()]
    assert edges == [columns(row[: row.index(cell) + len(cell)]) for cell in row.split()], lines


# ---------------------------------------------------------------------- the static snapshot


def test_snapshot_html_shows_bars_status_table_and_summary_escaped() -> None:
    state, clock = _state()
    state.finish(clock(), "stopped", "stopped by user at epoch 1, step 30 (Stop button)")
    view = state.view(clock(), live_rows=None)
    html = snapshot_bundle(view, PROGRESS)["text/html"]
    assert html.startswith('<div class="nbc-snapshot"') and "<script" not in html and "<img" not in html
    assert html.count("width:15.0%") == 1 and html.count("width:30.0%") == 1  # epoch and step bars, as stopped
    assert "■ stopped by user at epoch 1, step 30 (Stop button)" in html
    assert ">epoch</th>" in html and ">0.5</td>" in html and html.count("<tr>") == 2
    assert html.count("padding:") >= 2, "cells carry their own padding (marimo ignores cellpadding)"
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "Training stopped by user at epoch 1, step 30 (Stop button): 0/2 epochs, 30/200 steps" in html
    # A plot-only callback beside a progress bar shows no status and no summary of its own.
    plot_only = snapshot_bundle(view, frozenset({"plot"}), status=False)["text/html"]
    assert plot_only == snapshot_bundle(view, frozenset(), status=False)["text/html"]
    assert "stopped" not in plot_only


def test_snapshot_text_says_what_happened_on_its_own() -> None:
    state, clock = _state()
    state.set_lr(0.02, changed_at=30)
    state.finish(clock(), "error", "failed with ValueError at epoch 1, step 30", error="ValueError: bad <batch>")
    view = state.view(clock(), live_rows=None)
    lines = snapshot_bundle(view, PROGRESS, has_plot=True)["text/plain"].splitlines()
    assert lines[0].startswith("Training failed with ValueError at epoch 1, step 30: 0/2 epochs, 30/200 steps")
    assert lines[1] == "ValueError: bad <batch>"
    assert lines[2] == "lr set to 0.02 at step 30"
    assert lines[3].split() == ["epoch", "step", "accuracy", "<b>x</b>", "time"]
    assert lines[4].split()[:3] == ["1", "30", "0.5"]
    assert lines[-1] == "(loss plot: the PNG output below)"
    bundle = snapshot_bundle(view, PROGRESS, has_plot=True)
    assert set(bundle) == {"text/html", "text/plain"}
    assert "ValueError: bad &lt;batch&gt;" in bundle["text/html"]


def test_snapshot_of_many_evaluations_keeps_head_tail_and_the_count() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1000, steps_per_epoch=1, has_validation=True)
    for epoch in range(1, 1001):
        state.add_eval_row(clock(), {"accuracy": epoch / 1000}, epoch=epoch, step=epoch)
    state.finish(clock(), "finished")
    bundle = snapshot_bundle(state.view(clock(), live_rows=None, max_rows=200), PROGRESS)
    html = bundle["text/html"]
    assert html.count("<tr>") == 1 + 200 + 1  # header, rows, the "omitted" line
    assert "800 rows omitted" in html
    assert len(html.encode()) < 60_000
    assert "(last 10 of 1000 evaluations" in bundle["text/plain"]


def test_plot_bundle_is_an_image_png_with_its_css_width_or_says_why_not() -> None:
    state, clock = _state()
    state.finish(clock(), "finished")
    view = state.view(clock(), live_rows=None)
    image, metadata = plot_bundle(view, b"\x89PNG data", 760)
    assert set(image) == {"image/png", "text/plain"}
    assert base64.b64decode(image["image/png"]) == b"\x89PNG data"
    assert image["text/plain"].startswith("<loss plot, PNG: Training finished")
    assert metadata == {"image/png": {"width": 760}}  # twice the pixels, shown at CSS size
    assert plot_bundle(view, b"\x89PNG data") == (image, {})
    assert plot_bundle(view, None) == ({"text/plain": "(no loss plot: it could not be drawn, see the warning above)"}, {})
    empty = TrainingState()
    empty.start(0.0, epochs=1, steps_per_epoch=10)
    empty.finish(0.0, "error", "failed")
    assert "no training step" in plot_bundle(empty.view(0.0), None)[0]["text/plain"]


# ---------------------------------------------------------------------- the live widget


def test_widget_gets_spec_and_view_and_deltas_add_up_to_the_series(sink: FakeDisplay) -> None:
    stops: list[bool] = []
    lrs: list[float] = []
    renderer = WidgetRenderer(ALL, panels_for=_panels, on_stop=lambda: stops.append(True), on_lr=lrs.append,
                              hint="stop with the button")
    state, clock = _state()
    renderer.open(state.view(clock()), state)
    assert len(sink.handles) == 1 and isinstance(sink.handles[0].bundles[0], DashboardWidget)
    widget = renderer.widget
    assert widget is sink.handles[0].bundles[0]
    spec = widget.spec
    assert spec["parts"] == sorted(ALL) and spec["x_range"] == [0.0, 200.0] and spec["epoch_marks"] == [100.0]
    assert [p["title"] for p in spec["panels"]] == ["loss", "accuracy", "<b>x</b>"]
    assert spec["panels"][0]["scale"] == "log" and spec["panels"][0]["lines"][0]["style"] == "band"
    assert spec["labels"]["stop"] == "Stop" and spec["colors"]["train"] == ["--jp-brand-color1", "#1976d2"]
    views = record_views(widget)
    first = widget.view  # the comm_open carries everything so far
    assert first["controls"] == {"enabled": True, "lr": 0.1} and "stop with the button" in first["html"]["head"]
    assert set(first["series"]) == {"loss", "eval:accuracy", "eval:<b>x</b>", "lr"}
    # Train on: each update carries only what is new.
    step = 30
    for _ in range(40):
        clock.advance(0.1)
        step += 4
        state.record_steps(clock(), step, [1.0 / step] * 4)
        renderer.update(state.view(clock()), state)
    assert len(views) == 41
    assert all(wire_size(v) < 2048 for v in views[1:])  # a tick stays small
    assert all(set(v["series"]) <= {"loss", "lr"} for v in views[1:])  # evaluation points are not resent
    readers = accumulate(views)
    final = state.plot_data()
    assert readers["loss"].points()["x"] == [int(x) for x in final.series["loss"]["x"]]
    # Every number of a curve reaches the page as a float32: the messages' columns as binary buffers, the trait's
    # (the first view) and the tails as JSON numbers; the trait holds lists, never bytes (Colab drops buffers there).
    held, kept = readers["loss"].points()["y"], final.series["loss"]["y"]
    assert held == float32(kept) != kept
    assert all(isinstance(first["series"]["loss"][column], list) for column in ("x", "y", "lo", "hi"))
    assert readers["loss"].points()["x"][-1] == step == 190
    assert readers["eval:accuracy"].points()["y"] == [0.5]
    lr = readers["lr"].points()  # the lr line runs on to the step: its tail reads exactly its last point's lr
    assert lr["x"][-1] == 190 and lr["y"][-1] == lr["y"][-2] == float32([0.1])[0]
    # A reloaded page says hello: the next update sends everything again, as the trait a later view starts from.
    widget._message(widget, {"type": "hello"}, [])
    renderer.update(state.view(clock()), state)
    assert views[-1] is widget.view and views[-1]["series"]["loss"]["start"] == 0
    assert isinstance(widget.view["series"]["loss"]["y"], list)
    assert accumulate([views[-1]])["loss"].points() == readers["loss"].points()
    # A page whose widget manager dropped a message's buffers says so: everything again, then JSON columns only.
    widget._message(widget, {"type": "hello", "binary": False}, [])
    for step in (194, 198):
        clock.advance(0.5)
        state.record_steps(clock(), step, [0.01] * 4)
        renderer.update(state.view(clock()), state)
    assert views[-2] is widget.view and views[-1] is not widget.view  # the full view, then a message
    assert isinstance(views[-1]["series"]["loss"]["y"], list) and views[-1]["series"]["loss"]["start"] > 0
    assert accumulate(views)["loss"].points()["x"][-1] == 198
    # Clicks: the handlers only store the request; a bad lr is ignored.
    widget._message(widget, {"type": "stop"}, [])
    widget._message(widget, {"type": "lr", "value": "0.01"}, [])
    widget._message(widget, {"type": "lr", "value": -1}, [])
    widget._message(widget, {"type": "lr", "value": "fast"}, [])
    widget._message(widget, "not a dict", [])
    assert stops == [True] and lrs == [0.01]


def test_the_wire_form_of_the_series_is_float32_and_json_safe() -> None:
    """A message's columns as float32 buffers, the trait's as float32 JSON numbers; a value beyond float32 (a
    diverging loss) is a gap, never an infinity that JSON cannot carry; an empty column stays empty."""
    from array import array

    from nbcallback.widgets.render_widget import wire_series

    def view() -> dict[str, Any]:
        return {"series": {"loss": {"gen": 0, "start": 0, "x": [1, 2, 3], "y": [0.1, 1e39, None],
                                    "lo": [0.1, None, 2.5], "hi": [], "tail": {"x": 4, "y": 1e40, "lo": 0.3}}}}

    sent = view()
    paths, buffers = wire_series(sent, binary=True)
    assert paths == [["series", "loss", column] for column in ("x", "y", "lo")]  # the empty hi stays []
    assert sent["series"]["loss"]["hi"] == [] and sent["series"]["loss"]["y"] is None
    assert list(array("f", buffers[0])) == [1.0, 2.0, 3.0]
    trait = view()
    assert wire_series(trait, binary=False) == ([], [])
    loss = trait["series"]["loss"]
    assert loss["x"] == [1, 2, 3] and loss["y"] == [array("f", [0.1])[0], None, None]
    assert loss["tail"] == {"x": 4, "y": None, "lo": array("f", [0.3])[0]}
    json.dumps(trait, allow_nan=False)  # what the kernel's session does with a message: no infinity, no NaN
    json.dumps(sent, allow_nan=False)


def test_a_new_metric_resends_the_panels_once(sink: FakeDisplay) -> None:
    renderer = WidgetRenderer(frozenset({"plot"}), panels_for=_panels)
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=10, has_validation=True)
    renderer.open(state.view(clock()), state)
    widget = renderer.widget
    specs = []
    widget.observe(lambda change: specs.append(change["new"]), names="spec")
    state.record_steps(clock(), 10, [1.0] * 10)
    renderer.update(state.view(clock()), state)
    assert specs == []  # the same panels: no spec message
    state.add_eval_row(clock(), {"accuracy": 0.7}, epoch=1, step=10)
    renderer.update(state.view(clock()), state)
    renderer.update(state.view(clock()), state)
    assert [[p["title"] for p in s["panels"]] for s in specs] == [["loss", "accuracy"]]
    state.record_steps(clock(), 25, [1.0] * 15)  # past the plan: the x range grows
    renderer.update(state.view(clock()), state)
    assert specs[-1]["x_range"] == [0.0, 25.0]


def test_finish_replaces_the_widget_with_the_snapshot_and_the_png(sink: FakeDisplay) -> None:
    renderer = WidgetRenderer(ALL, panels_for=_panels)
    state, clock = _state()
    renderer.open(state.view(clock()), state)
    widget = renderer.widget
    assert widget.comm is not None
    state.finish(clock(), "finished")
    renderer.finish(state.view(clock(), live_rows=None), b"\x89PNG final", True, 760)
    handle = sink.handles[0]
    final = handle.bundles[-1]
    assert set(final) == {"text/html", "text/plain"} and "✔ finished" in final["text/html"]
    assert final["text/plain"].startswith("Training finished") and "PNG output below" in final["text/plain"]
    (image, metadata), = sink.plain
    assert base64.b64decode(image["image/png"]) == b"\x89PNG final" and metadata == {"image/png": {"width": 760}}
    assert widget.comm is None and renderer.widget is None  # closed: nothing left for the saved notebook
    assert widget.layout.comm is None  # and the Layout model every DOMWidget brings along
    # A plot alone: the PNG takes the widget's place, no HTML beside it.
    alone = WidgetRenderer(frozenset({"plot"}), panels_for=_panels)
    alone.open(state.view(clock()), state, status=False)
    alone.finish(state.view(clock(), live_rows=None), b"\x89PNG alone", False, 380)
    assert set(sink.handles[1].bundles[-1]) == {"image/png", "text/plain"}
    assert sink.handles[1].metadata[-1] == {"image/png": {"width": 380}}
    assert len(sink.plain) == 1


def test_abort_closes_the_widget(sink: FakeDisplay) -> None:
    renderer = WidgetRenderer(PROGRESS)
    state, clock = _state()
    renderer.open(state.view(clock()), state)
    widget = renderer.widget
    renderer.abort()
    assert widget.comm is None and widget.layout.comm is None
    renderer.update(state.view(clock()), state)  # after the end: nothing, no error


# ---------------------------------------------------------------------- static HTML


def test_static_renderer_updates_one_display_id_and_keeps_a_slot_for_the_plot(sink: FakeDisplay) -> None:
    state, clock = _state()
    renderer = StaticRenderer(frozenset({"progress", "table", "plot"}), live=True)
    renderer.open(state.view(clock()), state)
    assert len(sink.handles) == 2
    assert sink.handles[1].bundles[0] == {"text/plain": "(loss plot: drawn here when the run ends)"}
    renderer.update(state.view(clock()), state)
    state.finish(clock(), "stopped", "stopped by user at epoch 1, step 30 (Stop button)")
    renderer.finish(state.view(clock(), live_rows=None), b"\x89PNG final", True, 760)
    assert len(sink.handles) == 2 and not sink.plain
    assert "stopped by user at epoch 1, step 30" in sink.handles[0].bundles[-1]["text/plain"]
    assert base64.b64decode(sink.handles[1].bundles[-1]["image/png"]) == b"\x89PNG final"
    final_only = StaticRenderer(frozenset({"plot"}), live=False)
    final_only.open(state.view(clock()), state)
    final_only.finish(state.view(clock(), live_rows=None), None)  # no PNG: a line says why, not a broken image
    assert [set(b) for b, _ in sink.plain] == [{"text/html", "text/plain"}, {"text/plain"}]
    assert "could not be drawn" in sink.plain[1][0]["text/plain"]


# ---------------------------------------------------------------------- the text renderers


def test_log_renderer_lines() -> None:
    out = io.StringIO()
    renderer = LogRenderer(PROGRESS, out, log_interval=1.0)
    state, clock = _state()
    renderer.update(state.view(clock()), state)  # the first update announces the run
    renderer.update(state.view(clock()), state)  # too soon for a progress line
    clock.advance(2.0)
    state.record_steps(clock(), 50, [0.5] * 20)
    renderer.update(state.view(clock()), state)
    state.end_epoch(1, clock(), validated=True)
    renderer.event("epoch_end", state.view(clock()))
    state.finish(clock(), "finished")
    renderer.finish(state.view(clock(), live_rows=None), None)
    lines = out.getvalue().splitlines()
    assert lines[0] == "training: 2 epochs x 100 steps with validation"
    assert lines[1].startswith("[00:02] epoch 1/2 train 50/100 [") and "it/s" in lines[1]
    assert lines[2].startswith("epoch 1/2 · loss ") and "accuracy 0.5" in lines[2]
    assert lines[3].startswith("Training finished: 0/2 epochs, 50/200 steps")
    assert lines[4].split() == ["epoch", "step", "accuracy", "<b>x</b>", "time"]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    plot_out = io.StringIO()
    plot = LogRenderer(frozenset({"plot"}), plot_out)
    plot.plot_note = "loss plot: runs/loss.png"
    plot.finish(state.view(clock()), b"png")
    assert plot_out.getvalue() == "loss plot: runs/loss.png\n"


def test_tty_renderer_rewrites_one_line_and_ascii_streams_get_hashes() -> None:
    class Ascii(io.StringIO):
        encoding = "ascii"

    for stream, full in ((io.StringIO(), "█"), (Ascii(), "#")):
        renderer = TTYRenderer(PROGRESS, stream)
        state, clock = _state()
        renderer.update(state.view(clock()), state)
        renderer.update(state.view(clock()), state)
        text = stream.getvalue()
        assert text.count("\r") == 2 and "\n" not in text
        assert text.rsplit("\r", 1)[-1].startswith("epoch 1/2 train |" + full * 6)  # 30 % of 20 cells
        state.finish(clock(), "finished")
        renderer.finish(state.view(clock(), live_rows=None), None)
        assert stream.getvalue().splitlines()[-3].rsplit("\r", 1)[-1].startswith("Training finished")


def test_tty_line_fits_the_terminal_in_columns_chinese_ones_counting_two(monkeypatch: pytest.MonkeyPatch) -> None:
    # Cut by characters, a Chinese line was up to a tenth wider than the terminal: it wrapped, and every refresh
    # then left a stale copy of it on the screen.
    import unicodedata

    from nbcallback.widgets.words import Words

    def columns(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)

    monkeypatch.setenv("COLUMNS", "50")
    stream = io.StringIO()
    renderer = TTYRenderer(PROGRESS, stream, Words("zh_CN"))
    state, clock = _state()
    renderer.update(state.view(clock()), state)
    first = stream.getvalue().split("\r")[-1]
    assert "第 1/2 轮" in first and 47 <= columns(first) <= 49  # cut to the 49 columns left of the cursor
    renderer._rewrite("验证 1/20")  # a shorter line next: padded with spaces over the whole old width
    second = stream.getvalue().split("\r")[-1]
    assert second.startswith("验证 1/20 ") and columns(second) == columns(first)
    renderer._line("训练已完成：" + "很长的一行" * 10)  # a permanent line is kept whole: it may wrap
    assert stream.getvalue().endswith("很长的一行" * 10 + "\n")


# ---------------------------------------------------------------------- callbacks in a (fake) notebook


@pytest.mark.parametrize("factory", [ProgressBar, LiveLossPlot, Dashboard])
def test_callbacks_open_one_widget_per_run_and_leave_the_snapshot(kernel: FakeDisplay, factory) -> None:
    model, _ = new_model()
    callback = factory(display="widget")
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[callback])
    assert len(kernel.handles) == 1
    widget = kernel.handles[0].bundles[0]
    assert isinstance(widget, DashboardWidget) and widget.comm is None and widget.layout.comm is None
    final = kernel.handles[0].bundles[-1]
    has_plot = factory is not ProgressBar
    assert "Training finished: 2/2 epochs, 80/80 steps" in final["text/plain"]
    assert final["text/html"].count("✔ finished") == 1  # alone, the plot shows the run's status too
    if factory is not LiveLossPlot:
        assert final["text/html"].count("<tr>") == 3  # header and two validations
    assert len(kernel.plain) == has_plot  # the PNG: its own output below the snapshot
    if has_plot:
        png = base64.b64decode(kernel.plain[0][0]["image/png"])
        assert png == callback.last_png and png[:8] == b"\x89PNG\r\n\x1a\n"
    # Outside a real kernel no subshells are advertised: the Dashboard shows no controls.
    assert "controls" not in widget.spec["parts"]


def test_the_final_png_decodes_at_twice_its_css_size(kernel: FakeDisplay) -> None:
    from PIL import Image

    from nbcallback.widgets.plot import PANEL_HEIGHT, PANEL_WIDTH

    model, opt = new_model()

    class Decay(Callback):
        def on_train_epoch_end(self, run_context) -> None:
            opt.param_groups[0]["lr"] *= 0.5

    dash = Dashboard(display="widget")
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[Decay(), dash])
    (image, metadata), = kernel.plain
    png = Image.open(io.BytesIO(base64.b64decode(image["image/png"])))
    png.load()
    # loss, accuracy and learning rate (it changed): three panels in a row.
    assert metadata == {"image/png": {"width": 3 * PANEL_WIDTH}}
    assert png.size == (2 * 3 * PANEL_WIDTH, 2 * PANEL_HEIGHT)
    colours = png.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is not None and len(colours) > 8  # a picture, not a blank card
    assert image["text/plain"].startswith("<loss plot, PNG: Training finished: 2/2 epochs")


def _record_views(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[dict[str, Any]]]:
    """id(renderer) -> every ``view`` value its widget was given, the one it opened with first."""
    views: dict[int, list[dict[str, Any]]] = {}
    for name in ("open", "update"):
        original = getattr(WidgetRenderer, name)

        def spy(self, view, state, status=True, _original=original):
            _original(self, view, state, status)
            if self.widget is not None:
                views.setdefault(id(self), []).append(self.widget.view)

        monkeypatch.setattr(WidgetRenderer, name, spy)
    return views


@pytest.mark.parametrize("order", ["plot first", "bar first"])
def test_progress_bar_and_loss_plot_together_show_one_status_line(kernel: FakeDisplay, monkeypatch, order) -> None:
    views = _record_views(monkeypatch)
    model, _ = new_model()
    clock = FakeClock()
    plot, bar = LiveLossPlot(display="widget", clock=clock), ProgressBar(display="widget", clock=clock)
    callbacks = [plot, bar] if order == "plot first" else [bar, plot]
    model.fit(1, batches(60), batches(5, seed=1), callbacks=[Ticker(clock, 0.05), *callbacks])
    plot_views, bar_views = views[id(plot.renderer)], views[id(bar.renderer)]
    assert len(plot_views) > 3 and len(bar_views) > 3
    assert not any(_has_status(v) for v in plot_views)  # from the first view on: no flicker of a second line
    assert all(_has_status(v) for v in bar_views)
    finals = [h.bundles[-1] for h in kernel.handles]
    assert sorted(tuple(sorted(f)) for f in finals) == [("image/png", "text/plain"), ("text/html", "text/plain")]
    html = "".join(f.get("text/html", "") for f in finals)
    assert html.count("✔ finished") == 1 and "Training finished" in html


def test_a_progress_bar_that_shows_nothing_leaves_the_status_to_the_plot(kernel: FakeDisplay, monkeypatch) -> None:
    views = _record_views(monkeypatch)
    model, _ = new_model()
    plot = LiveLossPlot(display="widget")
    model.train(1, batches(20), callbacks=[plot, ProgressBar(display="off")])
    assert all(_has_status(v) for v in views[id(plot.renderer)])


def test_background_runs_show_one_status_line_too(kernel: FakeDisplay, monkeypatch) -> None:
    from nbcallback.widgets import run_in_background

    views = _record_views(monkeypatch)
    model, _ = new_model()
    plot, bar = LiveLossPlot(display="widget"), ProgressBar(display="widget")
    run_in_background(model.train, 1, batches(20), callbacks=[plot, bar]).wait(timeout=60)
    assert not any(_has_status(v) for v in views[id(plot.renderer)])
    assert all(_has_status(v) for v in views[id(bar.renderer)])


def test_the_lr_box_gets_a_rate_to_change_in_training_only(kernel: FakeDisplay, monkeypatch) -> None:
    # The page enables the box only with a rate (controlsState in dashboard.js); Model.eval has none to change.
    from nbcallback.widgets import run_in_background

    views: dict[int, list[dict[str, Any]]] = {}
    traits = WidgetRenderer._traits

    def spy(self, view, state, status, full):  # every view the page gets: the opening one, then each update
        spec, data = traits(self, view, state, status, full)
        views.setdefault(id(self), []).append(data)
        return spec, data

    monkeypatch.setattr(WidgetRenderer, "_traits", spy)
    model, opt = new_model()
    fit, evaluation = Dashboard(display="widget"), Dashboard(display="widget")
    run_in_background(model.fit, 1, batches(20), batches(5, seed=1), callbacks=[fit, Pace(0.03)]).wait(timeout=60)
    run_in_background(model.eval, batches(5), callbacks=[evaluation]).wait(timeout=60)
    # Opened before the run starts (so in the cell that started it), the first view knows no rate yet; the
    # view sent where the epoch begins (at once, or by the timer) has it.
    first, *rest = views[id(fit.renderer)]
    assert first["controls"] == {"enabled": True, "lr": None} and rest
    assert all(view["controls"]["lr"] == opt.param_groups[0]["lr"] for view in rest)
    assert all(view["controls"]["lr"] is None for view in views[id(evaluation.renderer)])


def test_display_failure_never_stops_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no front end")

    monkeypatch.setattr(IPython.display, "display", broken)
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    model, _ = new_model()
    for factory in (ProgressBar, Dashboard):
        callback = factory(display="widget")
        with pytest.warns(RuntimeWarning, match="display failed"):
            model.train(1, batches(20), callbacks=[callback])
        assert callback.view().status == "finished" and callback.view().steps_done == 20


def test_eval_phase_reaches_the_widget_during_fit(kernel: FakeDisplay, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    model, _ = new_model()
    bar = ProgressBar(display="widget", clock=clock)
    seen: list[list[str]] = []
    original = WidgetRenderer.update

    def spy(self, view, state, status=True):
        if not hasattr(self, "sent"):
            self.sent = record_views(self.widget)
        original(self, view, state, status)
        seen.append(_bar_kinds(self.sent[-1]))

    monkeypatch.setattr(WidgetRenderer, "update", spy)
    model.fit(1, batches(30), batches(30, seed=1), callbacks=[Ticker(clock, 0.05), bar])
    assert ["epoch", "eval"] in seen and ["epoch", "train"] in seen


class StallAtEpoch(Callback):
    """Make the first training step of epoch ``epoch`` wait ``seconds`` for its batch, as a loader restarting its
    workers does; ``window`` is when it waited (monotonic seconds)."""

    def __init__(self, epoch: int, seconds: float) -> None:
        self.epoch, self.seconds = epoch, seconds
        self.window: tuple[float, float] | None = None
        self._first = True

    def on_train_epoch_begin(self, run_context) -> None:
        self._first = run_context.original_args().cur_epoch_num == self.epoch

    def on_train_step_begin(self, run_context) -> None:
        if self._first:
            self._first = False
            began = time.monotonic()
            time.sleep(self.seconds)
            self.window = (began, time.monotonic())


def test_a_new_epoch_shows_while_its_first_step_stalls(kernel: FakeDisplay, monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation ends, epoch 2 begins and its first batch takes a second: within one refresh interval the page
    shows epoch 2's training bar at 0, not the validation it last saw (a frozen bar reads as a hung kernel); the
    extra send keeps the interval between sends."""
    interval = 0.2
    arrivals: list[tuple[float, dict[str, Any]]] = []
    original = WidgetRenderer.update

    def spy(self, view, state, status=True):
        if not hasattr(self, "sent"):
            self.sent = record_views(self.widget)
        original(self, view, state, status)
        arrivals.append((time.monotonic(), self.sent[-1]))

    monkeypatch.setattr(WidgetRenderer, "update", spy)
    model, _ = new_model()
    stall = StallAtEpoch(2, seconds=1.0)
    bar = ProgressBar(display="widget", refresh_interval=interval)
    model.fit(2, batches(40), batches(10, seed=1), callbacks=[stall, bar])
    assert bar.view().status == "finished" and stall.window is not None
    began, ended = stall.window
    during = [(at, view) for at, view in arrivals if began <= at <= ended]
    assert during, "nothing reached the page while the first step of epoch 2 waited for its batch"
    at, view = during[0]
    head = view["html"]["head"]
    assert _bar_kinds(view) == ["epoch", "train"] and _text(head).startswith("epoch 2/2"), head
    assert 'data-kind="train"><span class="nbc-bar-label">train</span><span class="nbc-bar-track"><span ' \
           'class="nbc-bar-fill" style="width:0.0%">' in head, head
    assert at - began <= interval + 0.25, f"shown {at - began:.2f} s after the stall began"
    gaps = [later - earlier for (earlier, _), (later, _) in zip(arrivals, arrivals[1:])]
    assert min(gaps) >= 0.8 * interval, gaps


def test_while_steps_advance_the_training_thread_sends_every_view(kernel: FakeDisplay, monkeypatch) -> None:
    """The timer that covers a late first batch sends nothing while steps come: the training thread refreshes
    when due, with the steps it has just recorded."""
    senders: list[str] = []
    original = WidgetRenderer.update

    def spy(self, view, state, status=True):
        senders.append(threading.current_thread().name)
        original(self, view, state, status)

    monkeypatch.setattr(WidgetRenderer, "update", spy)
    model, _ = new_model()
    bar = ProgressBar(display="widget", refresh_interval=0.2)
    model.fit(3, batches(100), batches(20, seed=1), callbacks=[Pace(0.005), bar])
    assert bar.view().status == "finished"
    assert len(senders) >= 5 and set(senders) == {threading.current_thread().name}, senders


def test_the_timer_and_slow_steps_never_send_twice_within_an_interval(kernel: FakeDisplay, monkeypatch) -> None:
    """Steps of 50-200 ms (a clock check at every step) and sends that take 30 ms: the timer's send and the
    training thread's refresh take turns under one lock, so two sends never come closer than the interval."""
    interval = 0.2
    starts: list[float] = []
    original = WidgetRenderer.update

    def slow_update(self, view, state, status=True):
        starts.append(time.monotonic())
        time.sleep(0.03)
        original(self, view, state, status)

    class Uneven(Callback):
        def __init__(self) -> None:
            self.pace = random.Random(1)

        def on_train_step_end(self, run_context) -> None:
            time.sleep(self.pace.uniform(0.05, 0.2))

    monkeypatch.setattr(WidgetRenderer, "update", slow_update)
    model, _ = new_model()
    bar = ProgressBar(display="widget", refresh_interval=interval)
    model.fit(10, batches(3), batches(2, seed=1), callbacks=[Uneven(), bar])
    assert bar.view().status == "finished" and len(starts) >= 10
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
    assert min(gaps) >= 0.8 * interval, sorted(gaps)[:3]


def test_no_thread_for_the_timer_costs_the_late_send_only(kernel: FakeDisplay, monkeypatch) -> None:
    """Where no thread can start (a container at its limit), training goes on without the late send."""
    def refuse(self) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Timer, "start", refuse)
    model, _ = new_model()
    bar = ProgressBar(display="widget", refresh_interval=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning: the display still works
        model.fit(2, batches(20), batches(5, seed=1), callbacks=[StallAtEpoch(2, seconds=0.5), bar])
    view = bar.view()
    assert view.status == "finished" and view.steps_done == 40


def test_the_live_plot_and_the_png_draw_the_same_y_range(sink: FakeDisplay, monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule (``panels.y_range``): the ranges the widget sends for its panels are the ones the final PNG draws,
    on the same data -- a band whose minima lie far below the curve, linear metric panels, the lr panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from nbcallback.widgets.plot import render_png

    clock = FakeClock()
    state = TrainingState(max_points=8)  # buckets of many steps: a band, not raw values
    state.start(clock(), epochs=2, steps_per_epoch=100, has_validation=True, eval_steps=20, lr=0.1)
    state.begin_epoch(1, clock())
    for step in range(1, 121):
        clock.advance(0.01)
        state.record_steps(clock(), step, [1e-5 if step == 50 else 1.0 / step ** 0.5])  # one easy batch
    state.set_lr(0.05, changed_at=120)
    for step, (accuracy, other) in ((60, (0.5, 1.0)), (120, (0.75, 3.0))):
        state.add_eval_row(clock(), {"accuracy": accuracy, "<b>x</b>": other}, epoch=1, step=step)
    renderer = WidgetRenderer(ALL, panels_for=_panels)
    renderer.open(state.view(clock()), state)
    live = [tuple(r) for r in renderer.widget.view["y_ranges"]]
    titles = [panel["title"] for panel in renderer.widget.spec["panels"]]
    assert titles == ["loss", "accuracy", "<b>x</b>", "learning rate"] and len(live) == 4
    drawn: list[tuple[float, float]] = []
    original = FigureCanvasAgg.draw

    def draw(canvas: Any) -> None:
        drawn.extend(tuple(float(v) for v in ax.get_ylim()) for ax in canvas.figure.axes)
        original(canvas)

    monkeypatch.setattr(FigureCanvasAgg, "draw", draw)
    data = state.plot_data()
    facts = {"metrics": data.metrics, "loss_positive": data.loss_positive, "lr_changed": data.lr_changed}
    assert render_png(_panels(facts), data) is not None
    assert drawn == pytest.approx(live, rel=1e-12)  # every panel, the same numbers
    loss_lo, loss_hi = live[0]
    assert 1e-5 < loss_lo < 1 / 120 ** 0.5 and loss_hi > 1.0  # the curve's bottom decides, the band's top counts
    renderer.abort()
