"""``Dashboard(compare=...)`` (#47): earlier runs drawn faint under the live one, labelled by what differs, with a
table of their final metrics whose live row updates: in the text view, the live widget, the snapshot and the PNG.
Each test has its own cache folder (the records of its own runs)."""
from __future__ import annotations

import base64
import io
import json
import math
import re
import threading
import time
import warnings
from array import array
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from ipywidgets.widgets.widget import _remove_buffers

from nbcallback.paths import run_dir
from nbcallback.train import Callback
from nbcallback.widgets import Dashboard, list_runs
from nbcallback.widgets import overlay as overlay_module
from nbcallback.widgets import runs as runs_module
from nbcallback.widgets.panels import RUN_COLORS
from nbcallback.widgets.words import Words

from .conftest import FakeClock, Ticker, batches, new_model

NOTEBOOK = "compare_notebook"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own cache folder, and a known notebook name (as tests/widgets/test_runs.py does)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("JPY_SESSION_NAME", f"/home/user/{NOTEBOOK}.ipynb")
    return tmp_path / "cache"


def train(lr: float, *, epochs: int = 2, steps: int = 20, bs: int = 16, callbacks: tuple[Any, ...] = (),
          **dashboard: Any) -> tuple[Dashboard, str]:
    """A short fit shown by a text Dashboard; returns it and what it printed."""
    model, _opt = new_model(lr)
    out = io.StringIO()
    dash = Dashboard(display=dashboard.pop("display", "text"), file=out, **dashboard)
    model.fit(epochs, batches(steps, bs=bs), batches(5, seed=1), callbacks=[*callbacks, dash])
    return dash, out.getvalue()


