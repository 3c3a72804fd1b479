"""Renderers with a fake display sink: widget tree, model closing, HTML and snapshot content."""
from __future__ import annotations

import base64

import io
from typing import Any

import pytest

from nbcallback.train import Callback
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar
from nbcallback.widgets.clock import FakeClock
from nbcallback.widgets.render_html import PLOT_PENDING, live_html, snapshot_bundle
from nbcallback.widgets.render_widget import StaticRenderer, WidgetRenderer
from nbcallback.widgets.state import TrainingState
from tests.widgets.conftest import AtStep, Ticker, batches, new_model

ipywidgets = pytest.importorskip("ipywidgets")


class FakeHandle:
    def __init__(self, sink: "FakeDisplay", bundle: dict[str, Any]) -> None:
        self.sink = sink
        self.bundles = [bundle]

    def update(self, obj: Any, raw: bool = False, **kwargs: Any) -> None:
        assert raw
        self.bundles.append(obj)
        self.sink.updates += 1


class FakeDisplay:
    """Stands in for IPython.display.display: records what would be shown."""

    def __init__(self) -> None:
        self.handles: list[FakeHandle] = []
        self.plain: list[Any] = []
        self.updates = 0

    def __call__(self, obj: Any, raw: bool = False, display_id: Any = None, **kwargs: Any) -> Any:
        assert raw, "renderers send mime bundles"
        if display_id:
            handle = FakeHandle(self, obj)
            self.handles.append(handle)
            return handle
        self.plain.append(obj)
        return None


@pytest.fixture()
def sink(monkeypatch: pytest.MonkeyPatch) -> FakeDisplay:
    import IPython.display

    fake = FakeDisplay()
    monkeypatch.setattr(IPython.display, "display", fake)
    return fake


def _view(phase: str = "train"):
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=100, has_validation=True, eval_steps=20, lr=0.1)
    state.begin_epoch(1, clock())
    for step in (10, 20, 30):
        clock.advance(0.1)
        state.record_steps(clock(), step, [1.0] * 10)
    state.add_eval_row(clock(), {"accuracy": 0.5, "<b>x</b>": 1.0}, epoch=1, step=30)
    if phase == "eval":
        state.begin_eval(clock(), 20)
        state.record_eval_steps(clock(), 5)
    return state, state.view(clock())


def test_dashboard_tree_is_small_and_fully_closed(sink: FakeDisplay) -> None:
    stops: list[bool] = []
    lrs: list[float] = []
    renderer = WidgetRenderer(
        frozenset({"progress", "table", "plot", "controls"}), on_stop=lambda: stops.append(True), on_lr=lrs.append,
        hint="press stop",
    )
    state, view = _view()
    renderer.open(view)
    assert renderer.models_opened == 10  # VBox, HTML+style, Image, HBox, Button+style, FloatText+style, 1 shared Layout
    models = list(renderer._widgets)
    assert len({m.model_id for m in models}) == 10
    assert len(sink.handles) == 2  # progress + controls, then the plot: two outputs of the cell
    bundle = sink.handles[0].bundles[0]
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == renderer._root.model_id
    assert "Training in progress" in bundle["text/plain"]
    plot_view = sink.handles[1].bundles[0]
    assert plot_view["application/vnd.jupyter.widget-view+json"]["model_id"] == renderer._image.model_id

    changes: list[str] = []
    renderer._html.observe(lambda change: changes.append(change["new"]), names="value")
    renderer.update(view, None)
    assert changes == []  # unchanged text: no message
    _, view2 = _view("eval")
    renderer.update(view2, b"\x89PNG fake")
    assert len(changes) == 1 and renderer._image.value == b"\x89PNG fake"

    renderer._button.click()
    renderer._lr.value = 0.01
    renderer._lr.value = -1.0  # invalid: ignored
    renderer.sync_lr(0.5)  # shown, not a request
    assert stops == [True] and lrs == [0.01]

    state.finish(0.0, "finished", "finished")
    renderer.finish(state.view(0.0, live_rows=None), b"\x89PNG final")
    final = sink.handles[0].bundles[-1]
    assert set(final) == {"text/html", "text/plain"}
    assert "<img" not in final["text/html"]  # the plot is its own image/png output (GitHub drops data-URI images)
    assert "Training finished" in final["text/plain"] and "PNG output below" in final["text/plain"]
    plot = sink.handles[1].bundles[-1]
    assert set(plot) == {"image/png", "text/plain"}
    assert base64.b64decode(plot["image/png"]) == b"\x89PNG final"
    assert all(m.comm is None for m in models), "every model, layout and style is closed"
    renderer._button.click()  # after the end: ignored
    assert stops == [True]


