"""``CallbackProfiler``: where the time of a run goes (nbcallback's own)."""
from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from nbcallback.train import (
    Callback,
    CallbackProfiler,
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    TimeMonitor,
)
from nbcallback.train.callback import CallbackManager
from nbcallback.train.profiler import ProfileRow

from .helpers import blobs, make_model


class Slow(Callback):
    """A callback that costs ``seconds`` after every training step."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_train_step_end(self, run_context) -> None:
        time.sleep(self.seconds)


def _by_label(profiler: CallbackProfiler) -> dict[str, ProfileRow]:
    return {row.label: row for row in profiler.rows}


def _assert_rows_add_up(profiler: CallbackProfiler, outside: float) -> None:
    """The rows add up to the profiler's wall time, which lies inside the time measured around the call and
    covers nearly all of it (the part outside is the call's set-up before the first hook: sub-millisecond,
    against a run of 0.6 s or more (20 steps of 25 ms sleeps) that the test makes long for this ratio)."""
    assert sum(row.total_s for row in profiler.rows) == pytest.approx(profiler.wall_s, rel=1e-9)
    assert profiler.wall_s <= outside
    assert profiler.wall_s >= 0.9 * outside, (profiler.wall_s, outside)


def test_the_rows_add_up_to_the_wall_time_measured_outside():
    model = make_model()
    data = blobs(10)
    model.train(1, data)  # first-call costs (lazy imports, allocator) outside the measured run
    profiler = CallbackProfiler()
    started = time.perf_counter()
    model.fit(2, data, data[:3], callbacks=[profiler, TimeMonitor(), Slow(0.025)])
    outside = time.perf_counter() - started
    rows = profiler.rows
    _assert_rows_add_up(profiler, outside)
    assert _by_label(profiler)["Slow.on_train_step_end"].total_s >= 20 * 0.025  # the sleeps are in the rows
    assert sum(row.share for row in rows) == pytest.approx(1.0)
    assert all(row.total_s >= 0 for row in rows)
    assert [row.kind for row in rows].count("loop") == 1
    assert str(profiler).splitlines()[-1].split()[-1] == "100.0%"


def test_a_slow_callback_is_found_and_ranked_first():
    profiler = CallbackProfiler()
    make_model().train(1, blobs(6), callbacks=[LossMonitor(100), Slow(0.02), TimeMonitor(), profiler])
    first = profiler.rows[0]
    assert (first.kind, first.name, first.part, first.calls) == ("callback", "Slow", "on_train_step_end", 6)
    assert first.share > 0.5
    assert first.mean_us >= 20_000
    assert str(profiler).splitlines()[2].startswith("Slow.on_train_step_end ")


def test_the_tutorial_callbacks_have_a_row_per_hook_with_their_call_counts(tmp_path, capsys):
    profiler = CallbackProfiler()
    config = CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=2)
    callbacks = [profiler, LossMonitor(3), TimeMonitor(), ModelCheckpoint(prefix="p", directory=tmp_path, config=config)]
    make_model().train(2, blobs(6), callbacks=callbacks)
    rows = _by_label(profiler)
    assert rows["LossMonitor.on_train_step_end (step_end)"].calls == 12  # once per step, through the legacy name
    assert rows["ModelCheckpoint.on_train_step_end (step_end)"].calls == 12
    assert rows["ModelCheckpoint.on_train_end (end)"].calls == 1
    assert rows["TimeMonitor.on_train_step_begin"].calls == 12
    assert rows["TimeMonitor.on_train_epoch_begin (epoch_begin)"].calls == 2
    assert rows["TimeMonitor.on_train_epoch_end (epoch_end)"].calls == 2
    for part in ("forward", "backward", "optimizer"):
        assert rows[f"train step: {part}"].calls == 12
    # Hooks that only reach the empty base methods are not called, so they have no row.
    assert "LossMonitor.on_train_step_begin" not in rows
    assert not any(row.name == "CallbackProfiler" for row in profiler.rows)
    assert sorted(path.name for path in tmp_path.glob("*.ckpt")) == ["p-2_2.ckpt", "p-2_6.ckpt"]  # steps 8 and 12, keeping 2
    assert str(profiler).splitlines()[0] == (
        f"CallbackProfiler: Model.train on rank 0 of 1: 2 epochs, 12 steps, wall {profiler.wall_s:.3f} s"
    )


class Validation(Callback):
    """A custom callback: fit gives it the validation's hooks."""

    def on_eval_step_end(self, run_context) -> None:
        time.sleep(0.005)


