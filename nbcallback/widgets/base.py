"""``LiveCallback``: the MindSpore-style adapter of the display, what ProgressBar, LiveLossPlot and Dashboard have
in common.

The display itself is :class:`~nbcallback.widgets.board.Board`, fed by plain values.  This class only translates
``Model``'s hooks into the board's run API: each hook reads what it needs from ``cb_params`` (the epoch, the step,
the loss object, the datasets' sizes) and calls the board; where the board answers that a stop takes effect, the
hook calls ``run_context.request_stop()``.  What only a ``Model`` run has stays here: the run's callbacks list (one
:class:`~nbcallback.widgets.controls.SharedStop` in ``cb_params`` for all the display callbacks of one run), fit's
validation inside a training run (a stop there also stops the training's ``RunContext``), a stand-alone
``Model.eval`` run, and a callback's own ``request_stop()`` ("stopped by a callback").
"""
from __future__ import annotations

from typing import Any

from nbcallback.train.callback import Callback, RunContext
from nbcallback.train.model import dataset_size
from nbcallback.widgets.board import Board, save_png
from nbcallback.widgets.controls import SHARED_KEY, SharedStop
from nbcallback.widgets.sampling import batch_size

__all__ = ["LiveCallback", "save_png"]


class LiveCallback(Board, Callback):
    """Base class of the live display callbacks; use a subclass.  Takes the :class:`~nbcallback.widgets.board.Board`
    arguments (``display``, ``file``, ``graceful_interrupt``, ``refresh_interval``, ``log_interval``,
    ``live_rows``, ``max_rows``, ``smoothing``, ``max_points``, ``lang``, ``clock``, ``run_label``, ``run_notes``,
    ``remember``, and for a loop of your own ``epochs``, ``steps_per_epoch``, ``optimizer``, ``scheduler``).

    In ``Model.train`` / ``fit`` / ``eval`` it is a callback; in a loop of your own it is fed by :meth:`log` and
    friends (see :class:`~nbcallback.widgets.board.Board`)::

        with Dashboard(epochs=3, steps_per_epoch=len(loader), optimizer=opt) as board:
            for epoch in range(3):
                for x, y in loader:
                    ...
                    board.log(loss=loss)          # the tensor as it is: read on the host only at a refresh
                board.log_eval(loss=val_loss, acc=val_acc)

    Stop (the button, :meth:`request_stop`, the kernel's interrupt) ends a ``Model`` run after the current step, as
    ``run_context.request_stop()`` does; in a ``with`` block it makes the next :meth:`log` raise
    :class:`~nbcallback.widgets.StopTraining`, which the block catches.
    """

    # ------------------------------------------------------------------ translating Model's hooks

    def _opening(self, cb_params: Any) -> dict[str, Any]:
        """What every run reads from ``cb_params`` as it opens (after checking the callback is used once, in a run
        that feeds it)."""
        if sum(other is self for other in cb_params.get("list_callback") or ()) > 1:
            raise ValueError(f"callbacks holds the same {type(self).__name__} twice (its hooks would count every "
                             "step twice); pass it once")
        if self._run.fed is not None:
            raise ValueError(f"this {type(self).__name__} was given a loop's totals (epochs=, steps_per_epoch=, "
                             f"optimizer=) or fed with log(); a Model run feeds its callbacks itself: pass it a "
                             f"{type(self).__name__}() made without them")
        shared = cb_params.get(SHARED_KEY)
        if not isinstance(shared, SharedStop):  # the first display callback of the run leaves it for the others
            shared = cb_params[SHARED_KEY] = SharedStop()
        return {"optimizer": cb_params.get("optimizer"), "scheduler": cb_params.get("lr_scheduler"),
                "rank": int(cb_params.get("rank_id", 0) or 0), "callbacks": tuple(cb_params.get("list_callback") or ()),
                "shared": shared, "facts": cb_params}

    def _locate(self) -> None:
        """Tell the board where the run is (``cb_params``: the step counts the evaluation's steps in its phase)."""
        run, cb_params = self._run, self._run.facts
        step = int(cb_params.get("cur_step_num", 0) or 0)
        if run.phase == "eval":
            run.at.eval_step = step
            return
        run.at.step, run.at.epoch = step, int(cb_params.get("cur_epoch_num", 1) or 1)
        if self.state.samples_per_step is None:
            run.at.samples = batch_size(cb_params.get("train_dataset_element"))

    def _stop(self, run_context: RunContext, eval_phase: bool) -> None:
        """The board's stop takes effect: the run's own stop (a validation's stops the training too)."""
        run_context.request_stop()
        if eval_phase and self._run.loop is not None:
            self._run.loop.request_stop()

    def _finalize(self, exc: BaseException | None) -> None:
        """The run's end, where its hooks left it (a failed step: the step it failed at); a run fed by the loop API
        is where its last call put it."""
        if self._run.kind is not None and self._run.fed is None:
            self._locate()
        super()._finalize(exc)

    def on_train_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        opening = self._opening(cb_params)
        self._run.loop = run_context
        valid, eval_steps = cb_params.get("valid_dataset"), None
        if valid is not None:
            try:
                eval_steps = int(dataset_size(valid))
            except (TypeError, ValueError, AttributeError):
                pass
        self.open_run("train", epochs=int(cb_params.get("epoch_num", 1)),
                      steps_per_epoch=int(cb_params.get("batch_num", 0)),
                      first_step=int(cb_params.get("cur_step_num", 0) or 0), eval_steps=eval_steps,
                      has_validation=valid is not None, **opening)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        cb_params = self._run.facts
        self.epoch_begins(int(cb_params.get("cur_epoch_num", 1)), int(cb_params.get("cur_step_num", 0)))

    def on_train_step_end(self, run_context: RunContext) -> None:
        """The hot path: :meth:`Board.train_step`'s lines, inlined (no call more per step): O(1), no clock read,
        no device synchronisation."""
        sampler = self._sampler
        sampler.append(self._run.facts["net_outputs"])
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            self._locate()
            if self.step_check(False):
                self._stop(run_context, False)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._locate()
        if self.epoch_ends(validated=self._run.facts.get("eval_results") is not None):
            self._stop(run_context, False)

    def on_train_end(self, run_context: RunContext) -> None:
        """The run ends here (the snapshot itself is drawn in ``__exit__``)."""
        self._locate()
        self.run_ends(stopped=run_context.get_stop_requested())

    def on_eval_begin(self, run_context: RunContext) -> None:
        """fit's validation (a phase of the run) or a stand-alone ``Model.eval`` run."""
        cb_params = run_context.original_args()
        steps = int(cb_params.get("batch_num", 0)) or None
        if self._run.kind is None:
            self.open_run("eval", eval_steps=steps, **self._opening(cb_params))
        if self.eval_begins(steps):
            self._stop(run_context, True)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Hot path of evaluation steps: a counter only."""
        sampler = self._sampler
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            self._locate()
            if self.step_check(True):
                self._stop(run_context, True)

    def on_eval_end(self, run_context: RunContext) -> None:
        """Time the evaluation pass and add its table row (fit's validation: ``cb_params.eval_results``, set
        before ``on_eval_end`` as in MindSpore; ``Model.eval``: ``cb_params.metrics``)."""
        self._locate()
        cb_params = self._run.facts
        results = cb_params.get("metrics") or {} if self._run.kind == "eval" else cb_params.get("eval_results")
        if self.eval_ends(results, stopped=run_context.get_stop_requested()):
            self._stop(run_context, True)
