"""A plain ``python script.py`` run, and the loss plot of a real 3-epoch run."""
from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbcallback.widgets import Dashboard, LiveLossPlot
from nbcallback.widgets.clock import FakeClock
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


def test_live_plot_png_of_a_three_epoch_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = Path(os.environ.get("NBCB_PLOT_DIR") or tmp_path_factory.mktemp("widget_plot"))
    model, _ = new_model()
    plot = LiveLossPlot(display="off", save_path=folder / "live_loss_plot.png")
    dash = Dashboard(display="text", file=open(os.devnull, "w"), save_path=folder / "dashboard.png")
    model.fit(3, batches(300), batches(20, seed=1), callbacks=[plot, dash])
    print(f"\nlive plot PNGs in {folder}")
    # display='off' draws nothing, but the text-mode dashboard renders its final frame.
    saved = folder / "dashboard.png"
    data = saved.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) <= 40_000
    view = dash.view()
    assert view.status == "finished" and view.rows_total == 3
    assert view.rows[-1].values["accuracy"] > 0.85  # the signal was learnt
    # A live frame of the same run: size and time (reported, not asserted on time).
    from nbcallback.widgets.plot import LossPlot

    renderer = LossPlot()
    renderer.render(dash.state.plot_data())  # builds the figure (one-off)
    started = time.perf_counter()
    frame = renderer.render(dash.state.plot_data())
    elapsed = time.perf_counter() - started
    renderer.close()
    print(f"live frame: {elapsed * 1000:.1f} ms, {len(frame) / 1024:.1f} KB")
    assert frame is not None and len(frame) <= 40_000


def test_saved_snapshot_stays_small_for_any_number_of_epochs() -> None:
    """1000 epochs with evaluation: table capped, plot decimated, snapshot <= 60 KB."""
    import math
    import random

    from nbcallback.widgets.plot import LossPlot

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
    plot = LossPlot()
    data = state.plot_data()
    assert len(data.raw[0]) <= 2000 and len(data.smooth[0]) <= 2000
    png = plot.render(data, final=True)
    plot.close()
    view = state.view(clock(), live_rows=None, max_rows=200)
    bundle = snapshot_bundle(view, frozenset({"progress", "table", "plot"}), has_plot=True)
    plot_output = plot_bundle(view, png)
    size = sum(len(v.encode()) for b in (bundle, plot_output) for v in b.values())
    print(f"snapshot for 1000 epochs: {size} bytes (PNG {len(png)} bytes, {len(view.rows)} rows shown)")
    assert size <= 60_000
    assert "800 rows omitted" in bundle["text/html"]
    assert plot_output["image/png"] == base64.b64encode(png).decode()


def test_new_ranges_and_legend_entries_redraw_only_the_scale_layer() -> None:
    """The first evaluation point (new panel title, legend entry, y-range) must not cost a full redraw."""
    import math

    from nbcallback.widgets.plot import LossPlot

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=500, has_validation=True, eval_steps=50)
    state.begin_epoch(1, clock())
    plot = LossPlot()
    frames = []
    for step in range(100, 501, 100):
        clock.advance(1.0)
        state.record_steps(clock(), step, [2.3 * math.exp(-(step - 100 + i) / 300) for i in range(100)])
        frames.append(plot.render(state.plot_data()))
    blitted = plot.frames - plot.scale_draws
    assert plot.full_draws == 1 and blitted >= 1  # live frames reuse both layers
    state.add_eval_row(clock(), {"accuracy": 0.9, "eval_loss": 0.4}, epoch=1, step=500)
    state.end_epoch(1, clock(), validated=True)
    scales = plot.scale_draws
    final = plot.render(state.plot_data(), final=True)
    assert plot.full_draws == 1, "a new title, legend entry and y-range must not redraw the static layer"
    assert plot.scale_draws == scales + 1
    assert final != frames[-1] and final[:8] == b"\x89PNG\r\n\x1a\n"
    plot.close()


def _pixels(png: bytes) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").tobytes()