@pytest.mark.parametrize(
    ("factory", "models"), [(ProgressBar, 3), (LiveLossPlot, 4), (Dashboard, 4)]
)
def test_callbacks_open_one_view_per_run_and_close_it(sink: FakeDisplay, monkeypatch, factory, models) -> None:
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    model, _ = new_model()
    callback = factory(display="widget")
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[callback])
    has_plot = factory is not ProgressBar
    assert len(sink.handles) == 1 + has_plot
    renderer = callback.renderer
    assert renderer.closed
    # Outside a real kernel no subshells are advertised: the Dashboard shows no controls.
    assert renderer.models_opened == models
    final = sink.handles[0].bundles[-1]
    assert "text/html" in final and "Training finished" in final["text/plain"]
    if has_plot:
        png = base64.b64decode(sink.handles[1].bundles[-1]["image/png"])
        assert png[:4] == b"\x89PNG" and png == callback.last_png


def test_live_html_eval_phase_is_visibly_different_and_escaped() -> None:
    _, train_view = _view("train")
    _, eval_view = _view("eval")
    parts = frozenset({"progress", "table"})
    train_html = live_html(train_view, parts)
    eval_html = live_html(eval_view, parts)
    assert ">train</span>" in train_html and ">eval</span>" not in train_html
    assert ">eval</span>" in eval_html and "5/20" in eval_html
    assert "--jp-warn-color1" in eval_html  # the eval bar has its own colour
    assert "<b>x</b>" not in train_html and "&lt;b&gt;x&lt;/b&gt;" in train_html
    assert "total ETA" in train_html and "samples/s" not in train_html  # no batch size known here
    assert len(train_html.encode()) < 2048  # a live tick stays under 2 KB


def test_static_renderer_updates_through_one_display_id(sink: FakeDisplay) -> None:
    state, view = _view()
    renderer = StaticRenderer(frozenset({"progress", "table"}), live=True)
    renderer.open(view)
    renderer.update(view, None)
    assert sink.updates == 0
    _, view2 = _view("eval")
    renderer.update(view2, None)
    state.finish(0.0, "stopped", "stopped by user at epoch 1, step 30 (Stop button)")
    renderer.finish(state.view(0.0, live_rows=None), None)
    assert len(sink.handles) == 1 and sink.updates == 2
    assert "stopped by user at epoch 1, step 30" in sink.handles[0].bundles[-1]["text/plain"]
    final_only = StaticRenderer(frozenset({"progress"}), live=False)
    final_only.open(view)
    final_only.finish(state.view(0.0, live_rows=None), None)
    assert len(sink.plain) == 1 and len(sink.handles) == 1


def test_static_renderer_keeps_a_slot_for_the_plot_next_to_the_progress(sink: FakeDisplay) -> None:
    state, view = _view()
    renderer = StaticRenderer(frozenset({"progress", "table", "plot"}), live=True)
    renderer.open(view)
    assert len(sink.handles) == 2
    assert sink.handles[1].bundles[0] == {"text/plain": PLOT_PENDING}
    state.finish(0.0, "finished", "finished")
    renderer.finish(state.view(0.0, live_rows=None), b"\x89PNG final")
    assert base64.b64decode(sink.handles[1].bundles[-1]["image/png"]) == b"\x89PNG final"
    assert "<img" not in sink.handles[0].bundles[-1]["text/html"]
    final_only = StaticRenderer(frozenset({"plot"}), live=False)
    final_only.open(view)
    final_only.finish(state.view(0.0, live_rows=None), None)  # no PNG: a line says why, not a broken image
    assert [set(b) for b in sink.plain] == [{"text/html", "text/plain"}, {"text/plain"}]
    assert "could not be drawn" in sink.plain[1]["text/plain"]