def test_fit_reports_its_validation_and_eval_reports_alone():
    model = make_model()
    data = blobs(5)
    profiler = CallbackProfiler()
    model.fit(2, data, data[:3], callbacks=[TimeMonitor(), Validation(), profiler])
    rows = _by_label(profiler)
    assert profiler.run == "Model.fit"
    assert rows["validation: forward"].calls == 6  # 3 batches, 2 validations
    assert rows["validation: data, loss, metrics"].calls == 2
    assert rows["Validation.on_eval_step_end"].calls == 6
    assert rows["TimeMonitor.on_eval_epoch_end (epoch_end)"].calls == 2
    assert rows["train step: forward"].calls == 10  # the validation's forwards are not counted as training
    # The validation's own time excludes the callbacks' eval hooks inside it.
    assert rows["validation: data, loss, metrics"].total_s < rows["Validation.on_eval_step_end"].total_s

    model.eval(data, callbacks=[profiler, Validation()])  # a reused profiler starts over
    rows = _by_label(profiler)
    assert profiler.run == "Model.eval"
    assert rows["eval: forward"].calls == 5 and rows["eval: data, loss, metrics"].calls == 1
    assert not any(row.kind == "step" for row in profiler.rows)
    assert rows["Validation.on_eval_step_end"].calls == 5
    assert str(profiler).startswith("CallbackProfiler: Model.eval on rank 0 of 1: wall ")


class PredictsEachEpoch(Callback):
    """Runs the network from inside a hook: that time is the callback's, not the training step's."""

    def __init__(self, model: Model, batch: torch.Tensor) -> None:
        self.model, self.batch = model, batch

    def on_train_epoch_end(self, run_context) -> None:
        self.model.predict(self.batch)


def test_the_network_run_inside_a_callback_is_charged_to_the_callback():
    model = make_model()
    data = blobs(4)
    profiler = CallbackProfiler()
    model.train(2, data, callbacks=[profiler, PredictsEachEpoch(model, data[0][0])])
    rows = _by_label(profiler)
    assert rows["train step: forward"].calls == 8
    assert rows["PredictsEachEpoch.on_train_epoch_end"].calls == 2


def test_the_html_view_is_the_same_table():
    profiler = CallbackProfiler()
    assert "no run profiled yet" in profiler._repr_html_() and "no run profiled yet" in str(profiler)
    make_model().train(1, blobs(3), callbacks=[profiler, TimeMonitor(), Slow(0.001)])
    page = profiler._repr_html_()
    assert page.startswith("<table class='nbcallback-callback-profiler'>")
    assert page.count("<tr>") == len(profiler.rows) + 2  # the header and the total
    assert "<code>Slow.on_train_step_end</code>" in page and "train step: backward" in page
    assert "total (wall time)" in page and "Model.train on rank 0 of 1" in page


def test_summary_prints_the_table_when_the_run_ends(capsys):
    profiler = CallbackProfiler(summary=True)
    make_model().train(1, blobs(2), callbacks=[profiler])
    printed = capsys.readouterr().out
    assert printed.strip() == str(profiler)
    assert "train step: forward" in printed