def train_warned(lr: float, **dashboard: Any) -> tuple[Dashboard, str, list[str]]:
    """:func:`train`, and the messages of every warning it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dash, text = train(lr, **dashboard)
    return dash, text, [str(w.message) for w in caught]


def records() -> Path:
    return run_dir(NOTEBOOK) / "records"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


# ------------------------------------------------------------------ which runs, how they are named


def test_compare_n_draws_the_last_n_runs_labelled_by_what_differs() -> None:
    for lr in (0.01, 0.05, 0.2):
        train(lr)
    dash, text = train(0.1, compare=2)
    overlay = dash.overlay
    assert overlay is not None
    assert [run.label for run in overlay.runs] == ["lr 0.2", "lr 0.05"]  # the last two, newest first; not lr 0.01
    assert [run.color for run in overlay.runs] == list(RUN_COLORS[:2])
    assert all(run.status == "finished" and set(run.series) >= {"loss", "eval:accuracy"} for run in overlay.runs)
    # The run shown is remembered at its end, after the comparisons were read: never among its own.
    assert len(list_runs()) == 4 and all(run.name != list_runs()[-1].name for run in overlay.runs)
    # The text view lists the runs once at the start (before the first epoch's line) and again at the end.
    lines = text.splitlines()
    assert lines[1] == "Earlier runs to compare with (2):"
    assert lines[2].split() == ["run", "status", "epoch", "loss", "accuracy", "eval_loss"]  # (the test's metric)
    assert [line.split()[:2] for line in lines[3:5]] == [["lr", "0.2"], ["lr", "0.05"]]
    assert lines[5].startswith("epoch 1/2")
    end = lines[lines.index("Earlier runs to compare with (2):", 2):]
    assert end[2].split()[:4] == ["this", "run", "finished", "2"]  # the live run first, with its final numbers
    assert end[3].split()[:4] == ["lr", "0.2", "finished", "2"]
    assert text.count("Earlier runs to compare with") == 2


def test_runs_named_by_label_and_by_path_and_a_stretched_x() -> None:
    train(0.05, run_label="baseline")
    path = list_runs()[-1].path
    train(0.05, epochs=3, steps=10)  # half the steps per epoch: x is stretched to this run's steps
    other = list_runs()[-1].path
    dash, _ = train(0.05, compare=[str(other), "baseline"])
    assert [run.label for run in dash.overlay.runs] == ["baseline", "epochs 3"]  # a run_label is kept as given
    stretched = dash.overlay.runs[1].series["loss"]["x"]
    assert max(stretched) == pytest.approx(60) and min(stretched) == pytest.approx(2)  # 3 x 10 steps -> 3 x 20
    assert max(dash.overlay.runs[0].series["loss"]["x"]) == pytest.approx(40)  # the same 20 steps: as it was
    assert path is not None and dash.compare == (str(other), "baseline")


def test_two_runs_that_differ_the_same_way_are_told_apart() -> None:
    train(0.2)
    train(0.2)
    dash, _ = train(0.1, compare=2)
    first, second = (run.label for run in dash.overlay.runs)
    assert first != second and first.startswith("lr 0.2 (") and second.startswith("lr 0.2 (")


def test_the_records_are_read_once_at_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    for lr in (0.05, 0.2):
        train(lr)
    reads: list[Path] = []
    calls: list[int] = []
    real_read, real_overlay = runs_module._read, overlay_module.read_overlay
    monkeypatch.setattr(runs_module, "_read", lambda path: reads.append(path) or real_read(path))
    monkeypatch.setattr("nbcallback.widgets.dashboard.read_overlay",
                        lambda *args, **kwargs: calls.append(1) or real_overlay(*args, **kwargs))
    dash, _ = train(0.1, compare=2, epochs=3, steps=40)
    assert len(calls) == 1 and len(reads) == 2  # two files, once each, for a run of 120 steps and its refreshes
    assert dash.overlay is not None and len(dash.overlay.runs) == 2
    train(0.1, compare=2)  # the next run reads again, once, only the two newest files of the three
    assert len(calls) == 2 and len(reads) == 4


def test_no_reading_without_compare_or_without_a_display(monkeypatch: pytest.MonkeyPatch) -> None:
    train(0.05)
    calls: list[int] = []
    monkeypatch.setattr("nbcallback.widgets.dashboard.read_overlay", lambda *a, **k: calls.append(1))
    train(0.1)
    train(0.1, compare=0)
    train(0.1, compare=None)
    train(0.1, compare=1, display="off")
    model, _ = new_model()
    model.eval(batches(5, seed=1), callbacks=[Dashboard(display="text", file=io.StringIO(), compare=1)])
    assert calls == []


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("compare", "error", "match"), [
    (-1, ValueError, r"compare must be a number of earlier runs >= 0, got -1; e\.g\. compare=2"),
    (True, TypeError, r"compare=True does not say which runs; pass a number or runs"),
    (99, ValueError, r"compare=99 is more runs than the plot can tell apart \(at most 6\)"),
    ([], TypeError, r"compare must be a number, a run's label or file, or a list of them, got \[\]"),
    ([3], TypeError, r"compare names a run by its label \(text\), its file \(a path\) or a RunRecord"),
    ("  ", TypeError, r"compare names a run by its label"),
    (2.5, TypeError, r"compare must be a number, a run's label or file"),
    (["a"] * 7, ValueError, r"compare names 7 runs, more than the plot can tell apart"),
])
def test_a_bad_compare_argument_is_refused_when_the_dashboard_is_made(compare: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Dashboard(display="text", compare=compare)


def test_corrupt_foreign_and_missing_runs_are_one_warning_each_and_the_run_goes_on() -> None:
    train(0.2)
    folder = records()
    foreign = json.loads(list_runs()[-1].path.read_text())
    (folder / "30000101-000000-000.json").write_text("{not json")
    foreign["version"] = 99
    (folder / "30000101-000000-001.json").write_text(json.dumps(foreign))
    dash, text, warned = train_warned(0.1, compare=3)
    said = [message for message in warned if "run file" in message]
    assert len(said) == 2, said
    assert any("30000101-000000-000.json" in s and "truncated or not JSON" in s for s in said)
    assert any("30000101-000000-001.json" in s and "format version 99" in s for s in said)
    assert all("\n" not in s for s in said)
    assert [run.label for run in dash.overlay.runs] == ["lr 0.2"]  # the readable one is drawn
    assert dash.view().status == "finished" and "Training finished: 2/2 epochs" in text
    assert (folder / "30000101-000000-000.json").read_text() == "{not json"  # left as it was
    dash, _, warned = train_warned(0.1, compare=["no such run", str(folder / "gone.json")])
    missing = [message for message in warned if "no such run" in message or "gone.json" in message]
    assert len(missing) == 2 and dash.overlay is None and dash.view().status == "finished"
    assert all(said.endswith("(skipped)") for said in missing), missing  # no file there to be "left as it is"


# ------------------------------------------------------------------ the live widget, the snapshot, the PNG


class _Sink:
    """Stands in for IPython.display.display (as tests/widgets/test_renderers.py's FakeDisplay)."""

    def __init__(self) -> None:
        self.handles: list[Any] = []
        self.plain: list[tuple[Any, Any]] = []

    def __call__(self, obj: Any, raw: bool = False, display_id: Any = None, metadata: Any = None, **kw: Any) -> Any:
        if display_id:
            sink = self

            class Handle:
                bundles = [obj]

                def update(self, new: Any, raw: bool = False, metadata: Any = None, **kw: Any) -> None:
                    self.bundles.append(new)

            handle = Handle()
            handle.bundles = [obj]
            sink.handles.append(handle)
            return handle
        self.plain.append((obj, metadata))
        return None


@pytest.fixture()
def kernel(monkeypatch: pytest.MonkeyPatch) -> _Sink:
    import IPython.display

    pytest.importorskip("anywidget")
    sink = _Sink()
    monkeypatch.setattr(IPython.display, "display", sink)
    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    return sink


class _ReadFirst(Callback):
    """At the first training step, wait until the Dashboard among the run's callbacks has read the earlier runs (the
    live widget reads them on a thread of their own; the tests that follow the table from step to step wait)."""

    def on_train_step_begin(self, run_context: Any) -> None:
        for callback in run_context.original_args().list_callback:
            reading = getattr(getattr(callback, "compared", None), "reading", None)
            if reading is not None:
                reading.join(20)
                assert not reading.is_alive(), "the earlier runs were not read within 20 s"


def _watch_widgets(monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]], list[Any]]:
    """What the dashboard widgets made from now on send as messages, and each change of their ``compare`` trait."""
    from nbcallback.widgets.render_widget import DashboardWidget

    sent: list[dict[str, Any]] = []
    changes: list[Any] = []
    real_init = DashboardWidget.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.observe(lambda change: changes.append(change["new"]), names="compare")

    monkeypatch.setattr(DashboardWidget, "__init__", init)
    monkeypatch.setattr(DashboardWidget, "send", lambda self, content, buffers=None: sent.append(content))
    return sent, changes