def test_snapshot_text_plain_is_meaningful() -> None:
    state, _ = _view()
    state.finish(0.0, "error", "failed with ValueError at epoch 1, step 30", error="ValueError: bad")
    view = state.view(0.0, live_rows=None)
    bundle = snapshot_bundle(view, frozenset({"progress", "table"}), None)
    text = bundle["text/plain"]
    assert text.splitlines()[0].startswith("Training failed with ValueError at epoch 1, step 30")
    assert "ValueError: bad" in text and "accuracy" in text
    assert "ValueError: bad" in bundle["text/html"]


def test_display_failure_never_stops_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no front end")

    monkeypatch.setattr(IPython.display, "display", broken)
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    model, _ = new_model()
    bar = ProgressBar(display="static")
    with pytest.warns(RuntimeWarning, match="display failed"):
        model.train(1, batches(20), callbacks=[bar])
    assert bar.view().status == "finished" and bar.view().steps_done == 20


def test_eval_phase_reaches_the_renderer_during_fit(sink: FakeDisplay, monkeypatch) -> None:
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    clock = FakeClock()
    model, _ = new_model()
    bar = ProgressBar(display="widget", clock=clock)
    seen: list[str] = []
    original = WidgetRenderer.update

    def spy(self, view, png):
        seen.append(view.phase)
        return original(self, view, png)

    monkeypatch.setattr(WidgetRenderer, "update", spy)
    model.fit(1, batches(30), batches(30, seed=1), callbacks=[Ticker(clock, 0.05), bar])
    assert "eval" in seen and "train" in seen
    assert io  # keep the import used
    assert AtStep


def test_plot_frames_inline_and_in_the_helper_process(sink: FakeDisplay, monkeypatch) -> None:
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    for process in (False, True):
        clock = FakeClock()
        model, _ = new_model()
        plot = LiveLossPlot(display="widget", clock=clock, plot_process=process)
        model.fit(2, batches(200), batches(5, seed=1), callbacks=[Ticker(clock, 0.05), plot])
        assert plot.last_png is not None and plot.last_png[:4] == b"\x89PNG"
        final = sink.handles[-1].bundles[-1]
        assert base64.b64decode(final["image/png"]) == plot.last_png
        if not process:
            assert plot.plot_frames >= 3  # 20 s of fake time, a frame every >= 2 s
        else:
            assert plot.plot_helper_seconds > 0


@pytest.mark.parametrize("initial_epoch", [0, 2])
def test_no_live_frame_after_the_last_epoch_only_the_final_one(sink: FakeDisplay, monkeypatch, initial_epoch) -> None:
    """The final frame follows the last epoch at once; a live frame there would make the end of
    the run wait for two frames.  The helper is asked to prepare the final frame when the last
    evaluation begins, once.  ``initial_epoch`` numbers the epochs from 3: the last one is still
    the run's second."""
    from nbcallback.widgets.frames import FrameSource
    from nbcallback.widgets.plot import LossPlot

    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    rendered: list[tuple[bool, int]] = []
    original = LossPlot.render

    def spy(self, data, final=False):
        rendered.append((final, len(data.evals.get("accuracy", ((), ()))[0])))
        return original(self, data, final)

    monkeypatch.setattr(LossPlot, "render", spy)
    prepared: list[int] = []
    monkeypatch.setattr(FrameSource, "prepare_final", lambda self, state: prepared.append(state.view(0.0).epoch))
    requested: list[int] = []
    monkeypatch.setattr(FrameSource, "request_final", lambda self, state: requested.append(state.view(0.0).epoch))
    clock = FakeClock()
    model, _ = new_model()
    # Refresh at every check, so the epoch's end refreshes the text (and would draw a live frame).
    plot = LiveLossPlot(display="widget", clock=clock, plot_process=False, plot_interval=0.01, plot_budget=1.0,
                        refresh_interval=0.01)

    class SlowEvalEnd(Callback):
        def on_eval_end(self, run_context):
            clock.advance(0.5)  # time passes between the last validation step and the epoch's end

    model.fit(2 + initial_epoch, batches(100), batches(10, seed=1), callbacks=[Ticker(clock, 0.05), SlowEvalEnd(), plot],
              initial_epoch=initial_epoch)
    live = [points for final, points in rendered if not final]
    assert 1 in live, "the first epoch's evaluation point is shown live"
    assert max(live) == 1, "no live frame after the last epoch"
    assert rendered[-1] == (True, 2) and [final for final, _ in rendered].count(True) == 1
    assert prepared == [2 + initial_epoch], "the final frame is prepared at the last evaluation only"
    assert set(requested) == {2 + initial_epoch}, "the final frame is asked for at the last epoch only"


