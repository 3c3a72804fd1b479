"""NaN and ±Inf losses at random steps.

* With ``LossMonitor``: ``ValueError`` with MindSpore's message naming the
  epoch and the step in the epoch; the run ends at once (no ``on_train_end``).
* Without it: training goes on to the end (documented), ``on_train_end`` runs.
* With ``TerminateOnNaN``: the run stops quietly after that step (nothing
  printed), ``on_train_end`` runs, ``stopped_epoch``/``stopped_step`` say where.
"""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, LossMonitor, Model, RunContext, TerminateOnNaN
from tests.reliability._training import STEPS_PER_EPOCH, HookLog, train_data, valid_data

EPOCHS = 3
BAD_VALUES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class Poison:
    """A loss that is multiplied by ``value`` at one global training step."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.armed = False
        self.base = nn.CrossEntropyLoss()

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss = self.base(logits, labels)
        return loss * self.value if self.armed else loss


class ArmAt(Callback):
    def __init__(self, poison: Poison, step: int) -> None:
        self.poison, self.step = poison, step

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self.poison.armed = run_context.original_args().cur_step_num == self.step

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.poison.armed = False


class Losses(Callback):
    def __init__(self) -> None:
        self.values: list[float] = []

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.values.append(float(run_context.original_args().net_outputs))


def _setup(rng, value):
    torch.manual_seed(rng.randrange(1 << 16))
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    poison = Poison(BAD_VALUES[value])
    model = Model(net, poison, torch.optim.SGD(net.parameters(), lr=0.05), metrics={"accuracy"})
    step = rng.randint(1, EPOCHS * STEPS_PER_EPOCH)
    epoch, in_epoch = (step - 1) // STEPS_PER_EPOCH + 1, (step - 1) % STEPS_PER_EPOCH + 1
    print(f"{value} loss at global step {step} (epoch {epoch}, step {in_epoch})")
    return model, poison, step, epoch, in_epoch


@pytest.mark.parametrize("method", ["train", "fit"])
@pytest.mark.parametrize("value", list(BAD_VALUES))
def test_loss_monitor_raises_mindspores_error(seeded, value, method):
    rng = seeded(f"nan-loss-monitor-{value}-{method}")
    model, poison, step, epoch, in_epoch = _setup(rng, value)
    log, per_print = HookLog(), rng.choice([0, 1, 4])
    callbacks = [LossMonitor(per_print), log, ArmAt(poison, step)]
    message = (f"In epoch: {epoch} step: {in_epoch}, loss is NAN or INF, training process cannot continue, "
               "terminating training.")
    with pytest.raises(ValueError) as caught:
        if method == "train":
            model.train(EPOCHS, train_data(), callbacks=callbacks)
        else:
            model.fit(EPOCHS, train_data(), valid_data(), callbacks=callbacks)
    assert str(caught.value) == message
    assert caught.value.__notes__ == ["raised in callback LossMonitor.on_train_step_end"]
    assert log.hooks()[-1] == "on_train_step_begin" and "on_train_end" not in log.hooks()
    assert log.exits()[-1] is ValueError


@pytest.mark.parametrize("value", list(BAD_VALUES))
def test_without_loss_monitor_training_goes_on(seeded, value):
    rng = seeded(f"nan-no-monitor-{value}")
    model, poison, step, _, _ = _setup(rng, value)
    log, losses = HookLog(), Losses()
    model.fit(EPOCHS, train_data(), valid_data(), callbacks=[log, ArmAt(poison, step), losses])
    assert len(losses.values) == EPOCHS * STEPS_PER_EPOCH  # every step ran
    assert not math.isfinite(losses.values[step - 1])
    assert all(math.isfinite(v) for v in losses.values[: step - 1])
    assert log.hooks()[-1] == "on_train_end"


@pytest.mark.parametrize("method", ["train", "fit"])
@pytest.mark.parametrize("value", list(BAD_VALUES))
def test_terminate_on_nan_stops_silently(seeded, capsys, value, method):
    rng = seeded(f"nan-terminate-{value}-{method}")
    model, poison, step, epoch, _ = _setup(rng, value)
    capsys.readouterr()  # the seed lines above
    terminate, log, losses = TerminateOnNaN(), HookLog(), Losses()
    callbacks = [log, ArmAt(poison, step), losses, terminate]
    if method == "train":
        model.train(EPOCHS, train_data(), callbacks=callbacks)
    else:
        model.fit(EPOCHS, train_data(), valid_data(), callbacks=callbacks)
    assert (terminate.stopped_epoch, terminate.stopped_step) == (epoch, step)
    assert len(losses.values) == step  # stopped right after the bad step
    hooks = log.hooks()
    assert hooks[-2:] == ["on_train_epoch_end", "on_train_end"]
    if method == "fit":
        assert hooks[-4:-2] == ["on_eval_epoch_end", "on_eval_end"]  # the stopped epoch is still validated
    assert capsys.readouterr().out == ""
