"""A plain ``python script.py`` run, and the final PNG plot (plot.py) of real and synthetic runs."""
from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from nbcallback.widgets import Dashboard, LiveLossPlot
from tests.widgets.conftest import FakeClock
from nbcallback.widgets.panels import Line, Panel, default_panels
from nbcallback.widgets.plot import PANEL_HEIGHT, PANEL_WIDTH, png_size, render_png
from nbcallback.widgets.render_html import plot_bundle, snapshot_bundle
from nbcallback.widgets.state import TrainingState
from tests.widgets.conftest import SEED, batches, new_model

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """\
import torch
torch.set_num_threads(1)
from tests.widgets.conftest import batches, new_model
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar
model, opt = new_model()
model.fit(2, batches(150), batches(10, seed=1),
          callbacks=[ProgressBar(log_interval=0.2), LiveLossPlot(save_path={png!r}), Dashboard()])
print(model.eval(batches(10, seed=1), callbacks=[ProgressBar()]))
"""


def test_plain_script_prints_readable_text(tmp_path: Path) -> None:
    png = tmp_path / "out" / "loss.png"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(png=str(png)))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO), NBCB_TEST_SEED=str(SEED))
    env.pop("NBCALLBACK_DISPLAY", None)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env, cwd=str(REPO)
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    print(out)
    for bad in ("<div", "<progress", "HBox(", "VBox(", "HTML(value", "application/vnd", "\r", "\x1b", "IPython"):
        assert bad not in out, f"{bad!r} in script output"
    assert out.startswith("training: 2 epochs x 150 steps with validation\n")
    assert "epoch 1/2 · loss " in out and "epoch 2/2 · loss " in out
    assert "Training finished: 2/2 epochs, 300/300 steps" in out
    assert f"loss plot: {png}" in out
    assert "Evaluation finished: 10/10 steps" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert len(out.splitlines()) < 40


def _png(data: bytes) -> Any:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_final_png_of_a_three_epoch_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = Path(os.environ.get("NBCB_PLOT_DIR") or tmp_path_factory.mktemp("widget_plot"))
    model, _ = new_model()
    plot = LiveLossPlot(display="off", save_path=folder / "live_loss_plot.png")
    dash = Dashboard(display="text", file=open(os.devnull, "w"), save_path=folder / "dashboard.png")
    model.fit(3, batches(300), batches(20, seed=1), callbacks=[plot, dash])
    print(f"\nfinal PNGs in {folder}")
    # display='off' draws nothing; the text-mode dashboard draws its PNG because it has a save_path.
    assert not (folder / "live_loss_plot.png").exists() and plot.last_png is None
    data = (folder / "dashboard.png").read_bytes()
    assert data == dash.last_png and data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) <= 60_000
    image = _png(data)
    assert image.size == (2 * 2 * PANEL_WIDTH, 2 * PANEL_HEIGHT)  # loss and accuracy, at twice the CSS size
    assert image.mode == "P" and len(image.getcolors(256)) <= 128  # a 128-colour palette: a third of the bytes
    view = dash.view()
    assert view.status == "finished" and view.rows_total == 3
    assert view.rows[-1].values["accuracy"] > 0.85  # the signal was learnt