def test_the_final_frame_starts_when_the_last_validation_ends(sink: FakeDisplay, monkeypatch) -> None:
    """fit's validation hands its results to ``on_eval_end``: the table row is added there and,
    after the last validation, the helper starts on the final frame before the other callbacks'
    epoch ends (here a checkpoint-like callback listed first) run."""
    from nbcallback.widgets.frames import FrameSource

    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    requests: list[int] = []
    original = FrameSource.request_final
    monkeypatch.setattr(FrameSource, "request_final",
                        lambda self, state: requests.append(len(state.view(0.0, live_rows=None).rows)) or original(self, state))
    seen_at_epoch_end: list[tuple[int, int]] = []
    plot = LiveLossPlot(display="widget", plot_process=False)

    class Checkpoint(Callback):
        def on_train_epoch_end(self, run_context):
            seen_at_epoch_end.append((len(requests), len(plot.state.view(0.0, live_rows=None).rows)))

    model, _ = new_model()
    model.fit(2, batches(40), batches(5, seed=1), callbacks=[Checkpoint(), plot])
    assert seen_at_epoch_end == [(0, 1), (1, 2)], "row and final-frame request come from on_eval_end"
    assert requests[0] == 2, "the final frame was asked for with both evaluation rows"
    rows = plot.view().rows
    assert [row.epoch for row in rows] == [1, 2], "one row per validation, not one more at the epoch end"
    assert [row.step for row in rows] == [40, 80], "rows are placed at the training step of their validation"
    assert base64.b64decode(sink.handles[-1].bundles[-1]["image/png"]) == plot.last_png


def test_the_final_frame_asked_for_early_is_drawn_once_by_the_helper() -> None:
    """``request_final`` at the last epoch's end: ``final_frame`` then only collects it, unless the
    plotted data changed in between; the pictures match a plot drawn inline from the same data."""
    import io as _io

    from PIL import Image

    from nbcallback.widgets.frames import FrameSource
    from nbcallback.widgets.plot import LossPlot
    from nbcallback.widgets.plot_worker import PlotWorker

    def pixels(png: bytes) -> bytes:
        with Image.open(_io.BytesIO(png)) as image:
            return image.convert("RGB").tobytes()

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=200, has_validation=True, eval_steps=10)
    frames = FrameSource({}, live=True, use_process=True, interval=2.0, budget=0.01)
    assert frames.worker is not None, "no helper process could start"
    submitted: list[bool] = []
    original = frames.worker.submit
    frames.worker.submit = lambda data, final=False: submitted.append(final) or original(data, final)
    reference = LossPlot()
    try:
        frames.begin(clock(), state)  # the helper prebuilds the figure
        reference.prebuild(state.plot_data())
        state.begin_epoch(1, clock())
        state.record_steps(clock(), 200, [2.0 - i / 150 for i in range(200)])
        frames.prepare_final(state)  # the last evaluation begins: the helper draws the curve ahead
        state.add_eval_row(clock(), {"accuracy": 0.9, "eval_loss": 0.7}, epoch=1, step=200)
        state.end_epoch(1, clock(), validated=True)
        frames.request_final(state)
        state.finish(clock(), "finished")  # progress only: the plot is unchanged
        png = frames.final_frame(state)
        assert submitted == [True], "the early final frame was drawn again"
        assert pixels(png) == pixels(reference.render(state.plot_data(), final=True))

        state.start(clock(), epochs=1, steps_per_epoch=200, has_validation=True, eval_steps=10)
        frames.begin(clock(), state)
        reference.prebuild(state.plot_data())
        state.begin_epoch(1, clock())
        state.record_steps(clock(), 100, [1.5] * 100)
        frames.request_final(state)
        reference.render(state.plot_data(), final=True)  # the same frames as the helper drew
        state.record_steps(clock(), 120, [1.0] * 20)  # the plot changed after the request
        png = frames.final_frame(state)
        assert submitted == [True, True, True]
        assert pixels(png) == pixels(reference.render(state.plot_data(), final=True))
        assert frames.worker is not None and isinstance(frames.worker, PlotWorker), "fell back to inline"
    finally:
        frames.close()
        reference.close()