def test_the_widget_gets_the_earlier_runs_once_and_its_table_row_updates(kernel: _Sink,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from nbcallback.widgets.render_widget import DashboardWidget

    clock = FakeClock()
    train(0.2, callbacks=(_ReadFirst(), Ticker(clock, 0.05)))  # (the same callbacks: the runs differ by lr only)
    sent, changes = _watch_widgets(monkeypatch)
    dash, _ = train(0.1, compare=1, display="widget", clock=clock, epochs=2, steps=40,
                    callbacks=(_ReadFirst(), Ticker(clock, 0.05)))
    widget = kernel.handles[0].bundles[0]
    assert isinstance(widget, DashboardWidget)
    assert len(changes) == 2 and changes[1] == {} == widget.compare  # set once, when read; dropped at the end
    runs = changes[0]["runs"]  # (the snapshot and the PNG have replaced the view then: nbconvert keeps no curves)
    assert [run["label"] for run in runs] == ["lr 0.2"] and runs[0]["color"] == RUN_COLORS[0]
    loss = {axis: array("f", column) for axis, column in runs[0]["series"]["loss"].items()}  # float32 bytes
    assert len(loss["x"]) == len(loss["y"]) == 40 and runs[0]["hover"].startswith("lr 0.2 (")
    drawn = dash.overlay.runs[0].series["loss"]  # what the final PNG draws, as float32
    assert list(loss["x"]) == pytest.approx(drawn["x"], rel=1e-6)
    assert list(loss["y"]) == pytest.approx(drawn["y"], rel=1e-6)
    remembered = next(run for run in list_runs() if run.settings["lr"] == 0.2).plot["series"]["loss"]
    assert drawn["y"] == tuple(remembered["y"])  # the earlier run's smoothed loss
    _, _, buffers = _remove_buffers({"compare": changes[0]})  # what ipywidgets sends: every column a binary buffer
    assert len(buffers) == 2 * sum(len(run["series"]) for run in runs)
    views = [message["view"] for message in sent if message.get("type") == "view"]
    assert not any("runs" in json.dumps(view) for view in views)  # the curves are never resent
    # The read ended before the first step (_ReadFirst): every refresh from the first step on has the table.
    views = [view for view in views if "compare" in view["html"]]
    assert len(views) >= 3
    tables = [_text(view["html"]["compare"]) for view in views]
    assert all(table.startswith("run status epoch loss") and "lr 0.2 finished 2" in table for table in tables)
    live = [re.search(r"this run (\w+) (\d+) (\S+)", table).groups() for table in tables]
    assert len(set(live)) > 2, live  # the live row changes with the run (status, epochs, loss)
    assert live[0][0] == "running"
    # The y range of the loss panel takes in the earlier run's curve (none of it clipped).
    earlier = [y for y in loss["y"] if not math.isnan(y)]
    low, high = views[-1]["y_ranges"][0]
    assert low <= min(earlier) and high >= max(earlier)
    # The snapshot keeps the table (the live row final) and the text says the same.
    snapshot = kernel.handles[0].bundles[-1]
    html = _text(snapshot["text/html"])
    assert "this run finished 2" in html and "lr 0.2 finished 2" in html
    assert 'title="lr 0.2 (' in snapshot["text/html"] and RUN_COLORS[0] in snapshot["text/html"]
    assert "Earlier runs to compare with (1):" in snapshot["text/plain"]
    assert re.search(r"this run\s+finished\s+2", snapshot["text/plain"])


def test_the_live_widget_reads_the_earlier_runs_off_the_training_thread(kernel: _Sink,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow disk (a network home folder) does not hold the training: the widget's run trains while the earlier
    runs are read on another thread, draws them once read, and its end waits for them (the snapshot keeps them)."""
    events: list[tuple[str, int]] = []
    stepped = threading.Event()

    class Steps(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            events.append(("step", threading.get_ident()))
            stepped.set()

    train(0.2, epochs=1, steps=5, callbacks=(Steps(),))
    events.clear()
    stepped.clear()
    real_read = overlay_module.read_overlay

    def slow_read(*args: Any, **kwargs: Any) -> Any:  # a disk that answers only once training has begun
        events.append(("read starts", threading.get_ident()))
        assert stepped.wait(20), "the training thread waited for the read"
        try:
            return real_read(*args, **kwargs)
        finally:
            events.append(("read ends", threading.get_ident()))

    monkeypatch.setattr("nbcallback.widgets.dashboard.read_overlay", slow_read)
    dash, _ = train(0.1, compare=1, display="widget", epochs=1, steps=5, callbacks=(Steps(),))
    kinds = [kind for kind, _ in events]
    assert kinds.count("read starts") == 1 and kinds.count("read ends") == 1
    reader = dict(events)["read starts"]
    assert all(ident != reader for kind, ident in events if kind == "step")  # the steps ran on another thread
    assert kinds.index("step") < kinds.index("read ends")  # training went on during the read
    assert [run.label for run in dash.overlay.runs] == ["lr 0.2"]  # read, and shown by the end
    snapshot = kernel.handles[0].bundles[-1]
    assert "lr 0.2 finished 1" in _text(snapshot["text/html"])
    assert not _reading_threads_left()


def _reading_threads_left() -> list[threading.Thread]:
    """The compare-reading threads still alive a moment after a run (one that is done only returns)."""
    threads = [thread for thread in threading.enumerate() if thread.name == "nbcallback-compare-read"]
    for thread in threads:
        thread.join(10)
    return [thread for thread in threads if thread.is_alive()]


def test_a_read_that_never_ends_does_not_keep_the_run_from_ending(kernel: _Sink,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that does not answer: the run's end waits READ_PATIENCE seconds, says so in one warning and draws its
    snapshot without the earlier runs; when the read ends later, it touches nothing of the finished run."""
    train(0.2)
    release, returned = threading.Event(), threading.Event()
    real_read = overlay_module.read_overlay

    def stuck(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        try:
            return real_read(*args, **kwargs)
        finally:
            returned.set()

    from nbcallback.widgets.render_widget import WidgetRenderer

    shown: list[Any] = []
    real_show = WidgetRenderer.show_runs
    monkeypatch.setattr(WidgetRenderer, "show_runs", lambda self, *a: shown.append(a) or real_show(self, *a))
    monkeypatch.setattr("nbcallback.widgets.dashboard.read_overlay", stuck)
    monkeypatch.setattr("nbcallback.widgets.dashboard.READ_PATIENCE", 0.3)
    dash, _, warned = train_warned(0.1, compare=1, display="widget")
    said = [message for message in warned if "compare" in message]
    assert said == ["Dashboard(compare=...): the earlier runs were still being read 0.3 s after this run ended (a "
                    "slow or unreachable disk?); its snapshot is drawn without them."]
    assert dash.view().status == "finished" and dash.overlay is None
    # The wait is the end's time, not the time the display took while the run trained.
    assert dash.final_seconds >= 0.3 > dash.view().display_seconds - dash.final_seconds
    snapshot = kernel.handles[0].bundles[-1]
    assert "finished" in _text(snapshot["text/html"]) and "lr 0.2" not in _text(snapshot["text/html"])
    release.set()
    assert returned.wait(10) and not _reading_threads_left()
    assert dash.overlay is None and shown == []  # the late read handed nothing to the finished run's display


def test_an_interrupt_while_the_end_waits_for_the_read_still_ends_the_run(kernel: _Sink,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The end waits for a slow read; a second interrupt there (KeyboardInterrupt out of the wait) still ends the
    run: final status, snapshot, the run's record."""
    from nbcallback.widgets.dashboard import Dashboard as Dash

    train(0.2)
    before = len(list_runs())
    real_end = Dash._end_reading

    def interrupted(self: Any, exc: Any) -> None:
        real_end(self, exc)
        raise KeyboardInterrupt

    monkeypatch.setattr(Dash, "_end_reading", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(0.1, compare=1, display="widget")
    snapshot = kernel.handles[-1].bundles[-1]
    assert isinstance(snapshot, dict) and "finished" in _text(snapshot["text/html"])
    assert len(list_runs()) == before + 1


def test_without_a_thread_to_read_on_the_runs_are_read_at_the_start(kernel: _Sink,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    train(0.2)

    def refuse(self: Any) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    dash, _ = train(0.1, compare=1, display="widget")
    assert dash.view().status == "finished" and [run.label for run in dash.overlay.runs] == ["lr 0.2"]


def test_a_failing_read_is_one_warning_and_the_live_run_goes_on(kernel: _Sink,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    train(0.2)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("[Errno 13] Permission denied: 'records'")

    monkeypatch.setattr("nbcallback.widgets.dashboard.read_overlay", broken)
    dash, _, warned = train_warned(0.1, compare=1, display="widget")
    said = [message for message in warned if "compare" in message]
    assert said == ["Dashboard(compare=...): the earlier runs could not be read (PermissionError: [Errno 13] "
                    "Permission denied: 'records'); this run goes on without them."]
    assert dash.overlay is None and dash.view().status == "finished"


def _faint_pixels(png: bytes, color: str) -> int:
    """How many pixels have the colour of a line ``color`` drawn at 70 % over white (a little tolerance: the PNG
    has 128 colours)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    want = [round(0.7 * c + 0.3 * 255) for c in rgb]
    return sum(count for count, pixel in image.getcolors(1 << 20)
               if all(abs(a - b) <= 14 for a, b in zip(pixel, want)))


def test_the_final_png_draws_the_earlier_runs_faint_and_their_names(kernel: _Sink) -> None:
    from PIL import Image

    from nbcallback.widgets.plot import PANEL_HEIGHT

    train(0.5)
    plain, _ = train(0.05, display="widget")
    with_runs, _ = train(0.05, display="widget", compare=1)
    assert plain.last_png is not None and with_runs.last_png is not None and plain.last_png != with_runs.last_png
    color = with_runs.overlay.runs[0].color
    assert _faint_pixels(with_runs.last_png, color) > 60
    assert _faint_pixels(plain.last_png, color) < 10
    size = Image.open(io.BytesIO(with_runs.last_png)).size
    assert size[1] > 2 * PANEL_HEIGHT  # a legend strip above the panels names the earlier run
    shown = [obj for obj, _ in kernel.plain if isinstance(obj, dict) and "image/png" in obj]
    assert base64.b64decode(shown[-1]["image/png"]) == with_runs.last_png


def test_the_png_keeps_the_overlay_in_its_y_range() -> None:
    """An earlier run whose loss was ten times higher stays inside the panel (the y range grows to it)."""
    from nbcallback.widgets.plot import render_png

    train(0.05)
    rec = list_runs()[-1]
    data = json.loads(rec.path.read_text())
    data["plot"]["series"]["loss"]["y"] = [value * 10 for value in data["plot"]["series"]["loss"]["y"]]
    rec.path.write_text(json.dumps(data))
    dash, _ = train(0.05, compare=1)
    state = dash.state.plot_data()
    panels = dash._panels_for({"metrics": state.metrics, "loss_positive": state.loss_positive})
    from matplotlib.figure import Figure

    captured: list[Any] = []
    real = Figure.add_axes

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        ax = real(self, *args, **kwargs)
        captured.append(ax)
        return ax

    Figure.add_axes = spy
    try:
        render_png(panels, state, overlay=dash.overlay)
    finally:
        Figure.add_axes = real
    top = max(y for y in dash.overlay.runs[0].series["loss"]["y"] if y is not None)
    assert captured[0].get_ylim()[1] >= top


def test_the_table_speaks_chinese() -> None:
    train(0.2)
    _dash, text = train(0.1, compare=1, lang="zh_CN")
    assert "之前的 1 次运行：" in text
    assert text.splitlines()[2].split()[:4] == ["运行", "结果", "轮次", "损失"]
    assert re.search(r"本次运行\s+已完成", text)


def test_an_evaluation_loss_column_is_not_mistaken_for_the_training_loss() -> None:
    from types import MappingProxyType

    from nbcallback.widgets.overlay import Overlay, OverlayRun, compare_table
    from nbcallback.widgets.words import Words

    run = OverlayRun("lr 0.1", "x", "stopped", 0.5, MappingProxyType({"accuracy": 0.9, "loss": 0.4}), 1,
                     MappingProxyType({}), RUN_COLORS[0])
    header, rows, colors = compare_table(Overlay.of([run]), None)
    assert header == ["run", "status", "epoch", "loss", "accuracy", "loss (eval)"]
    assert rows == [["lr 0.1", "stopped", "1", "0.5", "0.9", "0.4"]] and colors == [RUN_COLORS[0]]
    header, rows, _ = compare_table(Overlay.of([run]), None, Words("zh_CN"))
    assert header == ["运行", "结果", "轮次", "损失", "accuracy", "loss (验证)"] and rows[0][1] == "已停止"
    # compare(), outside a run, heads its table the same way (one place: runs.final_headings).
    train(0.05)
    rec = list_runs()[-1]
    data = json.loads(rec.path.read_text())
    data["final"]["metrics"]["loss"] = data["final"]["metrics"].pop("eval_loss")
    rec.path.write_text(json.dumps(data))
    assert str(runs_module.compare(1)).splitlines()[0].split() == ["run", "status", "epoch", "loss", "accuracy",
                                                                   "loss", "(eval)"]


def test_a_loop_of_ones_own_compares_too() -> None:
    import torch

    train(0.2, epochs=1)
    out = io.StringIO()
    with Dashboard(display="text", file=out, compare=1, epochs=1, steps_per_epoch=20) as board:
        for step in range(20):
            board.log(loss=torch.tensor(1.0 / (step + 1)))
    assert board.overlay is not None and len(board.overlay.runs) == 1
    assert "Earlier runs to compare with (1):" in out.getvalue()
    assert re.search(r"this run\s+finished\s+1", out.getvalue())


def test_a_dashboard_that_compared_pickles_without_the_runs_it_read() -> None:
    import pickle

    train(0.2)
    dash, _ = train(0.1, compare=1)
    assert dash.overlay is not None
    clone = pickle.loads(pickle.dumps(dash))
    assert clone.compare == 1 and clone.overlay is None and clone.time_panel == "auto"


def test_the_static_display_shows_the_table_live_and_in_the_snapshot(kernel: _Sink) -> None:
    train(0.2)
    dash, _ = train(0.1, compare=1, display="static")
    bundles = kernel.handles[0].bundles
    assert all("nbc-compare" in bundle["text/html"] for bundle in bundles[1:]), len(bundles)
    assert re.search(r"this run\s+finished", _text(bundles[-1]["text/html"]))
    assert "Earlier runs to compare with (1):" in bundles[-1]["text/plain"]
    assert dash.last_png is not None and _faint_pixels(dash.last_png, RUN_COLORS[0]) > 60


def test_a_run_with_other_series_is_drawn_where_it_shares_one_and_the_run_goes_on(kernel: _Sink) -> None:
    """An earlier run that evaluated another metric (and none of the live run's) and logged no lr: its loss is drawn,
    its own metric gets no panel of the live run's, its final metrics stay in the table; no warning, the run ends
    finished with its PNG."""
    train(0.05)
    rec = list_runs()[-1]
    data = json.loads(rec.path.read_text())
    series = data["plot"]["series"]
    series["eval:top5"] = series.pop("eval:accuracy")
    series.pop("lr", None)
    data["plot"]["metrics"] = ["top5" if name == "accuracy" else name for name in data["plot"]["metrics"]]
    data["final"]["metrics"] = {("top5" if name == "accuracy" else name): value
                                for name, value in data["final"]["metrics"].items()}
    rec.path.write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dash, _ = train(0.1, display="widget", compare=1)
    (earlier,) = dash.overlay.runs
    assert "loss" in earlier.series and "eval:top5" in earlier.series and "eval:accuracy" not in earlier.series
    assert dash.view().status == "finished" and dash.last_png is not None
    assert _faint_pixels(dash.last_png, earlier.color) > 60  # its loss, under the live loss
    snapshot = kernel.handles[-1].bundles[-1]["text/html"]
    assert "top5" in _text(snapshot)  # its own metric is still in the table of final metrics


def test_compare_text_table_lines_up_in_chinese() -> None:
    """compare()'s text table and the Dashboard's are aligned in terminal columns (a Chinese character takes two):
    the dashes under each heading are as wide as the widest cell of its column."""
    from nbcallback.widgets.format import display_width

    train(0.05)
    train(0.1)
    lines = str(runs_module.compare(2, lang="zh_CN")).splitlines()
    header, dashes, *rows = lines
    assert header.split()[:4] == ["运行", "结果", "轮次", "损失"]
    assert display_width(header) == display_width(dashes) >= max(display_width(row) for row in rows)
    ends = [index + len(run) for index, run in ((m.start(), m.group()) for m in re.finditer(r"-+", dashes))]
    for row in rows:  # every number ends where its column's dashes end (numbers are right-aligned)
        cells = [m for m in re.finditer(r"\S+", row)]
        assert display_width(row[:cells[-1].end()]) == ends[-1]


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_notebooks_first_run_says_there_is_nothing_to_compare_with_yet(kernel: _Sink, lang: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """compare=2 before any run of the notebook: one line says why no earlier run is drawn (live, in the snapshot
    and in the text), no warning; the run is remembered, and the next run draws it."""
    note = Words(lang)("compare_none")
    dash, text, warned = train_warned(0.2, compare=2, lang=lang)
    assert text.count(note) == 1 and warned == []  # printed once, at the start
    assert dash.overlay is not None and dash.overlay.runs == ()
    remembered = list(records().iterdir())
    for path in remembered:  # (the widget run below is the notebook's first again)
        path.unlink()
    sent, changes = _watch_widgets(monkeypatch)
    clock = FakeClock()
    dash, _, warned = train_warned(0.1, compare=2, display="widget", lang=lang, clock=clock, steps=40,
                                   callbacks=(_ReadFirst(), Ticker(clock, 0.05)))
    assert warned == [] and dash.overlay is not None and dash.overlay.runs == ()
    assert changes == []  # no curves to send
    live = [message["view"]["html"].get("compare", "") for message in sent if message.get("type") == "view"]
    assert live and all(note in unescape(html) for html in live)  # the live widget says it under its table
    snapshot = kernel.handles[-1].bundles[-1]
    assert note in unescape(snapshot["text/html"]) and note in snapshot["text/plain"]
    assert len(remembered) == 1 and len(list_runs()) == 1  # each run was remembered
    dash, text, _ = train_warned(0.05, compare=2, lang=lang)
    assert len(dash.overlay.runs) == 1 and dash.overlay.runs[0].label.startswith("lr 0.1") and note not in text
