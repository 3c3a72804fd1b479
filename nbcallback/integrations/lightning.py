"""Lightning: ``Trainer(callbacks=[LightningDashboard()])``.

Loss: ``training_step``'s returned loss (the ``outputs`` of ``on_train_batch_end``), kept as the tensor it is and
read at a refresh.  Epochs and steps: ``trainer.max_epochs`` x ``trainer.num_training_batches`` (one step per
batch).  Validation: a bar per batch, and at its end the metrics the ``LightningModule`` logged in validation
(``self.log`` in ``validation_step`` / ``on_validation_epoch_end``).  Stop: sets ``trainer.should_stop``, so
Lightning ends the run after the current batch.  lr box: ``trainer.optimizers[0]`` (its first scheduler's
``base_lrs`` scaled too).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from nbcallback.integrations import missing_library
from nbcallback.integrations._common import feeding, make_board, numbers_only
from nbcallback.widgets.base import LiveCallback

try:
    from lightning.pytorch.callbacks import Callback as _LightningCallback
except ImportError as error:  # pragma: no cover - depends on the environment
    raise missing_library("Lightning", "lightning", error) from None

__all__ = ["LightningDashboard"]


class LightningDashboard(_LightningCallback):
    """A :class:`~nbcallback.widgets.Dashboard` for a Lightning ``Trainer``.

    Args:
        board: the display to feed (a ``Dashboard``, ``LiveLossPlot`` or ``ProgressBar``); None makes a Dashboard
            with ``kwargs``.
        **kwargs: the :class:`~nbcallback.widgets.Dashboard` arguments (``display=``, ``save_path=`` ...).

    Example::

        trainer = lightning.Trainer(max_epochs=3, callbacks=[LightningDashboard()], enable_progress_bar=False)
    """

    def __init__(self, board: LiveCallback | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.board = make_board(board, kwargs, "LightningDashboard")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        optimizers = list(getattr(trainer, "optimizers", None) or [])
        configs = list(getattr(trainer, "lr_scheduler_configs", None) or [])
        batches = trainer.num_training_batches
        epochs = trainer.max_epochs if trainer.max_epochs is not None and trainer.max_epochs >= 0 else None
        self.board.begin(epochs=epochs, steps_per_epoch=int(batches) if math.isfinite(batches) else None,
                         optimizer=optimizers[0] if optimizers else None,
                         scheduler=configs[0].scheduler if configs else None)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        self.board.log(loss=loss if loss is not None else None, epoch=trainer.current_epoch)
        if self.board.stop_requested:
            trainer.should_stop = True

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or not feeding(self.board):
            return
        total = sum(int(n) for n in trainer.num_val_batches if math.isfinite(n)) or None
        self.board.eval_begin(total)

    def on_validation_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int,
                                dataloader_idx: int = 0) -> None:
        if not trainer.sanity_checking and feeding(self.board):
            self.board.eval_step()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or not feeding(self.board):
            return
        results = numbers_only(_validation_metrics(trainer))
        if results:
            self.board.log_eval(**results)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.board.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.board.finish(error=exception)


def _validation_metrics(trainer: Any) -> Mapping[str, Any]:
    """What the module logged during this validation (the validation loop's results), else every callback metric
    whose name says validation."""
    loop = getattr(getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None), "val_loop", None)
    results = getattr(loop, "_results", None)
    try:
        return dict(results.metrics(False)["callback"])  # type: ignore[union-attr]
    except (AttributeError, KeyError, TypeError):
        return {name: value for name, value in trainer.callback_metrics.items() if "val" in name.lower()}