class _FakeWorker:
    """A plot helper that answers every frame at once (what FrameSource asks of it is recorded)."""

    def __init__(self) -> None:
        self.alive, self.error, self.in_flight = True, None, None
        self.asked: list[str] = []

    @property
    def busy(self) -> bool:
        return self.in_flight is not None

    def prebuild(self, data) -> None:
        self.asked.append("build")

    def prepare_final(self, data) -> None:
        self.asked.append("prefinal")

    def submit(self, data, final: bool = False) -> int:
        self.asked.append("final" if final else "live")
        self.in_flight = len(self.asked)
        return self.in_flight

    def poll(self):
        if self.in_flight is None:
            return None
        self.in_flight = None
        return b"\x89PNG-live", 0.01

    def wait(self, timeout: float):
        self.in_flight = None
        return b"\x89PNG-final", 0.01

    def close(self, timeout: float = 2.0) -> None:
        self.alive = False


def test_no_live_frame_is_asked_for_once_the_last_evaluation_began() -> None:
    """After ``prepare_final`` the plot cannot change before the final frame: a live frame then
    would only queue the final one behind it (and make the helper discard the prepared picture)."""
    from nbcallback.widgets.frames import FrameSource

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=300, has_validation=True, eval_steps=10)
    frames = FrameSource({}, live=False, use_process=False, interval=2.0, budget=0.01)
    frames.live = True  # with the fake helper below, nothing is drawn in this process
    frames.worker = worker = _FakeWorker()
    frames.begin(clock(), state)
    state.begin_epoch(1, clock())
    for step in range(100, 301, 100):
        clock.advance(3.0)
        state.record_steps(clock(), step, [1.0] * 100)
        frames.live_frame(state, clock())
    assert worker.asked == ["build", "live", "live", "live"], "a live frame every >= 2 s while training"
    frames.prepare_final(state)  # the last evaluation begins
    for _ in range(3):  # text refreshes during the evaluation, the plot's interval long past
        clock.advance(3.0)
        state.record_eval_steps(clock(), 5)
        frames.live_frame(state, clock())
    state.add_eval_row(clock(), {"accuracy": 0.9, "eval_loss": 0.7}, epoch=1, step=300)
    state.end_epoch(1, clock(), validated=True)
    clock.advance(3.0)
    frames.live_frame(state, clock())  # the epoch's end, with a new evaluation point
    assert frames.final_frame(state) == b"\x89PNG-final"
    assert worker.asked[4:] == ["prefinal", "final"], worker.asked


class _SlowPlot:
    """An inline plot whose frames take ``seconds``; ``builds`` counts figure builds and
    ``costliest_frame`` is kept as :class:`~nbcallback.widgets.plot.LossPlot` keeps it
    (``kept``: a figure kept from an earlier run, whose frames cost as much)."""

    def __init__(self, seconds: float, build_first: bool, kept: bool) -> None:
        self.seconds, self.builds, self.renders = seconds, 0, 0
        self.build_first = build_first
        self.costliest_frame = self.costliest_blit = seconds if kept else 0.0
        self.final_seconds = 0.0

    def frame_cost(self, data) -> float:
        return 0.0 if self.build_first and self.renders == 0 else self.costliest_frame

    def render(self, data, final: bool = False) -> bytes:
        import time as _time

        builds = self.build_first and self.renders == 0
        self.builds += builds
        self.renders += 1
        started = _time.perf_counter()
        _time.sleep(self.seconds)
        if not builds:
            self.costliest_frame = max(self.costliest_frame, _time.perf_counter() - started)
            self.costliest_blit = self.costliest_frame  # every frame costs the same here
        return b"\x89PNG"


