"""The seams between the training loop and the callbacks: documented methods, no private links.

Each seam is a method of :class:`Callback` / :class:`RunContext` / the manager, and the
built-ins use only these (and helper modules), never one another.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import torch

import nbcallback.train as train
from nbcallback.train import Callback, HookTrace, LossMonitor, RunContext, TimeMonitor
from nbcallback.train.callback import CallbackManager, receives_fit_eval_hooks

from .helpers import blobs, make_model

TRAIN_DIR = Path(train.__file__).parent


def _builtin_modules() -> dict[str, str]:
    """module name -> the callback class it defines, for every callback ``nbcallback.train`` exports."""
    found = {}
    for name in train.__all__:
        value = getattr(train, name)
        if isinstance(value, type) and issubclass(value, Callback) and value is not Callback:
            found[value.__module__] = name
    return found


def test_no_built_in_callback_imports_another() -> None:
    modules = _builtin_modules()
    assert len(modules) >= 16  # every built-in, each in its own module
    wrong = []
    for module in modules:
        tree = ast.parse(Path(importlib.import_module(module).__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            wrong += [f"{module} imports {name}" for name in names if name in modules and name != module]
    assert wrong == []


def test_a_new_exported_callback_is_on_the_1x_path_without_an_entry_there() -> None:
    """``nbcallback.train.callback`` (MindSpore 1.x's path) offers every exported callback class."""
    import nbcallback.train.callback as callback_module

    for module, name in _builtin_modules().items():
        assert getattr(callback_module, name) is getattr(train, name)
        assert name in callback_module.__all__
    assert callback_module.CheckpointConfig is train.CheckpointConfig
    with pytest.raises(AttributeError, match="Model"):
        callback_module.Model  # noqa: B018 - not a callback


def test_the_seams_are_documented_methods_of_callback_and_run_context() -> None:
    for owner, name in [(Callback, "on_train_backward_end"), (Callback, "on_train_exception"),
                        (Callback, "instrument_hooks"), (RunContext, "resume_at"),
                        (RunContext, "skip_optimizer_step"), (RunContext, "request_stop"),
                        (Callback, "state_dict")]:
        doc = inspect.getdoc(getattr(owner, name))
        assert doc and len(doc) > 80, f"{owner.__name__}.{name} needs a docstring"
    source = "\n".join(path.read_text() for path in TRAIN_DIR.glob("*.py"))
    for private_link in ("_save_on_exception", '"resume_from"', "_instrument_dispatch", "_backup_state",
                         "_restore_state", "_backup_tensors"):
        assert private_link not in source


# --------------------------------------------------------------------------- on_train_exception


class _FailAt(Callback):
    def __init__(self, step: int | None = None, epoch_begin: int | None = None) -> None:
        self.step, self.epoch_begin = step, epoch_begin

    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == self.step:
            raise RuntimeError("boom")

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_epoch_num == self.epoch_begin:
            raise RuntimeError("boom")


class _Saver(Callback):
    def __init__(self, log: list) -> None:
        self.log = log

    def __exit__(self, *exc_info: object) -> None:
        self.log.append("exit")

    def on_train_exception(self, run_context: RunContext, step_in_epoch: int) -> None:
        cb_params = run_context.original_args()
        self.log.append((cb_params.cur_epoch_num, step_in_epoch))


@pytest.mark.parametrize(("fail", "expected"), [({"step": 7}, (2, 2)), ({"epoch_begin": 2}, (2, 0))])
def test_on_train_exception_gets_the_failing_step_after_every_exit(fail, expected) -> None:
    log: list = []
    with pytest.raises(RuntimeError, match="boom"):
        make_model().train(3, blobs(5), callbacks=[_Saver(log), _FailAt(**fail), _Saver(log)])
    assert log == ["exit", "exit", expected, expected]


def test_on_train_exception_is_not_called_for_a_run_that_ends_normally() -> None:
    log: list = []
    make_model().train(1, blobs(2), callbacks=[_Saver(log)])
    assert log == ["exit"]


def test_an_error_in_on_train_exception_names_the_callback_and_keeps_the_run_error() -> None:
    class Broken(Callback):
        def on_train_exception(self, run_context: RunContext, step_in_epoch: int) -> None:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full") as info:
        make_model().train(1, blobs(3), callbacks=[Broken(), _FailAt(step=2)])
    assert "Broken.on_train_exception" in " ".join(getattr(info.value, "__notes__", []))
    assert isinstance(info.value.__context__, RuntimeError)


# --------------------------------------------------------------------------- resume_at


def test_resume_at_after_on_train_begin_changes_nothing() -> None:
    steps: list[int] = []

    class Late(Callback):
        def on_train_epoch_begin(self, run_context: RunContext) -> None:
            run_context.resume_at(2, cur_step_num=99)

        def on_train_step_begin(self, run_context: RunContext) -> None:
            steps.append(run_context.original_args().cur_step_num)

    make_model().train(2, blobs(3), callbacks=[Late()])
    assert steps == [1, 2, 3, 4, 5, 6]


# --------------------------------------------------------------------------- instrument_hooks


def test_instrument_hooks_sees_the_acting_callbacks_and_the_run_calls_its_table() -> None:
    calls: list[str] = []

    class Counter(Callback):
        def instrument_hooks(self, dispatch):
            def wrapped(callback, hook, method):
                def call(run_context: RunContext) -> None:
                    calls.append(f"{type(callback).__name__}.{hook}")
                    method(run_context)
                return call

            return {hook: [(cb, wrapped(cb, hook, m)) for cb, m in entries] for hook, entries in dispatch.items()}

    class Steps(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            pass

    make_model().train(1, blobs(3), callbacks=[Counter(), Steps()])
    assert calls == ["Steps.on_train_step_end"] * 3


def test_the_default_instrument_hooks_leaves_the_table_alone() -> None:
    manager = CallbackManager([LossMonitor()])
    table = {"on_train_step_end": []}
    assert Callback().instrument_hooks(table) is table
    with manager:
        assert [type(cb) for cb, _ in manager._dispatch["on_train_step_end"]] == [LossMonitor]


# --------------------------------------------------------------------------- fit's eval hooks


class _Mine(Callback):
    def __init__(self, log: list) -> None:
        self.log = log

    def on_eval_begin(self, run_context: RunContext) -> None:
        self.log.append(type(self).__name__)


def test_fit_and_hook_trace_use_the_one_rule_for_who_receives_fit_eval_hooks() -> None:
    log: list = []

    class History(_Mine):  # named as a MindSpore built-in: MindSpore's rule goes by the class name
        pass

    class TimeMonitor2(TimeMonitor):
        def on_eval_begin(self, run_context: RunContext) -> None:
            log.append("TimeMonitor2")

    callbacks = [_Mine(log), History(log), TimeMonitor2()]
    assert [receives_fit_eval_hooks(cb) for cb in callbacks] == [True, False, True]
    assert receives_fit_eval_hooks(TimeMonitor()) and not receives_fit_eval_hooks(LossMonitor())
    data = blobs(2)
    trace = HookTrace()
    import io
    from contextlib import redirect_stdout

    with redirect_stdout(io.StringIO()):
        make_model().fit(1, data, data, callbacks=[*callbacks, trace])
    assert log == ["_Mine", "TimeMonitor2"]
    validation = [call for call in trace.hooks if getattr(call, "phase", None) == "validation"
                  and call.hook == "on_eval_begin"]
    assert [label.split(" ")[0] for label in validation[0].callbacks] == ["_Mine", "TimeMonitor2"]


# --------------------------------------------------------------------------- on_train_backward_end


def test_the_step_without_a_backward_hook_calls_nothing_between_backward_and_step() -> None:
    class StepsOnly(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            network = run_context.original_args().train_network
            assert network.backward_end is None

    make_model().train(1, blobs(2), callbacks=[StepsOnly()])


def test_the_backward_hook_runs_between_backward_and_the_optimizer_step() -> None:
    order: list[str] = []
    model = make_model()
    model.train_network.optimizer.register_step_pre_hook(lambda *a: order.append("optimizer.step"))

    class Between(Callback):
        def on_train_step_begin(self, run_context: RunContext) -> None:
            order.append("step_begin")

        def on_train_backward_end(self, run_context: RunContext) -> None:
            grads = [p.grad for p in run_context.original_args().network.parameters()]
            order.append("backward_end" if all(g is not None for g in grads) else "no gradients")

        def on_train_step_end(self, run_context: RunContext) -> None:
            order.append("step_end")

    model.train(1, blobs(2), callbacks=[Between()])
    assert order == ["step_begin", "backward_end", "optimizer.step", "step_end"] * 2
    assert model.train_network.backward_end is None  # removed when the run ends


def test_the_profiler_charges_the_backward_hook_to_its_callback() -> None:
    from nbcallback.train import CallbackProfiler

    class Slow(Callback):
        def on_train_backward_end(self, run_context: RunContext) -> None:
            torch.ones(200, 200) @ torch.ones(200, 200)

    profiler = CallbackProfiler()
    make_model().train(1, blobs(4), callbacks=[profiler, Slow()])
    rows = {row.label: row for row in profiler.rows}
    assert rows["Slow.on_train_backward_end"].calls == 4
    assert abs(sum(row.total_s for row in profiler.rows) - profiler.wall_s) < 1e-6
