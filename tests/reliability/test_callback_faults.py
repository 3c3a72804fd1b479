"""A callback raising in each of the 12 hooks.

The error propagates unchanged, with a note naming the callback and the hook;
the other callbacks release what they hold (SummaryCollector's event writer,
the widgets' views and SIGINT handler, OnRequestExit's signal handlers,
ModelCheckpoint's pending files); a second call on the same Model, with the
same callback objects, works.
"""
from __future__ import annotations

import io
import signal

import pytest

from nbcallback.train import (
    Callback,
    CheckpointConfig,
    ModelCheckpoint,
    OnRequestExit,
    RunContext,
    SummaryCollector,
)
from nbcallback.train.callback import EVAL_HOOKS, TRAIN_HOOKS
from nbcallback.widgets import Dashboard, ProgressBar
from tests.reliability._training import (
    HookLog,
    assert_checkpoints_complete,
    assert_model_usable,
    new_model,
    train_data,
    valid_data,
)

SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)


class Boom(RuntimeError):
    pass


class Faulty(Callback):
    """Raises ``Boom`` the first time ``hook`` is called."""

    def __init__(self, hook: str) -> None:
        self.hook = hook
        setattr(self, hook, self._raise)

    def _raise(self, run_context: RunContext) -> None:
        raise Boom(f"boom in {self.hook}")


class WriterSpy(Callback):
    """Keeps the SummaryCollector's writer object of the run, to check it was closed."""

    def __init__(self, collector: SummaryCollector) -> None:
        self.collector = collector
        self.writers: list = []

    def on_train_begin(self, run_context: RunContext) -> None:
        self.writers.append(self.collector.writer)

    def on_eval_begin(self, run_context: RunContext) -> None:
        if self.collector.writer is not None:
            self.writers.append(self.collector.writer)


def _resources(tmp_path):
    collector = SummaryCollector(tmp_path / "summary", collect_freq=1,
                                 collect_specified_data={"collect_metric": True}, keep_default_action=False)
    exit_cb = OnRequestExit(save_ckpt=False, save_mindir=False, sig=(signal.SIGTERM, signal.SIGUSR1))
    checkpoint = ModelCheckpoint(prefix="net", directory=tmp_path / "ckpt",
                                 config=CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=2))
    widgets = [ProgressBar(display="text", file=io.StringIO()), Dashboard(display="off")]
    return collector, exit_cb, checkpoint, widgets


def _assert_released(collector, spy, widgets, originals, expected_status):
    assert collector.writer is None
    assert spy.writers and all(w.all_writers is None for w in spy.writers)  # SummaryWriter.close() ran
    for widget in widgets:
        view = widget.view()
        assert view.status == expected_status, (type(widget).__name__, view.status_text)
    for sig, original in zip(SIGNALS, originals):
        assert signal.getsignal(sig) == original, signal.Signals(sig).name


CASES = [(hook, "fit") for hook in TRAIN_HOOKS + EVAL_HOOKS] + [(hook, "eval") for hook in EVAL_HOOKS]


@pytest.mark.parametrize("hook, via", CASES, ids=[f"{via}-{hook}" for hook, via in CASES])
def test_a_failing_hook_names_itself_and_releases_everything(tmp_path, hook, via):
    model, net, optimizer = new_model()
    collector, exit_cb, checkpoint, widgets = _resources(tmp_path)
    spy, log, faulty = WriterSpy(collector), HookLog(), Faulty(hook)
    originals = [signal.getsignal(sig) for sig in SIGNALS]

    with pytest.raises(Boom, match=f"boom in {hook}") as caught:
        if via == "fit":
            model.fit(2, train_data(), valid_data(),
                      callbacks=[collector, exit_cb, checkpoint, *widgets, spy, log, faulty])
        else:
            model.eval(valid_data(), callbacks=[collector, exit_cb, *widgets, spy, log, faulty])
    assert getattr(caught.value, "__notes__", []) == [f"raised in callback Faulty.{hook}"]
    assert log.enters() == len(log.exits()) and log.exits()[-1] is Boom
    _assert_released(collector, spy, widgets, originals, "error")
    assert all(w.view().error == f"Boom: boom in {hook}" for w in widgets)
    if via == "fit":
        assert_checkpoints_complete(tmp_path / "ckpt")

    # The same Model and the same callback objects (minus the faulty one) work again.
    spy.writers.clear()
    if via == "fit":
        model.fit(2, train_data(), valid_data(), callbacks=[collector, exit_cb, checkpoint, *widgets, spy, log])
        assert_checkpoints_complete(tmp_path / "ckpt")
    else:
        model.eval(valid_data(), callbacks=[collector, exit_cb, *widgets, spy, log])
    _assert_released(collector, spy, widgets, originals, "finished")
    assert_model_usable(model, net, optimizer)


def test_a_failing_enter_releases_the_callbacks_already_entered(tmp_path):
    """Not one of the 12 hooks, but the same promise: a callback failing in ``__enter__``."""

    class BadEnter(Callback):
        def __enter__(self):
            raise Boom("boom in __enter__")

    model, net, optimizer = new_model()
    collector, exit_cb, checkpoint, widgets = _resources(tmp_path)
    log = HookLog()
    originals = [signal.getsignal(sig) for sig in SIGNALS]
    with pytest.raises(Boom):
        model.fit(1, train_data(), valid_data(), callbacks=[collector, exit_cb, checkpoint, *widgets, log, BadEnter()])
    assert log.exits() == [Boom] and log.hooks() == []
    for sig, original in zip(SIGNALS, originals):
        assert signal.getsignal(sig) == original
    assert_model_usable(model, net, optimizer)
