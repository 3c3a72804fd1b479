"""LightningDashboard with the real Lightning on a small model (CPU)."""
from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

L = pytest.importorskip("lightning", reason="Lightning is not installed: pip install 'nbcallback[lightning]'")

from nbcallback.integrations import LightningDashboard  # noqa: E402


class Small(L.LightningModule):
    def __init__(self, lr: float = 0.1, scheduler: bool = False) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        self.lr, self.scheduler = lr, scheduler

    def training_step(self, batch: Any, index: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, index: int) -> None:
        x, y = batch
        out = self.net(x)
        self.log("val_loss", nn.functional.cross_entropy(out, y))
        self.log("val_acc", (out.argmax(1) == y).float().mean())

    def configure_optimizers(self) -> Any:
        opt = torch.optim.SGD(self.parameters(), lr=self.lr)
        if not self.scheduler:
            return opt
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)]


def _loaders() -> tuple[DataLoader, DataLoader]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(320, 8, generator=generator)
    data = TensorDataset(x, (x[:, :2].sum(1) > 0).long())
    return DataLoader(data, batch_size=16), DataLoader(data, batch_size=64)


def _trainer(callbacks: list[Any], epochs: int = 3) -> Any:
    return L.Trainer(max_epochs=epochs, callbacks=callbacks, enable_progress_bar=False, logger=False,
                     enable_checkpointing=False, enable_model_summary=False, num_sanity_val_steps=2)


class AtBatch(L.Callback):
    def __init__(self, batch: int, action: Any) -> None:
        self.batch, self.action, self.calls = batch, action, 0

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, index: int) -> None:
        self.calls += 1
        if self.calls == self.batch:
            self.action(trainer)


def test_lightning_fit_shows_epochs_losses_and_validation() -> None:
    out = io.StringIO()
    dash = LightningDashboard(display="text", file=out)
    train, valid = _loaders()
    _trainer([dash]).fit(Small(), train, valid)
    view = dash.board.view()
    assert view.status == "finished"
    assert (view.epochs, view.steps_per_epoch, view.steps_done) == (3, 20, 60)
    assert [row.step for row in view.rows] == [20, 40, 60]  # the sanity check added no row
    assert set(view.columns) == {"val_loss", "val_acc"}
    assert view.lr == pytest.approx(0.1)
    assert len(dash.board.state.plot_data().series["loss"]["x"]) == 60  # every step's loss, read at refreshes
    assert "Training finished: 3/3 epochs, 60/60 steps" in out.getvalue()
    trainer = _trainer([dash])
    trainer.validate(Small(), valid)  # a stand-alone validation is not shown; the last run's view stays
    assert dash.board.view().steps_done == 60


def test_lightning_stop_sets_should_stop_and_the_run_ends_stopped() -> None:
    dash = LightningDashboard(display="text", file=io.StringIO())
    train, valid = _loaders()
    clicker = AtBatch(25, lambda trainer: dash.board.request_stop("button"))  # epoch 2, batch 5
    trainer = _trainer([clicker, dash])
    trainer.fit(Small(), train, valid)
    assert trainer.should_stop
    assert trainer.global_step == 25  # the step in progress ended, no other began
    assert dash.board.view().status_text == "stopped by user at epoch 2, step 5 (Stop button)"


def test_lightning_lr_box_sets_the_optimizer_and_its_scheduler() -> None:
    dash = LightningDashboard(display="off")
    train, valid = _loaders()
    trainer = _trainer([AtBatch(5, lambda trainer: dash.board.set_learning_rate(0.02)), dash], epochs=1)
    trainer.fit(Small(scheduler=True), train, valid)
    optimizer = trainer.optimizers[0]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.02)
    assert trainer.lr_scheduler_configs[0].scheduler.base_lrs == [pytest.approx(0.02)]


def test_lightning_error_shows_as_failed() -> None:
    class Broken(Small):
        def training_step(self, batch: Any, index: int) -> torch.Tensor:
            if index == 3:
                raise ArithmeticError("broken batch")
            return super().training_step(batch, index)

    dash = LightningDashboard(display="off")
    train, valid = _loaders()
    with pytest.raises(ArithmeticError):
        _trainer([dash]).fit(Broken(), train, valid)
    assert dash.board.view().status == "error"
