"""Hugging Face ``transformers``: ``Trainer(..., callbacks=[TransformersDashboard()])``.

Loss: the ``Trainer`` hands callbacks no per-step loss; it logs the mean loss of the last ``logging_steps`` steps
(``on_log``: already a number), which becomes a point at that step; every step still moves the bars.  Epochs and
steps: ``state.num_train_epochs`` and ``state.max_steps`` (optimizer steps).  Evaluation: a bar per batch
(``on_prediction_step``) and a table row of ``on_evaluate``'s metrics without their ``eval_`` prefix
(``eval_loss`` -> ``loss``; the runtime and speed entries left out).  Stop: sets ``control.should_training_stop``,
so the ``Trainer`` ends after the current step.  lr box: the ``Trainer``'s optimizer, with its scheduler's
``base_lrs`` scaled by the same factor (the default linear schedule then goes on from the new rate).
"""
from __future__ import annotations

import math
from typing import Any

from nbcallback.integrations import missing_library
from nbcallback.integrations._common import feeding, make_board, numbers_only
from nbcallback.widgets.base import LiveCallback

try:
    from transformers import TrainerCallback as _TrainerCallback
except ImportError as error:  # pragma: no cover - depends on the environment
    raise missing_library("Hugging Face transformers", "transformers", error) from None

__all__ = ["TransformersDashboard"]

#: on_evaluate's entries that are not results (time and speed of the pass, the epoch).
_NOT_RESULTS = ("epoch", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second")


class TransformersDashboard(_TrainerCallback):
    """A :class:`~nbcallback.widgets.Dashboard` for a Hugging Face ``Trainer``.

    Args:
        board: the display to feed (a ``Dashboard``, ``LiveLossPlot`` or ``ProgressBar``); None makes a Dashboard
            with ``kwargs``.
        **kwargs: the :class:`~nbcallback.widgets.Dashboard` arguments.

    Example::

        trainer = Trainer(model, args, train_dataset=train, eval_dataset=test, callbacks=[TransformersDashboard()])
    """

    def __init__(self, board: LiveCallback | None = None, **kwargs: Any) -> None:
        self.board = make_board(board, kwargs, "TransformersDashboard")
        self.training = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if feeding(self.board):  # the last run raised: the framework has no hook for that, so it ends here
            self.board.finish(error=RuntimeError("the run stopped with an error (see the traceback above)"))
        epochs = int(math.ceil(state.num_train_epochs)) if state.num_train_epochs else None
        steps = int(state.max_steps) if state.max_steps and state.max_steps > 0 else None
        per_epoch = math.ceil(steps / epochs) if steps and epochs else None
        self.board.begin(epochs=epochs, steps_per_epoch=per_epoch, optimizer=kwargs.get("optimizer"),
                         scheduler=kwargs.get("lr_scheduler"))
        self.training = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if not self.training:
            return None
        self.board.log(step=state.global_step)
        if self.board.stop_requested:
            control.should_training_stop = True
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if self.training and logs and "loss" in logs and state.global_step > 0:
            self.board.log(loss=float(logs["loss"]), step=state.global_step)

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.training:
            self.board.eval_step()

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None,
                    **kwargs: Any) -> None:
        if not self.training:
            return
        results = numbers_only(metrics or {}, drop=_NOT_RESULTS)
        results = {name.removeprefix("eval_"): value for name, value in results.items()}
        if results:
            self.board.log_eval(**results)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.training:
            self.training = False
            self.board.finish()