def _forget_scale_layer(plot) -> None:
    """Make ``plot``'s next frame draw every panel of its scale layer (nothing kept or copied back)."""
    plot._background = None
    plot._kept_columns.clear()


@pytest.mark.parametrize("groups", [None, {"accuracy": ["accuracy"], "a group title that is much wider than the panel below it": ["f1"]}])
def test_partial_scale_redraws_give_the_same_picture_as_full_redraws(groups) -> None:
    """Only changed panels are redrawn (new legend rows drawn over the layer); every frame must
    still be pixel-identical to one drawn from scratch over the static layer.  A title wider
    than its panel's column falls back to redrawing every panel."""
    import math
    import random

    from nbcallback.widgets.plot import LossPlot

    rng = random.Random(SEED)
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=3, steps_per_epoch=300, has_validation=True, eval_steps=20)
    partial, full = LossPlot(groups=groups), LossPlot(groups=groups)
    step = 0
    compared = 0
    for epoch in (1, 2, 3):
        state.begin_epoch(epoch, clock())
        for _ in range(6):
            clock.advance(1.0)
            scale = 4.0 if epoch == 2 else 1.0  # a loss spike: the loss panel's y-range changes
            losses = [scale * 2.3 * math.exp(-(step + i) / 400) + 0.2 * rng.random() for i in range(50)]
            step += 50
            state.record_steps(clock(), step, losses)
            _forget_scale_layer(full)
            expected = full.render(state.plot_data())
            assert _pixels(partial.render(state.plot_data())) == _pixels(expected)
            compared += 1
        values = {"accuracy": 0.8 + 0.05 * epoch, "eval_loss": 0.6 / epoch}
        if epoch >= 2:
            values["f1"] = 0.7 + 0.1 * epoch  # a new panel member (and a title wider than its column)
        state.add_eval_row(clock(), values, epoch=epoch, step=step)
        state.end_epoch(epoch, clock(), validated=True)
        _forget_scale_layer(full)
        expected = full.render(state.plot_data())
        assert _pixels(partial.render(state.plot_data())) == _pixels(expected), f"after evaluation {epoch}"
        compared += 1
    assert partial.full_draws == full.full_draws == (1 if groups else 2)  # f1 adds a panel by default
    assert partial.scale_draws < full.scale_draws == compared  # some frames reused the scale layer
    if groups is None:
        assert partial.panel_draws < 2 * partial.scale_draws  # some scale draws left a panel alone
    else:
        assert partial.panel_draws == 3 * partial.scale_draws  # the wide title: every panel each time
    partial.close()
    full.close()


def test_a_prebuilt_figure_draws_the_same_first_frame_without_a_full_redraw() -> None:
    """The plot helper builds the figure when the run starts; the first frame must look the same
    as without that (the empty figure's (0, 1) range is a placeholder, not a range to keep)."""
    from nbcallback.widgets.plot import LossPlot

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=500, has_validation=True, eval_steps=50)
    prebuilt, fresh = LossPlot(), LossPlot()
    prebuilt.prebuild(state.plot_data())
    assert prebuilt.full_draws == 1 and prebuilt.frames == 0
    state.begin_epoch(1, clock())
    state.record_steps(clock(), 60, [2.5 - i / 100 for i in range(60)])
    first = prebuilt.render(state.plot_data())
    assert prebuilt.full_draws == 1, "the first frame rebuilt the prebuilt figure"
    assert _pixels(first) == _pixels(fresh.render(state.plot_data()))
    prebuilt.close()
    fresh.close()


def _fit_frames(plot, epochs: int, steps: int, scale: float) -> list[bytes]:
    """The frames of a small fit drawn by ``plot``: two live frames per epoch and one after each evaluation."""
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=epochs, steps_per_epoch=steps, has_validation=True, eval_steps=10)
    frames = []
    for epoch in range(1, epochs + 1):
        state.begin_epoch(epoch, clock())
        for half in (1, 2):
            done = state.global_step
            step = (epoch - 1) * steps + half * steps // 2
            state.record_steps(clock(), step, [scale / (1 + i / 50) for i in range(done, step)])
            frames.append(plot.render(state.plot_data()))
        state.add_eval_row(clock(), {"accuracy": 0.5 + 0.1 * epoch, "eval_loss": scale / (2 + epoch)},
                           epoch=epoch, step=state.global_step)
        state.end_epoch(epoch, clock(), validated=True)
        frames.append(plot.render(state.plot_data(), final=epoch == epochs))
    return frames


