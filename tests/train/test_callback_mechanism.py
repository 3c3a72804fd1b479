"""The callback mechanism: hook order, legacy names, context managers, errors, request_stop."""
from __future__ import annotations

import warnings

import pytest

from nbcallback.train import Callback, LossMonitor, RunContext, TimeMonitor
from nbcallback.train.callback import CallbackManager

from .helpers import Recorder, blobs, hooks_only, make_model

TRAIN_STEPS = 3
EVAL_STEPS = 2


def expected_train(epochs: int, steps: int, eval_after=()) -> list[str]:
    order = ["__enter__", "on_train_begin"]
    for e in range(1, epochs + 1):
        order.append("on_train_epoch_begin")
        order += ["on_train_step_begin", "on_train_step_end"] * steps
        if e in eval_after:
            order += expected_eval(EVAL_STEPS)
        order.append("on_train_epoch_end")
    order += ["on_train_end", "__exit__"]
    return order


def expected_eval(steps: int) -> list[str]:
    return (["__enter__", "on_eval_begin", "on_eval_epoch_begin"]
            + ["on_eval_step_begin", "on_eval_step_end"] * steps
            + ["on_eval_epoch_end", "on_eval_end", "__exit__"])


# --------------------------------------------------------------------------- hook order

def test_train_hook_order():
    log: list = []
    make_model().train(2, blobs(TRAIN_STEPS), callbacks=[Recorder(log)])
    assert hooks_only(log) == expected_train(2, TRAIN_STEPS)
    assert log[-1] == ("rec", "__exit__", None)


def test_eval_hook_order():
    log: list = []
    result = make_model().eval(blobs(EVAL_STEPS), callbacks=[Recorder(log)])
    assert hooks_only(log) == expected_eval(EVAL_STEPS)
    assert set(result) == {"accuracy"}


def test_fit_hook_order_with_validation_each_epoch():
    log: list = []
    make_model().fit(2, blobs(TRAIN_STEPS), blobs(EVAL_STEPS, seed=5), callbacks=[Recorder(log)])
    assert hooks_only(log) == expected_train(2, TRAIN_STEPS, eval_after={1, 2})


def test_fit_hook_order_with_valid_frequency():
    log: list = []
    make_model().fit(3, blobs(TRAIN_STEPS), blobs(EVAL_STEPS, seed=5), valid_frequency=2, callbacks=[Recorder(log)])
    assert hooks_only(log) == expected_train(3, TRAIN_STEPS, eval_after={2})


def test_callbacks_run_in_list_order():
    log: list = []
    make_model().train(1, blobs(2), callbacks=[Recorder(log, "a"), Recorder(log, "b")])
    names = [entry[0] for entry in log if entry[1] == "on_train_step_end"]
    assert names == ["a", "b", "a", "b"]
    enters = [entry[0] for entry in log if entry[1] == "__enter__"]
    exits = [entry[0] for entry in log if entry[1] == "__exit__"]
    assert enters == ["a", "b"] and exits == ["b", "a"]


def test_fit_validation_gets_only_custom_callbacks_and_time_monitor(capsys):
    class Spy(LossMonitor):  # class name is internal -> excluded in fit's validation
        pass

    seen = []

    class Probe(Callback):
        def on_eval_step_end(self, run_context):
            seen.append("probe")

    class LossMonitor2(LossMonitor):
        def on_eval_step_end(self, run_context):
            seen.append("custom-named")

    class LossMonitorLike(Callback):
        pass

    # A user class literally called LossMonitor is excluded (the test is by class name).
    LossMonitorLike.__name__ = "LossMonitor"
    LossMonitorLike.on_eval_step_end = lambda self, rc: seen.append("named-LossMonitor")

    tm = TimeMonitor()
    make_model().fit(1, blobs(2), blobs(EVAL_STEPS), callbacks=[Probe(), LossMonitor2(0), LossMonitorLike(), tm])
    assert seen.count("probe") == EVAL_STEPS
    assert seen.count("custom-named") == EVAL_STEPS
    assert "named-LossMonitor" not in seen
    out = capsys.readouterr().out
    assert "Eval epoch time:" in out and "Train epoch time:" in out


