"""KeyboardInterrupt at random steps of train, fit (training and validation) and eval.

Documented behaviour (MindSpore's): an exception, ``KeyboardInterrupt``
included, ends the run at once: ``on_train_end`` / ``on_eval_end`` are *not*
called, every callback's ``__exit__`` is (with the exception), a
``ModelCheckpoint(exception_save=True)`` writes its breakpoint, and the error
propagates.  The widgets (with ``graceful_interrupt=False``) end "interrupted".
With ``graceful_interrupt=True`` (the widgets' default) SIGINT is a stop
request instead: the step finishes, ``on_train_end`` runs, the run returns
normally and the widgets end "stopped".

Either way: no half-written checkpoint, SIGINT's handler is given back, and
the model and optimizer train again.
"""
from __future__ import annotations

import io
import re
import signal

import pytest

from nbcallback.train import Callback, CheckpointConfig, ModelCheckpoint, RunContext
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar
from tests.reliability._training import (
    EVAL_STEPS,
    STEPS_PER_EPOCH,
    Deadline,
    HookLog,
    SigintTimer,
    assert_checkpoints_complete,
    assert_model_usable,
    new_model,
    train_data,
    valid_data,
)

EPOCHS = 3


class InterruptAt(Callback):
    """Raises KeyboardInterrupt at the end of one train step (global) or one eval step (of one epoch)."""

    def __init__(self, train_step: int | None = None, eval_step: tuple[int | None, int] | None = None) -> None:
        self.train_step, self.eval_step = train_step, eval_step

    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == self.train_step:
            raise KeyboardInterrupt

    def on_eval_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if self.eval_step is not None and (cb.get("cur_epoch_num"), cb.cur_step_num) == self.eval_step:
            raise KeyboardInterrupt


def _widgets(graceful: bool) -> list:
    return [
        ProgressBar(display="text", file=io.StringIO(), graceful_interrupt=graceful),
        Dashboard(display="off", graceful_interrupt=graceful),
        LiveLossPlot(display="off", graceful_interrupt=graceful),
    ]


def _checkpoint(folder, exception_save: bool = True) -> ModelCheckpoint:
    config = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=3, exception_save=exception_save)
    return ModelCheckpoint(prefix="net", directory=folder, config=config)


@pytest.mark.parametrize("round_", [0, 1])
@pytest.mark.parametrize("phase", ["train", "fit-train", "fit-eval", "eval"])
def test_keyboard_interrupt_raised_by_a_callback(tmp_path, seeded, phase, round_):
    rng = seeded(f"interrupt-callback-{phase}-{round_}")
    model, net, optimizer = new_model(rng.randrange(1 << 16))
    log, widgets = HookLog(), _widgets(graceful=False)
    original = signal.getsignal(signal.SIGINT)
    if phase in ("train", "fit-train"):
        step = rng.randint(1, EPOCHS * STEPS_PER_EPOCH)
        interrupter, hook = InterruptAt(train_step=step), "on_train_step_end"
        epoch, in_epoch = (step - 1) // STEPS_PER_EPOCH + 1, (step - 1) % STEPS_PER_EPOCH + 1
    elif phase == "fit-eval":
        epoch, eval_step = rng.randint(1, EPOCHS), rng.randint(1, EVAL_STEPS)
        interrupter, hook = InterruptAt(eval_step=(epoch, eval_step)), "on_eval_step_end"
        in_epoch = STEPS_PER_EPOCH
    else:
        interrupter, hook = InterruptAt(eval_step=(None, rng.randint(1, EVAL_STEPS))), "on_eval_step_end"
    print(f"{phase}: {vars(interrupter)}")
    callbacks = [_checkpoint(tmp_path / "ckpt"), *widgets, log, interrupter]

    with pytest.raises(KeyboardInterrupt) as caught:
        if phase == "train":
            model.train(EPOCHS, train_data(), callbacks=callbacks)
        elif phase == "eval":
            model.eval(valid_data(), callbacks=[*widgets, log, interrupter])
        else:
            model.fit(EPOCHS, train_data(), valid_data(), callbacks=callbacks)

    assert f"raised in callback InterruptAt.{hook}" in getattr(caught.value, "__notes__", [])
    hooks = log.hooks()
    assert "*not* called when the run raises" in Callback.on_train_end.__doc__  # the documented rule
    assert hooks[-1] == hook  # the run ended right there: no epoch end, no on_train_end / on_eval_end
    assert "on_train_end" not in hooks
    assert log.enters() == len(log.exits()) and log.exits()[-1] is KeyboardInterrupt
    for widget in widgets:
        view = widget.view()
        assert view.status == "interrupted", (type(widget).__name__, view.status_text)
        assert view.status_text.startswith("interrupted (KeyboardInterrupt)")
    assert signal.getsignal(signal.SIGINT) is original
    if phase != "eval":
        files = assert_checkpoints_complete(tmp_path / "ckpt")
        breakpoints = [p.name for p in files if p.name.endswith("_breakpoint.ckpt")]
        assert breakpoints == [f"net-{epoch}_{in_epoch}_breakpoint.ckpt"]
    assert_model_usable(model, net, optimizer)


