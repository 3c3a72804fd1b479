"""TransformersDashboard with the real Hugging Face Trainer on a small model (CPU)."""
from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers", reason="transformers is not installed: "
                                   "pip install 'nbcallback[transformers]'")
pytest.importorskip("accelerate", reason="the Trainer needs accelerate: pip install 'nbcallback[transformers]'")

from nbcallback.integrations import TransformersDashboard  # noqa: E402


class Rows(torch.utils.data.Dataset):
    def __init__(self, n: int, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 8, generator=generator)
        self.y = (self.x[:, :2].sum(1) > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": self.x[i], "labels": self.y[i]}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        out = self.layer(x)
        return {"loss": nn.functional.cross_entropy(out, labels), "logits": out}


def _trainer(tmp_path: Any, callbacks: list[Any], logging_steps: int = 5) -> Any:
    args = transformers.TrainingArguments(
        str(tmp_path), num_train_epochs=3, per_device_train_batch_size=16, logging_steps=logging_steps,
        eval_strategy="epoch", save_strategy="no", report_to=[], disable_tqdm=True, use_cpu=True, learning_rate=0.1)
    torch.manual_seed(0)
    trainer = transformers.Trainer(model=Net(), args=args, train_dataset=Rows(160), eval_dataset=Rows(64, seed=1),
                                   callbacks=callbacks)
    trainer.remove_callback(transformers.trainer_callback.PrinterCallback)
    return trainer


class AtStep(transformers.TrainerCallback):
    def __init__(self, step: int, action: Any) -> None:
        self.step, self.action = step, action

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step + 1 == self.step:
            self.action(kwargs)


def test_trainer_shows_epochs_logged_losses_and_evaluations(tmp_path: Any) -> None:
    out = io.StringIO()
    dash = TransformersDashboard(display="text", file=out)
    trainer = _trainer(tmp_path, [dash])
    trainer.train()
    view = dash.board.view()
    assert view.status == "finished"
    assert (view.epochs, view.steps_per_epoch, view.steps_done) == (3, 10, 30)
    assert [row.step for row in view.rows] == [10, 20, 30]
    assert view.columns == ("loss",)  # eval_loss without its prefix; runtime and speed left out
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    series = dash.board.state.plot_data().series["loss"]
    assert series["x"] == [entry["step"] for entry in logged]  # one point per logged loss, at its step
    assert view.last_loss == pytest.approx(logged[-1]["loss"])
    assert "Training finished: 3/3 epochs, 30/30 steps" in out.getvalue()


def test_trainer_stop_sets_should_training_stop(tmp_path: Any) -> None:
    dash = TransformersDashboard(display="text", file=io.StringIO())
    trainer = _trainer(tmp_path, [AtStep(14, lambda kwargs: dash.board.request_stop("button")), dash])
    trainer.train()
    assert trainer.state.global_step == 14
    assert dash.board.view().status_text == "stopped by user at epoch 2, step 4 (Stop button)"


def test_trainer_lr_box_sets_the_rate_and_the_schedule_goes_on_from_it(tmp_path: Any) -> None:
    dash = TransformersDashboard(display="off")
    seen: list[float] = []
    trainer = _trainer(tmp_path, [AtStep(5, lambda kwargs: dash.board.set_learning_rate(0.04)),
                                  AtStep(6, lambda kwargs: seen.append(kwargs["optimizer"].param_groups[0]["lr"])),
                                  dash])
    trainer.train()
    assert seen == [pytest.approx(0.04)]  # set at the end of step 5, after that step's scheduler.step()
    # the default linear decay over 30 steps: 0.04 after 5 steps means a base rate of 0.04 / (1 - 5/30)
    assert trainer.lr_scheduler.base_lrs == [pytest.approx(0.048)] * len(trainer.optimizer.param_groups)