# --------------------------------------------------------------------------- legacy names

class LegacyOnly(Callback):
    def __init__(self):
        self.calls = []

    def step_end(self, run_context):
        self.calls.append(run_context.original_args()["mode"])


class Both(Callback):
    def __init__(self):
        self.calls = []

    def on_train_step_end(self, run_context):
        self.calls.append("on_train_step_end")

    def step_end(self, run_context):
        self.calls.append("step_end:" + run_context.original_args()["mode"])


def test_legacy_step_end_runs_on_train_and_eval_steps():
    cb = LegacyOnly()
    model = make_model()
    with pytest.warns(FutureWarning, match="LegacyOnly"):
        model.train(1, blobs(TRAIN_STEPS), callbacks=[cb])
    assert cb.calls == ["train"] * TRAIN_STEPS
    with pytest.warns(FutureWarning):
        model.eval(blobs(EVAL_STEPS), callbacks=cb)
    assert cb.calls == ["train"] * TRAIN_STEPS + ["eval"] * EVAL_STEPS


def test_override_both_names_forwarding_rule():
    cb = Both()
    model = make_model()
    with pytest.warns(FutureWarning):
        model.train(1, blobs(TRAIN_STEPS), callbacks=[cb])
    assert cb.calls == ["on_train_step_end"] * TRAIN_STEPS
    cb.calls.clear()
    with pytest.warns(FutureWarning):
        model.eval(blobs(EVAL_STEPS), callbacks=[cb])
    assert cb.calls == ["step_end:eval"] * EVAL_STEPS