def test_a_restarted_plot_draws_the_next_run_like_a_new_one() -> None:
    """The next run keeps the figure (no rebuild when the layout is the same) and its frames are
    pixel-identical to those of a new plot; another layout (here: other epoch marks) rebuilds."""
    from nbcallback.widgets.plot import LossPlot

    kept = LossPlot()
    _fit_frames(kept, epochs=2, steps=200, scale=3.0)
    assert kept.builds == 1
    kept.restart()
    again = _fit_frames(kept, epochs=2, steps=200, scale=0.8)  # other y-ranges, same layout
    assert kept.builds == 1, "the same layout rebuilt the figure"
    assert kept.column_copies >= 1, "the empty metric panel of the first run was drawn again"
    fresh = _fit_frames(LossPlot(), epochs=2, steps=200, scale=0.8)
    assert [_pixels(a) for a in again] == [_pixels(b) for b in fresh]
    kept.restart()
    other = _fit_frames(kept, epochs=4, steps=100, scale=0.8)  # same 400 steps, other epoch marks
    assert kept.builds == 2
    assert _pixels(other[-1]) == _pixels(_fit_frames(LossPlot(), epochs=4, steps=100, scale=0.8)[-1])
    kept.close()


def test_inline_figures_are_kept_for_the_next_run_with_the_same_options() -> None:
    from nbcallback.widgets import frames as frames_module
    from nbcallback.widgets.frames import FrameSource

    idle = frames_module._IdlePlots(limit=1)
    original = frames_module._IDLE_PLOTS
    frames_module._IDLE_PLOTS = idle
    try:
        def run(options):
            clock = FakeClock()
            state = TrainingState()
            state.start(clock(), epochs=1, steps_per_epoch=50, has_validation=False)
            source = FrameSource(options, live=True, use_process=False, interval=2.0, budget=0.01)
            state.begin_epoch(1, clock())
            state.record_steps(clock(), 50, [1.0 / (i + 1) for i in range(50)])
            png = source.final_frame(state)
            plot = source.inline
            source.close()
            return plot, png

        first, _ = run({"dpi": 80})
        second, png = run({"dpi": 80})
        assert second is first and first.builds == 1, "the figure was not reused"
        third, small = run({"dpi": 40})
        assert third is not first and len(small) < len(png)
        fourth, _ = run({"dpi": 80})
        assert fourth is not first, "beyond the limit the oldest figure is freed"
    finally:
        frames_module._IDLE_PLOTS = original


def _flat_run(plot, levels: list[float]) -> list[bytes]:
    """A validating one-epoch run stopped before its evaluation: 100 steps of a flat loss per
    level, a live frame after each, and the final frame."""
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=400, has_validation=True, eval_steps=10)
    state.begin_epoch(1, clock())
    pngs = []
    for level in levels:
        state.record_steps(clock(), state.global_step + 100, [level] * 100)
        pngs.append(plot.render(state.plot_data()))
    pngs.append(plot.render(state.plot_data(), final=True))
    return pngs


def test_kept_columns_are_copied_back_where_a_panel_shows_the_same() -> None:
    """A panel that shows a title, y-range, legend and hint it showed before (here: in the previous
    run of a kept figure) is copied back instead of drawn; every frame must still be the one a new
    plot draws, including the final frame of a validating run stopped before its evaluation,
    whose metric panel changes its hint."""
    from nbcallback.widgets.plot import LossPlot

    kept = LossPlot()
    _flat_run(kept, [1.0])
    kept.restart()
    copies = kept.column_copies
    again = _flat_run(kept, [1.0, 30.0])
    assert kept.column_copies >= copies + 2, "the first frame drew panels the previous run had drawn"
    fresh = _flat_run(LossPlot(), [1.0, 30.0])
    assert [_pixels(a) for a in again] == [_pixels(b) for b in fresh]
    assert _pixels(again[-1]) != _pixels(again[-2]), "the final frame must say that no evaluation came"
    kept.close()


