"""``WaitedDSCallback``: a dataset callback that is also a training callback (see :mod:`.callbacks`).

Kept apart from :mod:`.callbacks` because it subclasses
:class:`nbcallback.train.Callback`: importing it imports ``nbcallback.train``
(the dataset package may import ``train``, never the other way round), so the
rest of ``nbcallback.dataset`` loads without it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from nbcallback.train.callback import Callback, RunContext

from .callbacks import DSCallback, DSRunContext
from .config import get_callback_timeout

__all__ = ["WaitedDSCallback"]


class WaitedDSCallback(Callback, DSCallback):
    """A dataset callback synchronised with training (``mindspore.dataset.WaitedDSCallback``).

    Pass the *same* object to ``Dataset.map(..., callbacks=...)`` and to
    ``Model.train``/``fit(callbacks=...)``. Before the pipeline produces the
    next epoch (or step), after training finished the previous one, it calls
    ``sync_epoch_begin(train_run_context, ds_run_context)`` (or
    ``sync_step_begin``): ``train_run_context`` is the training
    :class:`~nbcallback.train.RunContext` of that epoch's (step's) end, so
    ``train_run_context.original_args().net_outputs`` is its last loss. As in
    MindSpore, the calls happen from the second epoch (step) on. Typical use:
    change augmentation parameters from the last epoch's loss.

    As in MindSpore, the pipeline waits on a ``threading.Event`` (set by the
    training side's ``step_end``/``epoch_end``/``end``) for at most
    ``config.get_callback_timeout()`` seconds. Inside ``Model`` the pipeline
    runs in the training thread, so the event is already set when the next
    step is asked for and nothing waits. Where the waiting thread is the one
    that would set the event -- the thread running this callback's training,
    or, with no training begun, the thread that made the callback -- waiting
    could never end, so the RuntimeError comes at once.

    Args:
        step_size: Rows per step, normally the batch size when the ``map`` comes
            before ``batch`` (1 when it comes after).

    Raises:
        RuntimeError: When the pipeline is asked for the next step (epoch) before
            training ended the previous one: after ``config.get_callback_timeout()``
            seconds (``"ds_step_begin timed out after 60 second(s)."``, as in
            MindSpore), or at once where waiting could never end; the message
            names the fix (``step_size`` the rows of one training step,
            ``Model(prefetch=False)``, or this callback in ``Model.train``'s callbacks).
        AttributeError: When the pipeline runs, if neither ``sync_epoch_begin``
            nor ``sync_step_begin`` is overridden.

    Where nbcallback differs: the RuntimeError comes at once where waiting
    could never end (MindSpore waits the timeout first); ``end`` marks training
    ended before it releases the waits (so a woken pipeline never waits again);
    the evaluation of ``Model.fit`` does not count as a training step or end.
    """

    def __init__(self, step_size: int = 1) -> None:
        DSCallback.__init__(self, step_size)
        self.step_event = threading.Event()
        self.step_run_context: RunContext | None = None
        self.epoch_event = threading.Event()
        self.epoch_run_context: RunContext | None = None
        self.training_ended = False
        # The thread that would set the events: the training's (from begin to end), else the creator's.
        self._creator = threading.current_thread()
        self._trainer: threading.Thread | None = None
        self._train_runs = 0  # incremented at each training begin: the pipeline starts a new run

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline starts an epoch (from the second on), after training ended the previous one."""

    def sync_step_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline produces a step (from the second on), after training ended the previous one."""

    # -- the training side (called by Model through Callback's hooks) ----------------

    def begin(self, run_context: RunContext) -> None:
        """Internal: training begins (in this thread); the pipeline's next epoch starts a new run."""
        self.step_event.clear()
        self.epoch_event.clear()
        self._trainer = threading.current_thread()
        self.training_ended = False
        self._train_runs += 1

    def step_end(self, run_context: RunContext) -> None:
        """Internal: training ended a step; the pipeline may produce the next one."""
        self.step_run_context = run_context
        self.step_event.set()

    def epoch_end(self, run_context: RunContext) -> None:
        """Internal: training ended an epoch; the pipeline may start the next one."""
        self.epoch_run_context = run_context
        self.epoch_event.set()

    def end(self, run_context: RunContext) -> None:
        """Internal: training ended (also after ``request_stop()``); the pipeline no longer waits."""
        self.training_ended = True  # before the events: a pipeline they wake must not wait again
        self._trainer = None
        self.epoch_end(run_context)
        self.step_end(run_context)

    # Evaluation (Model.eval, fit's validation) is neither a training step nor its end.
    def on_eval_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    # -- the pipeline side ---------------------------------------------------------

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Internal: waits for training to end the previous epoch, then calls :meth:`sync_epoch_begin` (epoch 2 on)."""
        if ds_run_context.cur_epoch_num > 1:
            if not self.training_ended:
                self._wait(self.epoch_event, "epoch", ds_run_context.cur_epoch_num)
            self.sync_epoch_begin(self.epoch_run_context, ds_run_context)

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Internal: waits for training to end the previous step, then calls :meth:`sync_step_begin` (step 2 on)."""
        if ds_run_context.cur_step_num > self.step_size:
            if not self.training_ended:
                self._wait(self.step_event, "step", ds_run_context.cur_step_num)
            self.sync_step_begin(self.step_run_context, ds_run_context)

    def _wait(self, event: threading.Event, what: str, number: int) -> None:
        """Wait until training ended the previous ``what`` (consuming its signal), or raise."""
        if not event.is_set():
            timeout = get_callback_timeout()
            trainer = self._trainer
            if threading.current_thread() is (trainer or self._creator):
                raise RuntimeError(self._never_ends(what, number, timeout, training=trainer is not None))
            if not event.wait(timeout):
                training = self._trainer is not None
                raise RuntimeError(
                    f"ds_{what}_begin timed out after {timeout} second(s). The pipeline asked for {what} "
                    f"{number}, and training did not end the previous {what} meanwhile. " + self._fix(what, training)
                    + (" If training is only slow, raise the timeout: ds.config.set_callback_timeout(seconds)."
                       if training else "")
                )
        event.clear()

    def _never_ends(self, what: str, number: int, timeout: float, training: bool) -> str:
        """The message of a wait that could never end: the waiting thread is the one that would end it."""
        if training:
            why = f"before training ended the previous {what}, in the thread that runs the training"
        else:
            why = (f"and no training with this {type(self).__name__} in its callbacks has begun to end the "
                   f"previous {what}; none can while this thread iterates the pipeline")
        return (
            f"ds_{what}_begin of {type(self).__name__}: the pipeline asked for {what} {number} {why}, so "
            f"waiting could never end: nbcallback raises at once where MindSpore waits "
            f"config.get_callback_timeout() seconds and raises "
            f"'ds_{what}_begin timed out after {timeout} second(s).' " + self._fix(what, training)
        )

    def _fix(self, what: str, training: bool) -> str:
        """The sentence naming the fix."""
        if not training:
            return (
                f"Give this {type(self).__name__} to Model.train/fit(callbacks=[...]) as well as to "
                f"map(callbacks=...); a pipeline iterated without training takes a DSCallback instead."
            )
        if what == "epoch":
            return "Iterate each epoch of the pipeline only after training ended the previous one."
        return (
            f"Set step_size to the rows of one training step (the batch size when the map comes before "
            f"batch; now {self.step_size}), and train with Model(prefetch=False), which reads no batch ahead."
        )

    def _ds_hooks(self) -> dict[str, Callable[[DSRunContext], None]]:
        cls = type(self)
        hooks: dict[str, Callable[[DSRunContext], None]] = {}
        if cls.sync_epoch_begin is not WaitedDSCallback.sync_epoch_begin:
            hooks["ds_epoch_begin"] = self.ds_epoch_begin
        if cls.sync_step_begin is not WaitedDSCallback.sync_step_begin:
            hooks["ds_step_begin"] = self.ds_step_begin
        if not hooks:
            raise AttributeError(
                f"{cls.__name__}: Provided Callback class did not override any of the 6 callback methods. "
                f"A WaitedDSCallback overrides sync_epoch_begin and/or sync_step_begin."
            )
        return hooks