def test_all_legacy_names_forward_for_both_phases():
    log = []

    class AllLegacy(Callback):
        pass

    for name in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end"):
        setattr(AllLegacy, name, (lambda n: lambda self, rc: log.append((n, rc.original_args()["mode"])))(name))
    with pytest.warns(FutureWarning):
        make_model().train(1, blobs(1), callbacks=AllLegacy())
    assert log == [(n, "train") for n in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end")]
    log.clear()
    with pytest.warns(FutureWarning):
        make_model().eval(blobs(1), callbacks=AllLegacy())
    assert log == [(n, "eval") for n in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end")]


def test_fit_refuses_legacy_name_callbacks():
    with pytest.raises(ValueError) as info:
        make_model().fit(1, blobs(2), blobs(2), callbacks=[LegacyOnly()])
    message = str(info.value)
    assert message == (
        "For LegacyOnly callback, {'step_end'} methods may not be supported in later version, Use methods "
        "prefixed with 'on_train' or 'on_eval' instead when using customized callbacks."
    )
    # inherited legacy methods are fine (only the class's own body counts)
    class Child(LegacyOnly):
        def on_train_step_end(self, run_context):
            pass

    make_model().fit(1, blobs(2), blobs(2), callbacks=[Child()])


def test_train_without_legacy_names_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_model().train(1, blobs(2), callbacks=[Recorder()])


def test_docstring_example_print_info(capsys):
    """The ``mindspore.train.Callback`` docstring example: 64 samples, batch 32, legacy step_end."""

    class Print_info(Callback):
        def step_end(self, run_context):
            cb_params = run_context.original_args()
            print("step_num: ", cb_params.cur_step_num)

    data = blobs(n_batches=2, batch_size=32)
    assert sum(len(y) for _, y in data) == 64
    with pytest.warns(FutureWarning, match="Print_info"):
        make_model().train(3, data, callbacks=Print_info())
    out = capsys.readouterr().out.splitlines()
    assert out == [f"step_num:  {n}" for n in range(1, 7)]


# --------------------------------------------------------------------------- context manager / errors

def test_enter_target_replaces_callback_and_non_callback_target_warns():
    log = []

    class Target(Callback):
        def on_train_step_end(self, run_context):
            log.append("target")

    class Swapper(Callback):
        def __enter__(self):
            return Target()

        def on_train_step_end(self, run_context):
            log.append("swapper")

    class Weird(Callback):
        def __enter__(self):
            return 42

        def on_train_step_end(self, run_context):
            log.append("weird")

    with pytest.warns(UserWarning, match="return 'self' or a Callback"):
        make_model().train(1, blobs(1), callbacks=[Swapper(), Weird()])
    assert log == ["target", "weird"]


class Boom(Exception):
    pass


class Raiser(Callback):
    def __init__(self, at_step: int = 2):
        self.at_step = at_step

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == self.at_step:
            raise Boom("bang")


def test_exception_in_callback_propagates_unchanged_with_note():
    log: list = []
    with pytest.raises(Boom) as info:
        make_model().train(2, blobs(TRAIN_STEPS), callbacks=[Recorder(log, "a"), Raiser(), Recorder(log, "b")])
    assert type(info.value) is Boom and str(info.value) == "bang"
    notes = getattr(info.value, "__notes__", [])
    assert any("Raiser" in n and "on_train_step_end" in n for n in notes), notes
    a, b = hooks_only(log, "a"), hooks_only(log, "b")
    assert "on_train_end" not in a and "on_train_epoch_end" not in a
    # b ran for step 1 only: step 2 aborted after Raiser
    assert b.count("on_train_step_end") == 1
    exits = [e for e in log if e[1] == "__exit__"]
    assert [e[0] for e in exits] == ["b", "a"]
    assert all(e[2] is Boom for e in exits)


def test_exception_in_legacy_hook_note_names_class():
    class LegacyRaiser(Callback):
        def end(self, run_context):
            raise KeyError("missing")

    with pytest.warns(FutureWarning), pytest.raises(KeyError) as info:
        make_model().train(1, blobs(1), callbacks=LegacyRaiser())
    assert any("LegacyRaiser" in n and "on_train_end" in n for n in info.value.__notes__)


def test_truthy_exit_suppresses_error():
    class Suppressor(Callback):
        def __exit__(self, *exc):
            return True

    make_model().train(1, blobs(3), callbacks=[Suppressor(), Raiser(2)])


def test_exit_runs_when_enter_of_later_callback_fails():
    log: list = []

    class BadEnter(Callback):
        def __enter__(self):
            raise Boom("enter")

    with pytest.raises(Boom):
        make_model().train(1, blobs(1), callbacks=[Recorder(log), BadEnter()])
    assert hooks_only(log) == ["__enter__", "__exit__"]


# --------------------------------------------------------------------------- request_stop

class StopAt(Callback):
    def __init__(self, step: int):
        self.step = step

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == self.step:
            run_context.request_stop()


def test_request_stop_in_step_still_runs_epoch_end_and_train_end():
    log: list = []
    make_model().train(3, blobs(4), callbacks=[StopAt(2), Recorder(log)])
    hooks = hooks_only(log)
    assert hooks.count("on_train_step_end") == 2
    assert hooks[-4:] == ["on_train_step_end", "on_train_epoch_end", "on_train_end", "__exit__"]
    assert hooks.count("on_train_epoch_begin") == 1


def test_request_stop_in_step_of_fit_still_validates():
    log: list = []
    make_model().fit(3, blobs(4), blobs(EVAL_STEPS), callbacks=[StopAt(2), Recorder(log)])
    hooks = hooks_only(log)
    assert hooks.count("on_eval_end") == 1
    assert hooks.index("on_eval_end") < hooks.index("on_train_epoch_end")


def test_request_stop_in_epoch_end_stops_after_that_epoch():
    class StopEpoch(Callback):
        def on_train_epoch_end(self, run_context):
            run_context.request_stop()

    log: list = []
    make_model().train(3, blobs(2), callbacks=[StopEpoch(), Recorder(log)])
    assert hooks_only(log).count("on_train_epoch_end") == 1


def test_request_stop_during_fit_validation_stops_only_eval_loop():
    class StopEval(Callback):
        def on_eval_step_end(self, run_context):
            run_context.request_stop()
            assert run_context.get_stop_requested()

    log: list = []
    make_model().fit(2, blobs(TRAIN_STEPS), blobs(3), callbacks=[StopEval(), Recorder(log)])
    hooks = hooks_only(log)
    assert hooks.count("on_train_step_end") == 2 * TRAIN_STEPS
    assert hooks.count("on_eval_step_end") == 2  # one eval step per validation run
    assert hooks.count("on_eval_end") == 2 and hooks.count("on_train_epoch_end") == 2


def test_request_stop_during_eval_returns_partial_metrics():
    class StopEval(Callback):
        def on_eval_step_end(self, run_context):
            run_context.request_stop()

    log: list = []
    result = make_model().eval(blobs(3), callbacks=[StopEval(), Recorder(log)])
    assert hooks_only(log).count("on_eval_step_end") == 1
    assert hooks_only(log)[-3:] == ["on_eval_epoch_end", "on_eval_end", "__exit__"]
    assert 0.0 <= result["accuracy"] <= 1.0


# --------------------------------------------------------------------------- type errors

def test_non_callback_in_list_is_type_error_naming_it():
    class NotACallback:
        def __repr__(self):
            return "<NotACallback thing>"

    with pytest.raises(TypeError, match="NotACallback"):
        make_model().train(1, blobs(1), callbacks=[Recorder(), NotACallback()])
    with pytest.raises(TypeError, match="did you mean LossMonitor"):
        make_model().train(1, blobs(1), callbacks=[LossMonitor])
    with pytest.raises(TypeError, match="not a Callback or a list of Callback"):
        make_model().train(1, blobs(1), callbacks="LossMonitor")
    with pytest.raises(TypeError, match="element 1"):
        CallbackManager([Recorder(), 3])
    with pytest.raises(TypeError):
        make_model().fit(1, blobs(1), blobs(1), callbacks=[object()])
    with pytest.raises(TypeError):
        make_model().eval(blobs(1), callbacks=[object()])


def test_tuple_and_single_callback_accepted():
    log: list = []
    make_model().train(1, blobs(1), callbacks=(Recorder(log),))
    make_model().train(1, blobs(1), callbacks=Recorder(log, "single"))
    assert hooks_only(log) and hooks_only(log, "single")


@pytest.mark.parametrize("value", [None, [], (), "abc", 3, [("a", 1)]])
def test_run_context_requires_dict(value):
    with pytest.raises(TypeError, match="The argument 'original_args' of RunContext should be dict type"):
        RunContext(value)


def test_run_context_basics():
    params = {"a": 1}
    rc = RunContext(params)
    assert rc.original_args() is params
    assert rc.get_stop_requested() is False
    rc.request_stop()
    assert rc.get_stop_requested() is True
    assert RunContext(params).get_stop_requested() is False


# --------------------------------------------------------------------------- 1.x path and built-ins' legacy names

def test_train_callback_module_is_mindspore_1x_path_with_the_same_classes():
    """``from mindspore.train.callback import ModelCheckpoint`` (1.x docs): same class objects, aliases only."""
    import nbcallback.train as train
    import nbcallback.train.callback as callback_module

    names = ["ModelCheckpoint", "CheckpointConfig", "LossMonitor", "TimeMonitor", "SummaryCollector", "Callback",
             "RunContext", "History", "LambdaCallback", "EarlyStopping", "ReduceLROnPlateau",
             "LearningRateScheduler", "BackupAndRestore", "OnRequestExit", "TerminateOnNaN", "BestCheckpoint",
             "HookTrace", "CallbackProfiler", "GradientClipping"]
    for name in names:
        assert getattr(callback_module, name) is getattr(train, name), name
        assert name in callback_module.__all__ and name in dir(callback_module)
    namespace: dict = {}
    exec("from nbcallback.train.callback import *", namespace)
    assert all(namespace[name] is getattr(train, name) for name in names)
    assert callback_module._CallbackManager is CallbackManager
    with pytest.raises(AttributeError, match="NoSuchCallback"):
        callback_module.NoSuchCallback  # noqa: B018


@pytest.mark.parametrize("first", ["nbcallback.train.checkpoint", "nbcallback.train.callback", "nbcallback.train.loss_monitor"])
def test_no_import_cycle_whatever_module_comes_first(first):
    import subprocess
    import sys

    code = (f"import {first}; from nbcallback.train.callback import ModelCheckpoint, LossMonitor; "
            "import nbcallback.train.checkpoint as c, nbcallback.train.loss_monitor as l; "
            "assert ModelCheckpoint is c.ModelCheckpoint and LossMonitor is l.LossMonitor")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_manager_forwards_legacy_names_to_every_callback():
    log = []

    class Named(Callback):
        def __init__(self, tag):
            self.tag = tag

    for name in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end"):
        setattr(Named, name, (lambda n: lambda self, rc: log.append((self.tag, n)))(name))
    manager = CallbackManager([Named("a"), Named("b")])
    rc = RunContext({})
    for name in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end"):
        getattr(manager, name)(rc)
    assert log == [(tag, n) for n in ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end")
                   for tag in ("a", "b")]


@pytest.mark.parametrize("cls, names", [
    ("LossMonitor", {"begin", "step_end"}),
    ("ModelCheckpoint", {"begin", "step_end", "end"}),
    ("History", {"begin", "epoch_end"}),
    ("TimeMonitor", {"epoch_begin", "epoch_end"}),
    ("LearningRateScheduler", {"step_end"}),
    ("SummaryCollector", {"begin", "step_end", "epoch_end", "end"}),
])
def test_builtins_define_mindspore_legacy_names(cls, names):
    """Spec §5.2: the built-ins implement the legacy methods; ``on_train_*`` reaches them by forwarding."""
    import nbcallback.train as train

    klass = getattr(train, cls)
    assert names <= set(vars(klass)), set(vars(klass))
    for legacy in names:
        hook = {"begin": "on_train_begin", "step_end": "on_train_step_end", "end": "on_train_end",
                "epoch_begin": "on_train_epoch_begin", "epoch_end": "on_train_epoch_end"}[legacy]
        assert hook not in vars(klass), f"{cls}.{hook} must forward to {legacy} (inherited)"


def test_subclass_overriding_step_end_and_calling_super_keeps_printing(capsys):
    from nbcallback.train import History

    class MyMonitor(LossMonitor):
        def __init__(self):
            super().__init__(1)
            self.seen = []

        def step_end(self, run_context):
            self.seen.append(run_context.original_args().cur_step_num)
            super().step_end(run_context)

    class MyHistory(History):
        def epoch_end(self, run_context):
            super().epoch_end(run_context)
            self.extra = True

    monitor, history = MyMonitor(), MyHistory()
    with pytest.warns(FutureWarning) as warned:  # custom classes defining legacy names: MindSpore warns
        make_model().train(2, blobs(TRAIN_STEPS), callbacks=[monitor, history])
    assert {str(w.message).split(" callback")[0] for w in warned} == {"For MyMonitor", "For MyHistory"}
    out = capsys.readouterr().out.splitlines()
    assert monitor.seen == list(range(1, 2 * TRAIN_STEPS + 1))
    assert [line.split(",")[0] for line in out] == [f"epoch: {e} step: {s}" for e in (1, 2) for s in (1, 2, 3)]
    assert history.epoch == {"epoch": [1, 2]} and len(history.history["net_output"]) == 2 and history.extra
    with pytest.raises(ValueError, match=r"For MyMonitor callback, \{'step_end'\} methods"):
        make_model().fit(1, blobs(1), blobs(1), callbacks=[MyMonitor()])


def test_builtins_act_on_training_only_in_model_eval(capsys, tmp_path):
    """nbcallback difference: MindSpore's built-ins also fire (through forwarding) in Model.eval."""
    from nbcallback.train import CheckpointConfig, History, ModelCheckpoint

    history = History()
    ckpt = ModelCheckpoint(directory=tmp_path, config=CheckpointConfig(save_checkpoint_steps=1))
    make_model().eval(blobs(EVAL_STEPS), callbacks=[LossMonitor(1), history, ckpt])
    assert capsys.readouterr().out == ""
    assert history.history == {} and list(tmp_path.glob("*.ckpt")) == []


def test_calling_time_monitor_legacy_names_directly_prints_by_mode(capsys):
    from nbcallback.train.callback import CallbackParams

    monitor = TimeMonitor()
    for mode in ("train", "eval"):
        rc = RunContext(CallbackParams(mode=mode, batch_num=4))
        monitor.epoch_begin(rc)
        monitor.epoch_end(rc)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" epoch time")[0] for line in lines] == ["Train", "Eval"]
