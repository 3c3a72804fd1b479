"""Keras 3 (the torch backend): ``model.fit(..., callbacks=[KerasDashboard()])``.

Loss: the ``loss`` Keras hands ``on_train_batch_end`` (a number: Keras has read it already), which is the mean
over the epoch's batches so far, as Keras's own progress bar shows it.  Epochs and steps: ``fit``'s ``epochs``
and ``steps`` (``self.params``).  Validation: a bar per batch and at its end the ``val_*`` entries of the epoch's
logs (``val_loss`` in the loss panel).  Stop: sets ``model.stop_training``, so Keras ends after the current batch.
lr box: ``model.optimizer.learning_rate`` (disabled where the optimizer has a schedule instead of a number).
"""
from __future__ import annotations

from typing import Any

from nbcallback.integrations import missing_library
from nbcallback.integrations._common import feeding, make_board, numbers_only
from nbcallback.widgets.base import LiveCallback

try:
    import keras as _keras
except ImportError as error:  # pragma: no cover - depends on the environment
    raise missing_library("Keras 3", "keras", error) from None

__all__ = ["KerasDashboard"]


class KerasDashboard(_keras.callbacks.Callback):
    """A :class:`~nbcallback.widgets.Dashboard` for ``keras.Model.fit`` (Keras 3; set ``KERAS_BACKEND=torch``
    before importing keras).

    Args:
        board: the display to feed (a ``Dashboard``, ``LiveLossPlot`` or ``ProgressBar``); None makes a Dashboard
            with ``kwargs``.
        **kwargs: the :class:`~nbcallback.widgets.Dashboard` arguments.

    Example::

        model.fit(x, y, epochs=3, validation_split=0.2, callbacks=[KerasDashboard()], verbose=0)
    """

    def __init__(self, board: LiveCallback | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.board = make_board(board, kwargs, "KerasDashboard")
        self.training = False
        self.validating = False
        self.epoch = 0

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if feeding(self.board):  # the last run raised: the framework has no hook for that, so it ends here
            self.board.finish(error=RuntimeError("the run stopped with an error (see the traceback above)"))
        params = self.params or {}
        optimizer = getattr(self.model, "optimizer", None)
        rate = getattr(optimizer, "learning_rate", None)
        try:
            float(rate)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # a schedule: the lr box cannot set it
            optimizer = None
        self.board.begin(epochs=params.get("epochs"), steps_per_epoch=params.get("steps"), optimizer=optimizer)
        self.training = True

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        loss = (logs or {}).get("loss")
        self.board.log(loss=loss, epoch=self.epoch)
        if self.board.stop_requested:
            self.model.stop_training = True

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.validating = self.training
        if self.validating:
            self.board.eval_begin(None)

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.validating:
            self.board.eval_step()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        results = numbers_only({name: value for name, value in (logs or {}).items() if name.startswith("val_")})
        if results:
            self.board.log_eval(**results)
        self.validating = False
        self.board.end_epoch()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.training = False
        self.board.finish()