def test_a_path_that_cannot_be_written_warns_and_the_run_returns(tmp_path: Path) -> None:
    """The run went well: a bad save_path must not turn it into an exception after the last step."""
    (tmp_path / "plots").mkdir()
    with pytest.raises(ValueError, match=r"save_path '.*plots' is a folder; give the PNG's file name, e\.g\. save_path="):
        LiveLossPlot(save_path=tmp_path / "plots")
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    out = io.StringIO()
    plot = LiveLossPlot(display="text", file=out, save_path=blocker / "loss.png")
    model, _ = new_model()
    with pytest.warns(RuntimeWarning, match=r"could not be saved to '.*loss\.png' \(.*\); it is kept in \.last_png\. "
                                            r"Pass a path that can be written"):
        model.train(1, batches(30), callbacks=[plot])  # returns normally
    assert plot.last_png is not None and plot.last_png[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.getvalue().strip().splitlines()[-1] == f"loss plot: not saved to {blocker / 'loss.png'}, see the warning above"
    assert blocker.read_text() == "a file where a folder should be"  # nothing else touched


def test_a_metric_name_no_evaluation_returned_is_named_in_a_warning() -> None:
    # A typo in groups= or panels= used to leave an empty panel (and no panel in the PNG) without a word.
    with pytest.raises(ValueError, match=r"Line 'accuracy': key must be 'loss', 'lr' or 'eval:<metric>', e\.g\. "):
        Line("accuracy", "acc")
    model, _ = new_model()
    plot = LiveLossPlot(display="text", file=io.StringIO(), groups={"quality": ["acuracy", "accuracy"]},
                        panels=[Panel("f1", [Line("eval:f1", "f1")])])
    expected = (r"LiveLossPlot: this run's evaluations returned no 'acuracy', 'f1', so their lines stay empty; they "
                r"returned 'accuracy', 'eval_loss'\. Check the metric names in groups= and panels=\.")
    with pytest.warns(RuntimeWarning, match=expected):
        model.fit(1, batches(20), batches(5, seed=1), callbacks=[plot])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a run without evaluations has nothing to compare: no warning
        model.train(1, batches(5), callbacks=[plot])
        model.fit(1, batches(20), batches(5, seed=1), callbacks=[LiveLossPlot(display="text", file=io.StringIO(),
                                                                               groups={"q": ["accuracy"]})])


def test_saved_snapshot_stays_small_for_any_number_of_epochs() -> None:
    """1000 epochs with evaluation: table capped, series bounded, snapshot <= 100 KB."""
    import math
    import random

    seed = SEED + 7
    print(f"seed={seed}")
    rng = random.Random(seed)
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1000, steps_per_epoch=100, has_validation=True, eval_steps=20, lr=0.01)
    step = 0
    for epoch in range(1, 1001):
        state.begin_epoch(epoch, clock())
        clock.advance(1.0)
        losses = [2.3 * math.exp(-(step + i) / 20000) + 0.3 * rng.random() for i in range(100)]
        step += 100
        state.record_steps(clock(), step, losses)
        state.add_eval_row(clock(), {"accuracy": min(0.999, 0.8 + epoch / 5000), "eval_loss": losses[-1]},
                           epoch=epoch, step=step)
        state.end_epoch(epoch, clock(), validated=True)
    state.finish(clock(), "finished", "finished")
    data = state.plot_data()
    assert all(len(series["x"]) <= 1000 for series in data.series.values())
    panels = default_panels(data.metrics, loss_positive=data.loss_positive, lr=data.lr_changed)
    png = render_png(panels, data)
    view = state.view(clock(), live_rows=None, max_rows=200)
    bundle = snapshot_bundle(view, frozenset({"progress", "table", "plot"}), has_plot=True)
    plot_output, _ = plot_bundle(view, png)
    size = sum(len(v.encode()) for b in (bundle, plot_output) for v in b.values())
    print(f"snapshot for 1000 epochs: {size} bytes (PNG {len(png)} bytes, {len(view.rows)} rows shown)")
    assert size <= 100_000
    assert "800 rows omitted" in bundle["text/html"]
    assert plot_output["image/png"] == base64.b64encode(png).decode()


def _run_data(metrics: dict[str, float], lr_change: bool = False, negative: bool = False) -> TrainingState:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=50, has_validation=True, eval_steps=5, lr=0.1)
    step = 0
    for epoch in (1, 2):
        state.begin_epoch(epoch, clock())
        clock.advance(1.0)
        losses = [(1.0 / (step + i + 1)) - (0.5 if negative else 0.0) for i in range(50)]
        step += 50
        state.record_steps(clock(), step, losses)
        if lr_change:
            state.set_lr(0.1 / (epoch + 1))
        state.add_eval_row(clock(), {k: v * epoch for k, v in metrics.items()}, epoch=epoch, step=step)
        state.end_epoch(epoch, clock(), validated=True)
    return state


def test_render_png_draws_every_panel_with_data_and_only_those() -> None:
    state = _run_data({"accuracy": 0.4, "eval_loss": 0.3, "f1": 0.3}, lr_change=True)
    data = state.plot_data()
    panels = default_panels(data.metrics, lr=data.lr_changed, loss_positive=data.loss_positive,
                            extra=[Panel("accuracy and f1", [Line("eval:accuracy", "acc", "m1", "points"),
                                                             Line("eval:f1", "f1", "m2", "line")]),
                                   Panel("nothing recorded", [Line("eval:missing", "missing")])])
    assert [p.title for p in panels] == ["loss", "accuracy", "f1", "learning rate", "accuracy and f1",
                                         "nothing recorded"]
    image = _png(render_png(panels, data))
    # Five panels with data (three per row), the empty one left out.
    assert image.size == (2 * 3 * PANEL_WIDTH, 2 * 2 * PANEL_HEIGHT)
    assert png_size(5) == (3 * PANEL_WIDTH, 2 * PANEL_HEIGHT)
    assert render_png([Panel("nothing", [Line("eval:missing", "missing")])], data) is None
    # A loss that goes negative is drawn on a linear axis, without warnings.
    negative = _run_data({"accuracy": 0.4}, negative=True).plot_data()
    assert not negative.loss_positive
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        linear = render_png(default_panels(negative.metrics, loss_positive=False), negative)
    assert _png(linear).size == (2 * 2 * PANEL_WIDTH, 2 * PANEL_HEIGHT)


def test_the_band_and_the_line_are_drawn_in_the_loss_colour() -> None:
    """The training loss is visible in the PNG: many pixels near its colour, and its faint band."""
    import numpy as np

    state = _run_data({"accuracy": 0.4})
    data = state.plot_data()
    image = np.asarray(_png(render_png(default_panels(data.metrics), data)).convert("RGB")).astype(int)
    loss_panel = image[:, : 2 * PANEL_WIDTH]
    blue = np.array([0x19, 0x76, 0xD2])
    near = (np.abs(loss_panel - blue).max(axis=2) < 40).sum()
    assert near > 300, f"only {near} pixels in the loss colour"
    accuracy_panel = image[:, 2 * PANEL_WIDTH :]
    orange = np.array([0xE6, 0x51, 0x00])
    assert (np.abs(accuracy_panel - orange).max(axis=2) < 40).sum() > 50  # the evaluation points