def test_frame_cost_predicts_a_blit_or_a_scale_redraw_from_what_frames_cost() -> None:
    """Inline plotting asks what the next frame will cost before drawing it: nothing for a frame
    that builds the figure, the costliest frame when the y-axes must be redrawn (a kept figure's
    next run, a new y-range), the costliest blit when only the lines change."""
    from nbcallback.widgets.plot import LossPlot

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=400, has_validation=True, eval_steps=10)
    state.begin_epoch(1, clock())
    plot = LossPlot()
    state.record_steps(clock(), 100, [2.0 - i / 200 for i in range(100)])
    assert plot.frame_cost(state.plot_data()) == 0.0  # builds the figure
    plot.render(state.plot_data())
    assert plot.costliest_frame == plot.costliest_blit == 0.0  # building frames are not measured
    state.record_steps(clock(), 110, [1.5] * 10)  # inside the y-range: the lines only
    cost = plot.frame_cost(state.plot_data())
    draws = plot.scale_draws
    plot.render(state.plot_data())
    assert cost == 0.0 and plot.scale_draws == draws and plot.costliest_blit > 0
    state.record_steps(clock(), 120, [9.0] * 10)  # above it: the loss panel's y-axis is redrawn
    assert plot.frame_cost(state.plot_data()) == plot.costliest_frame == plot.costliest_blit
    plot.render(state.plot_data())
    assert plot.scale_draws == draws + 1 and plot.costliest_frame >= plot.costliest_blit
    state.record_steps(clock(), 130, [8.0] * 10)
    assert plot.frame_cost(state.plot_data()) == plot.costliest_blit
    plot.render(state.plot_data())
    plot.restart()  # the next run on the kept figure redraws its y-axes
    assert plot.frame_cost(state.plot_data()) == plot.costliest_frame
    plot.close()


def test_tick_labels_stand_on_their_own() -> None:
    """The axes are drawn without matplotlib's offset text, so each label must carry its full value."""
    from nbcallback.widgets.plot import _step_label, _value_label

    assert [_value_label(v) for v in (0.0, 0.875, 1.6, 2.4, 0.0001234, 12345.0)] == [
        "0", "0.875", "1.6", "2.4", "0.000123", "1.23e+04"]
    assert [_step_label(v) for v in (0, 500, 9999, 12500, 250000, 2_000_000)] == [
        "0", "500", "9999", "12.5k", "250k", "2M"]


@pytest.mark.parametrize(
    "case", ["one-epoch fit", "eval loss above the curve", "losses changed after", "second epoch", "no evaluation"]
)
def test_a_final_frame_prepared_during_the_last_evaluation_looks_the_same(case: str) -> None:
    """``prepare_final`` (the helper calls it when the last evaluation begins) lets the final
    frame only add the evaluation points, legend rows and the metric panel's title; the picture
    must be pixel-identical to a final frame drawn without it, and when something under the
    lines changed (a y-range, the losses) the final frame is drawn in full."""
    import math

    from nbcallback.widgets.plot import LossPlot

    epochs = 2 if case == "second epoch" else 1
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=epochs, steps_per_epoch=400, has_validation=case != "no evaluation", eval_steps=20)
    prepared, plain = LossPlot(), LossPlot()
    for plot in (prepared, plain):
        plot.prebuild(state.plot_data())
    for epoch in range(1, epochs + 1):
        state.begin_epoch(epoch, clock())
        for step in range(100, 401, 100):
            clock.advance(1.0)
            done = state.global_step
            end = (epoch - 1) * 400 + step
            state.record_steps(clock(), end, [2.3 * math.exp(-i / 300) + 0.05 * (i % 7) for i in range(done, end)])
            for plot in (prepared, plain):
                plot.render(state.plot_data())
        if epoch == epochs:
            prepared.prepare_final(state.plot_data())  # the last evaluation begins
        if case == "losses changed after":
            state.record_steps(clock(), state.global_step + 10, [0.5] * 10)
        if case != "no evaluation":
            eval_loss = 5.0 if case == "eval loss above the curve" else 0.4
            state.add_eval_row(clock(), {"accuracy": 0.8 + 0.05 * epoch, "eval_loss": eval_loss},
                               epoch=epoch, step=state.global_step)
        state.end_epoch(epoch, clock(), validated=case != "no evaluation")
        if epoch < epochs:
            for plot in (prepared, plain):
                plot.render(state.plot_data())
    final = prepared.render(state.plot_data(), final=True)
    assert _pixels(final) == _pixels(plain.render(state.plot_data(), final=True))
    shortcut = case in ("one-epoch fit", "no evaluation")
    assert prepared.prefinal_frames == int(shortcut), "the prepared picture was (not) used"
    assert plain.prefinal_frames == 0
    # A frame after the final one (a reused figure) draws the scale layer anew.
    assert _pixels(prepared.render(state.plot_data())) == _pixels(plain.render(state.plot_data()))
    prepared.close()
    plain.close()