@pytest.mark.parametrize("figure", ["new", "built by the first frame", "kept from an earlier run"])
def test_inline_live_frames_wait_until_the_budget_can_pay_for_them(figure: str) -> None:
    """Inline, the training thread draws the frames: each one counts against the plot's time
    budget, the first included, except the cost of building the figure, which the final frame
    would pay anyway.  Once a frame's cost is known (a figure kept from an earlier run knows it
    from the start), a live frame waits until the budget can pay for it and for the final frame."""
    from nbcallback.widgets.frames import FrameSource

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=1000, has_validation=False)
    frames = FrameSource({}, live=False, use_process=False, interval=1.0, budget=0.01)
    frames.live = True
    # 30 ms a frame: 3 s of run per frame at 1 %, 6 s for a live frame and the final one.
    frames.inline = _SlowPlot(0.03, build_first=figure.startswith("built"), kept=figure.startswith("kept"))
    frames.begin(clock(), state)
    state.begin_epoch(1, clock())
    drawn = []
    for second in (1, 2, 4, 20):  # (20: a sleep of 30 ms may take longer on a busy machine)
        clock.advance(second - (clock() - 1000.0))
        state.record_steps(clock(), 100 * second, [1.0] * 100)
        drawn.append(frames.live_frame(state, clock()) is not None)
    expected = {
        "new": [True, False, False, True],  # unknown cost at first; then 30 + 2 x 30 ms need 9 s
        "built by the first frame": [True, True, False, True],  # building is not counted
        "kept from an earlier run": [False, False, False, True],  # 2 x 30 ms fit in the budget from 6 s on
    }[figure]
    assert drawn == expected


def test_a_dying_plot_helper_falls_back_to_inline(sink: FakeDisplay, monkeypatch) -> None:
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    clock = FakeClock()
    model, _ = new_model()
    plot = LiveLossPlot(display="widget", clock=clock, plot_process=True)

    def kill(run_context):
        plot._frames.worker._process.kill()

    with pytest.warns(RuntimeWarning, match="plot helper failed"):
        model.train(1, batches(300), callbacks=[Ticker(clock, 0.05), AtStep(100, kill), plot])
    assert plot.view().status == "finished"
    assert plot.last_png is not None and plot.last_png[:4] == b"\x89PNG"
    assert base64.b64decode(sink.handles[-1].bundles[-1]["image/png"]) == plot.last_png


def test_the_snapshot_goes_out_while_the_final_frame_is_drawn(sink: FakeDisplay) -> None:
    """The HTML snapshot replaces the live view before the renderer waits for the final PNG
    (the plot helper draws it meanwhile); when no PNG comes after all, the snapshot's text
    no longer points to a plot."""
    state, view = _view()
    for png, has_plot in ((b"\x89PNG-final", True), (None, False)):
        renderer = WidgetRenderer(LiveLossPlot._PARTS)
        renderer.open(view)
        html, plot = sink.handles[-2], sink.handles[-1]
        seen_when_drawn: list[int] = []

        open_when_drawn: list[tuple[bool, bool]] = []

        def final_png() -> bytes | None:
            seen_when_drawn.append(len(html.bundles))
            open_when_drawn.append((renderer._html.comm is not None, renderer._image.comm is not None))
            return png

        renderer.finish(view, final_png)
        assert seen_when_drawn == [2], "the renderer waited for the PNG before sending the snapshot"
        assert open_when_drawn == [(False, True)], "the live view's models are closed while the frame is drawn"
        assert renderer._image.comm is None and renderer._widgets == []
        assert "text/html" in html.bundles[-1]
        assert ("(loss plot: the PNG output below)" in html.bundles[-1]["text/plain"]) is has_plot
        assert ("image/png" in plot.bundles[-1]) is has_plot
        assert renderer.closed


