"""``WaitedDSCallback``: a dataset callback that is also a training callback (see :mod:`.callbacks`).

Kept apart from :mod:`.callbacks` because it subclasses
:class:`nbcallback.train.Callback`: importing it imports ``nbcallback.train``
(the dataset package may import ``train``, never the other way round), so the
rest of ``nbcallback.dataset`` loads without it.
"""
from __future__ import annotations

from typing import Any, Callable

from nbcallback.train.callback import Callback, RunContext

from .callbacks import DSCallback, DSRunContext

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

    Args:
        step_size: Rows per step, normally the batch size when the ``map`` comes
            before ``batch`` (1 when it comes after).

    Raises:
        RuntimeError: When the pipeline is asked for the next step before training
            ended the previous one (``step_size`` not the rows per training step,
            or ``Model(prefetch=True)``); MindSpore waits ``callback_timeout`` seconds
            and raises, nbcallback raises at once (see the module docstring).
        AttributeError: When the pipeline runs, if neither ``sync_epoch_begin``
            nor ``sync_step_begin`` is overridden.

    Where nbcallback differs: no thread or event is used (the pipeline runs in the
    training thread); outside ``Model`` the ``sync_*`` hooks are not called; the
    evaluation of ``Model.fit`` does not count as a training step or end.
    """

    def __init__(self, step_size: int = 1) -> None:
        DSCallback.__init__(self, step_size)
        self.step_run_context: RunContext | None = None
        self.epoch_run_context: RunContext | None = None
        self.training_ended = False
        self._training = False
        self._step_done = False
        self._epoch_done = False
        self._train_runs = 0  # incremented at each training begin: the pipeline starts a new run

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline starts an epoch (from the second on), after training ended the previous one."""

    def sync_step_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline produces a step (from the second on), after training ended the previous one."""

    # -- the training side (called by Model through Callback's hooks) ----------------

    def begin(self, run_context: RunContext) -> None:
        """Internal: training begins; the pipeline's next epoch starts a new run."""
        self._training = True
        self.training_ended = False
        self._step_done = self._epoch_done = False
        self._train_runs += 1

    def step_end(self, run_context: RunContext) -> None:
        """Internal: training ended a step; the pipeline may produce the next one."""
        self.step_run_context = run_context
        self._step_done = True

    def epoch_end(self, run_context: RunContext) -> None:
        """Internal: training ended an epoch; the pipeline may start the next one."""
        self.epoch_run_context = run_context
        self._epoch_done = True

    def end(self, run_context: RunContext) -> None:
        """Internal: training ended (also after ``request_stop()``); the pipeline no longer waits."""
        self.epoch_end(run_context)
        self.step_end(run_context)
        self.training_ended = True
        self._training = False

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
        """Internal: calls :meth:`sync_epoch_begin` from the second epoch on, once training ended the previous one."""
        if ds_run_context.cur_epoch_num > 1 and self._ready("epoch", ds_run_context):
            self.sync_epoch_begin(self.epoch_run_context, ds_run_context)

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Internal: calls :meth:`sync_step_begin` from the second step on, once training ended the previous one."""
        if ds_run_context.cur_step_num > self.step_size and self._ready("step", ds_run_context):
            self.sync_step_begin(self.step_run_context, ds_run_context)

    def _ready(self, what: str, ds_run_context: DSRunContext) -> bool:
        """Whether to call the ``sync_*`` hook now; consumes the training side's signal."""
        if self.training_ended:
            return True
        if not self._training:
            return False  # the pipeline runs outside Model: no training context to synchronise with
        flag = f"_{what}_done"
        if getattr(self, flag):
            setattr(self, flag, False)
            return True
        number = ds_run_context.cur_epoch_num if what == "epoch" else ds_run_context.cur_step_num
        raise RuntimeError(
            f"ds_{what}_begin of {type(self).__name__}: the pipeline was asked for {what} {number} before "
            f"training ended the previous {what}, so it would wait forever (MindSpore times out after "
            f"config.get_callback_timeout() seconds). Set step_size to the rows of one training step "
            f"(the batch size when the map comes before batch; now {self.step_size}), and train with "
            f"Model(prefetch=False), which reads no batch ahead."
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