@pytest.mark.parametrize("style", ["default", "dark"])
def test_palette_frames_keep_the_picture_of_an_rgb_frame(style: str) -> None:
    """Frames are mapped to a fixed palette made for the figure (its colours in shades towards the
    background): smaller than RGB, and every pixel stays close to the RGB picture, the faint grid
    and raw line included; also under a dark matplotlib style in the kernel (inline plotting)."""
    import math as _math

    import matplotlib
    import numpy as np
    from PIL import Image

    from nbcallback.widgets.plot import LossPlot

    dark = {"figure.facecolor": "black", "axes.facecolor": "#202020", "text.color": "white",
            "axes.edgecolor": "white", "xtick.color": "white", "ytick.color": "white", "grid.color": "0.7"}
    state = TrainingState()
    state.start(0.0, epochs=3, steps_per_epoch=300, has_validation=True, eval_steps=10)
    for epoch in range(1, 4):
        state.begin_epoch(epoch, 0.0)
        state.record_steps(1.0, 300 * epoch, [2.0 * _math.exp(-i / 300) + 0.1 * ((i * 7919) % 13) / 13
                                              for i in range(300 * (epoch - 1), 300 * epoch)])
        state.add_eval_row(2.0, {"accuracy": 0.8 + epoch / 50, "eval_loss": 0.5 - epoch / 20, "precision": 0.7 + epoch / 30},
                           epoch=epoch, step=300 * epoch)
    pictures = {}
    with matplotlib.rc_context(dark if style == "dark" else {}):
        for palette in (True, False):
            plot = LossPlot(palette=palette)
            png = plot.render(state.plot_data(), final=True)
            plot.close()
            with Image.open(io.BytesIO(png)) as image:
                assert image.mode == ("P" if palette else "RGB")
                pictures[palette] = (len(png), np.asarray(image.convert("RGB")).astype(int))
    (small, mapped), (large, rgb) = pictures[True], pictures[False]
    assert small < 0.75 * large, (small, large)
    error = np.abs(mapped - rgb).max(axis=2)
    assert error.max() <= 64, f"a pixel off by {error.max()}"
    assert (error > 24).mean() < 0.002, f"{(error > 24).sum()} pixels off by more than 24"
    # Faint things (the grid, light anti-aliased edges) keep their shade: a palette computed per
    # frame (64 colours, octree) put them 10 levels off on average, nearly erasing the grid.
    background = rgb[0, 0]
    shade = np.abs(rgb - background).max(axis=2)
    faint = (shade > 8) & (shade <= 40)
    assert faint.sum() > 1000
    assert error[faint].mean() < 7, f"faint pixels {error[faint].mean():.1f} levels off on average"
    assert (np.abs(mapped - background).max(axis=2)[faint] > 0).all(), "a faint pixel became background"