def test_nothing_is_wrapped_or_hooked_without_the_profiler():
    monitor, timer = LossMonitor(), TimeMonitor()
    with CallbackManager([monitor, timer]) as manager:
        for hook, entries in manager._dispatch.items():
            for callback, method in entries:  # the callbacks' own bound methods, nothing in between
                assert method.__self__ is callback and method.__func__ is getattr(type(callback), hook)
    profiler = CallbackProfiler()
    with CallbackManager([monitor, timer, profiler]) as manager:
        wrapped = [method for callback, method in manager._dispatch["on_train_step_end"] if callback is monitor]
        assert not hasattr(wrapped[0], "__self__")  # timed, in the manager's table only
    # The profiler changes no callback, and takes its torch hooks away when the run ends.
    model = make_model()
    model.train(1, blobs(2), callbacks=[monitor, profiler])
    assert not {"on_train_step_end", "step_end"} & set(vars(monitor))
    network = model.train_network
    assert not network.network._forward_hooks and not network.network._forward_pre_hooks
    assert not network.optimizer._optimizer_step_pre_hooks and not network.optimizer._optimizer_step_post_hooks


class Fails(Callback):
    def on_train_step_end(self, run_context) -> None:
        raise RuntimeError("boom")


def test_a_failing_run_keeps_the_error_and_removes_the_hooks():
    model = make_model()
    profiler = CallbackProfiler()
    with pytest.raises(RuntimeError, match="boom") as caught:
        model.train(1, blobs(2), callbacks=[profiler, Fails()])
    assert "raised in callback Fails.on_train_step_end" in caught.value.__notes__
    assert not model.train_network.network._forward_hooks
    assert _by_label(profiler)["Fails.on_train_step_end"].calls == 1


def test_two_instances_of_a_class_get_their_own_rows():
    profiler = CallbackProfiler()
    make_model().train(1, blobs(2), callbacks=[profiler, Slow(0), Slow(0)])
    assert {"Slow.on_train_step_end", "Slow#2.on_train_step_end"} <= set(_by_label(profiler))


def test_a_model_without_optimizer_is_timed_as_one_forward():
    network = nn.Linear(8, 3)
    model = Model(network, nn.CrossEntropyLoss())
    profiler = CallbackProfiler()
    model.train(1, blobs(3), callbacks=profiler)
    parts = {row.part for row in profiler.rows if row.kind == "step"}
    assert parts == {"forward"}


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"'summary' must be True or False, but got 'yes'"):
        CallbackProfiler(summary="yes")
    with pytest.raises(TypeError, match=r"'synchronize' must be None \(automatic\), True or False, but got 1"):
        CallbackProfiler(synchronize=1)


def test_it_is_reached_from_both_public_paths_and_says_it_is_nbcallbacks_own():
    import nbcallback.train.callback as callback_module

    assert callback_module.CallbackProfiler is CallbackProfiler and "CallbackProfiler" in callback_module.__all__
    assert "MindSpore has no such callback" in __import__("nbcallback.train.profiler", fromlist=["x"]).__doc__


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (benchmarks/gpu_check.sh runs it)")
def test_on_cuda_the_step_parts_are_synchronised_and_the_rows_add_up():
    """On a GPU the step's parts are timed to their kernels' end (synchronize defaults to on there)."""
    model = make_model(device="cuda")
    data = [(x.cuda(), y.cuda()) for x, y in blobs(20)]
    model.train(1, data)
    profiler = CallbackProfiler()
    started = time.perf_counter()
    model.train(2, data, callbacks=[profiler, LossMonitor(5), TimeMonitor(), Slow(0.0125)])
    outside = time.perf_counter() - started
    assert profiler.synchronize is None  # automatic: on for CUDA
    _assert_rows_add_up(profiler, outside)
    steps = {row.part: row for row in profiler.rows if row.kind == "step"}
    assert set(steps) == {"forward", "backward", "optimizer"}
    assert all(row.calls == 40 and row.total_s > 0 for row in steps.values())
    assert profiler.rows[0].name == "Slow"


def test_ipython_text_view_is_the_printed_table():
    from IPython.lib.pretty import pretty

    profiler = CallbackProfiler()
    make_model().train(1, blobs(3), callbacks=[profiler, TimeMonitor()])
    assert pretty(profiler) == str(profiler) and "TimeMonitor" in pretty(profiler)