@pytest.mark.parametrize("round_", range(3))
@pytest.mark.parametrize("method", ["train", "fit"])
def test_sigint_at_a_random_moment(tmp_path, seeded, method, round_):
    """SIGINT from a timer thread: the KeyboardInterrupt lands anywhere (inside optimizer steps,
    checkpoint writes, widget refreshes)."""
    rng = seeded(f"interrupt-sigint-{method}-{round_}")
    delay = rng.uniform(0.0, 0.4)
    print(f"SIGINT {delay:.3f} s after training began")
    model, net, optimizer = new_model(rng.randrange(1 << 16))
    log, widgets, timer, deadline = HookLog(), _widgets(graceful=False), SigintTimer(delay), Deadline(60)
    original = signal.getsignal(signal.SIGINT)
    callbacks = [_checkpoint(tmp_path / "ckpt", exception_save=False), *widgets, log, timer, deadline]
    try:
        with pytest.raises(KeyboardInterrupt):
            if method == "train":
                model.train(10_000, train_data(), callbacks=callbacks)
            else:
                model.fit(10_000, train_data(), valid_data(), callbacks=callbacks)
    finally:
        timer.join()
    assert timer.fired.is_set() and not deadline.expired
    assert "on_train_end" not in log.hooks()
    assert log.enters() == len(log.exits()) and log.exits()[-1] is KeyboardInterrupt
    for widget in widgets:
        assert widget.view().status == "interrupted", widget.view().status_text
    assert signal.getsignal(signal.SIGINT) is original
    assert_checkpoints_complete(tmp_path / "ckpt")
    assert_model_usable(model, net, optimizer)


@pytest.mark.parametrize("round_", range(3))
def test_graceful_sigint_stops_at_a_step_boundary(tmp_path, seeded, round_):
    """The widgets' default: SIGINT becomes a stop request; the run ends normally, "stopped"."""
    rng = seeded(f"interrupt-graceful-{round_}")
    delay = rng.uniform(0.0, 0.4)
    print(f"SIGINT {delay:.3f} s after training began")
    model, net, optimizer = new_model(rng.randrange(1 << 16))
    log, widgets, timer, deadline = HookLog(), _widgets(graceful=True), SigintTimer(delay), Deadline(60)
    original = signal.getsignal(signal.SIGINT)
    checkpoint = _checkpoint(tmp_path / "ckpt")
    try:
        model.fit(10_000, train_data(), valid_data(), callbacks=[checkpoint, *widgets, log, timer, deadline])
    finally:
        timer.join()
    assert timer.fired.is_set() and not deadline.expired
    assert log.hooks()[-1] == "on_train_end"  # documented: a stop request still ends the run normally
    assert log.exits()[-1] is None
    for widget in widgets:
        view = widget.view()
        assert view.status == "stopped", view.status_text
        assert re.match(r"stopped by user at epoch \d+, step \d+( \(during validation, eval step \d+\))? "
                        r"\(Ctrl-C\)$", view.status_text), view.status_text
    assert signal.getsignal(signal.SIGINT) is original
    files = assert_checkpoints_complete(tmp_path / "ckpt")
    assert checkpoint.latest_ckpt_file_name in map(str, files)  # the final checkpoint, at the stop step
    assert not any(p.name.endswith("_breakpoint.ckpt") for p in files)
    assert_model_usable(model, net, optimizer)
    # The same widgets serve the next run and end it "finished".
    model.train(1, train_data(), callbacks=widgets)
    assert all(w.view().status == "finished" for w in widgets)