class _Publisher:
    """The parts of ipykernel's display publisher that ``replace_output`` uses."""

    def __init__(self, hooks: list[Any]) -> None:
        self.sent: list[tuple[Any, dict[str, Any], Any]] = []
        self.session = self
        self.pub_socket = "iopub"
        self.topic = b"display_data"
        self.parent_header = {"msg_id": "cell-1"}
        self._hooks = hooks

    def msg(self, msg_type: str, content: dict[str, Any], parent: Any) -> dict[str, Any]:
        return {"msg_type": msg_type, "content": content, "parent_header": parent}

    def send(self, socket: Any, message: dict[str, Any], ident: Any = None) -> None:
        self.sent.append((socket, message, ident))


def test_replace_output_sends_the_update_without_flushing_the_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a kernel the update is one update_display_data message for the handle's display_id,
    with the cell's parent header, through the display hooks; elsewhere IPython's own update."""
    import IPython

    from nbcallback.widgets.render_widget import replace_output

    class Handle:
        display_id = "abc"

        def __init__(self) -> None:
            self.updates: list[Any] = []

        def update(self, obj: Any, raw: bool = False) -> None:
            self.updates.append((obj, raw))

    hooked: list[str] = []
    publisher = _Publisher([lambda m: hooked.append(m["msg_type"]) or m])
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"display_pub": publisher})())
    handle = Handle()
    replace_output(handle, {"text/plain": "done"})
    assert handle.updates == [] and hooked == ["update_display_data"]
    ((socket, message, ident),) = publisher.sent
    assert socket == "iopub" and ident == b"display_data"
    assert message["content"] == {"data": {"text/plain": "done"}, "metadata": {}, "transient": {"display_id": "abc"}}
    assert message["parent_header"] == {"msg_id": "cell-1"}

    publisher._hooks.append(lambda m: None)  # a hook that takes the message (e.g. a capture)
    replace_output(handle, {"text/plain": "again"})
    assert len(publisher.sent) == 1

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # a plain Python process
    replace_output(handle, {"text/plain": "plain"})
    assert handle.updates == [({"text/plain": "plain"}, True)]


def test_display_output_skips_the_stream_flush_only_when_nothing_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new output is one display_data message with a new display_id, sent directly in a kernel
    when the streams hold nothing (or the thread just displayed an output); with printed text
    waiting, or outside a kernel, IPython's display (which flushes first) is used."""
    import sys

    import IPython
    import IPython.display

    from nbcallback.widgets.render_widget import display_output, replace_output

    class Stream:
        def __init__(self, pending: bool) -> None:
            self._flush_pending = pending
            self._subprocess_flush_pending = False

    shown: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)) or "displayed")
    publisher = _Publisher([])
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"display_pub": publisher})())
    monkeypatch.setattr(sys, "stdout", Stream(False))
    monkeypatch.setattr(sys, "stderr", Stream(False))
    handle = display_output({"text/plain": "slot"})
    ((_, message, _),) = publisher.sent
    assert message["msg_type"] == "display_data" and not shown
    assert message["content"]["transient"] == {"display_id": handle.display_id} and handle.display_id
    replace_output(handle, {"text/plain": "filled"})
    assert publisher.sent[-1][1]["content"]["transient"] == {"display_id": handle.display_id}

    sys.stdout._flush_pending = True  # printed text waits: it must come first
    assert display_output({"text/plain": "after print"}) == "displayed"
    assert shown == [({"text/plain": "after print"}, {"raw": True, "display_id": True})]
    second = display_output({"text/plain": "next"}, follows_own_output=True)
    assert publisher.sent[-1][1]["content"]["transient"] == {"display_id": second.display_id}
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # redirected: no flags to trust
    sys.stderr._flush_pending = False
    assert display_output({"text/plain": "redirected"}) == "displayed"

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert display_output({"text/plain": "plain"}, follows_own_output=True) == "displayed"
