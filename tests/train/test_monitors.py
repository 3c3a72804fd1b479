"""``LossMonitor`` and ``TimeMonitor``: validation, printed lines, NaN handling."""
from __future__ import annotations

import math
import re

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, LossMonitor, Model, TimeMonitor

from .helpers import blobs, make_model

LOSS_LINE = re.compile(r"^epoch: (\d+) step: (\d+), loss is (\d+\.\d+(?:e-?\d+)?)$")
TIME_LINE = re.compile(r"^(Train|Eval) epoch time: (\d+\.\d{3}) ms, per step time: (\d+\.\d{3}) ms(.*)$")


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- LossMonitor


def test_loss_monitor_validation():
    with pytest.raises(ValueError, match=r"The input value must be int and must >= 0, but got '-1' with type 'int'\."):
        LossMonitor(-1)
    for bad in (1.0, "3", True, None):
        with pytest.raises(TypeError, match="per_print_times"):
            LossMonitor(bad)
    LossMonitor(0)


def test_loss_monitor_prints_every_step_by_default(capsys):
    make_model().train(1, blobs(3), callbacks=LossMonitor())
    out = lines(capsys)
    assert [LOSS_LINE.match(l).group(1, 2) for l in out] == [("1", "1"), ("1", "2"), ("1", "3")]


def test_loss_monitor_global_counter(capsys):
    make_model().train(2, blobs(10), callbacks=LossMonitor(4))
    out = lines(capsys)
    assert [LOSS_LINE.match(l).group(1, 2) for l in out] == [("1", "4"), ("1", "8"), ("2", "2"), ("2", "6"), ("2", "10")]


def test_loss_monitor_value_is_the_step_loss(capsys):
    losses = []

    class Grab(Callback):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs))

    make_model().train(1, blobs(2), callbacks=[LossMonitor(1), Grab()])
    printed = [float(LOSS_LINE.match(l).group(3)) for l in lines(capsys)]
    assert printed == losses  # repr of the same float


def test_loss_monitor_zero_never_prints(capsys):
    make_model().train(1, blobs(5), callbacks=LossMonitor(0))
    assert lines(capsys) == []


def test_loss_monitor_counter_resets_per_train_call(capsys):
    model = make_model()
    monitor = LossMonitor(3)
    model.train(1, blobs(4), callbacks=monitor)
    model.train(1, blobs(4), callbacks=monitor)
    assert [LOSS_LINE.match(l).group(2) for l in lines(capsys)] == ["3", "3"]


class NanNet(nn.Module):
    def __init__(self, bad_step: int, value: float = math.nan):
        super().__init__()
        self.lin = nn.Linear(8, 3)
        self.calls = 0
        self.bad_step = bad_step
        self.value = value

    def forward(self, x):
        self.calls += 1
        out = self.lin(x)
        if self.calls == self.bad_step:
            out = out * self.value
        return out


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_or_inf_loss_raises_exact_message(value, capsys):
    net = NanNet(bad_step=7, value=value)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.0))
    with pytest.raises(ValueError) as info:
        model.train(2, blobs(5), callbacks=LossMonitor(100))
    assert str(info.value) == (
        "In epoch: 2 step: 2, loss is NAN or INF, training process cannot continue, terminating training."
    )
    assert lines(capsys) == []


def test_nan_without_loss_monitor_does_not_stop():
    net = NanNet(bad_step=2)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.0))
    model.train(1, blobs(3))
    assert net.calls == 3  # the NaN step and the one after it ran


class OnAccelerator(torch.Tensor):
    """A CPU tensor that says it lives on a GPU: LossMonitor takes its device path (no read per step)."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False


class ReportOnAccelerator(Callback):
    """Before LossMonitor: hands it the step's loss as an :class:`OnAccelerator` tensor."""

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        cb_params.net_outputs = cb_params.net_outputs.as_subclass(OnAccelerator)


@pytest.mark.parametrize(("per_print", "bad_step", "raised_at", "message_step"), [
    (100, 7, "epoch end", (2, 2)),  # no print step: checked at the end of epoch 2
    (3, 2, "step 3", (1, 2)),  # the print step after the bad one raises, naming the bad step
    (3, 3, "step 3", (1, 3)),  # a print step reads its own loss at once
])
def test_nan_on_an_accelerator_is_raised_at_the_next_check_naming_its_step(per_print, bad_step, raised_at, message_step, capsys):
    net = NanNet(bad_step=bad_step)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.0))
    with pytest.raises(ValueError) as info:
        model.train(2, blobs(5), callbacks=[ReportOnAccelerator(), LossMonitor(per_print)])
    epoch, step = message_step
    assert str(info.value) == (
        f"In epoch: {epoch} step: {step}, loss is NAN or INF, training process cannot continue, terminating training."
    )
    checked_at = 10 if raised_at == "epoch end" else 3
    assert net.calls == checked_at  # the steps up to the check ran, none after it
    assert lines(capsys) == []


def test_kept_losses_are_folded_and_the_first_bad_one_is_named(monkeypatch):
    from nbcallback.train.loss_monitor import _UncheckedLosses

    monkeypatch.setattr(_UncheckedLosses, "CHUNK", 4)
    kept = _UncheckedLosses()
    values = [0.5] * 9 + [math.inf, math.nan, 0.2]
    for step, value in enumerate(values, start=1):
        kept.add(torch.tensor(value), 1, step)
    assert len(kept._flags) == 3 and kept._losses == []  # 12 losses in three folded chunks
    assert kept.first_non_finite() == (1, 10)
    assert kept.first_non_finite() is None  # checked losses are forgotten
    kept.add(torch.tensor([1.0, math.nan]), 2, 1)  # a loss of several elements: its mean
    assert kept.first_non_finite() == (2, 1)


def test_eval_result_line_only_in_fit(capsys):
    model = make_model()
    model.train(1, blobs(2), callbacks=LossMonitor(0))
    assert lines(capsys) == []
    model.fit(2, blobs(2), blobs(2, seed=4), callbacks=LossMonitor(0))
    out = lines(capsys)
    assert len(out) == 2
    for epoch, line in enumerate(out, start=1):
        match = re.fullmatch(r"Eval result: epoch (\d+), metrics: \{'accuracy': (\d\.\d+|[01])\}", line)
        assert match and int(match.group(1)) == epoch, line
    model.fit(3, blobs(2), blobs(2, seed=4), valid_frequency=[2], callbacks=LossMonitor(0))
    assert [l.split(",")[0] for l in lines(capsys)] == ["Eval result: epoch 2"]


def test_loss_monitor_in_model_eval_prints_nothing(capsys):
    """In ``Model.eval`` the monitor gets no train hooks (nbcallback uses on_train_* names)."""
    metrics = make_model().eval(blobs(2), callbacks=LossMonitor(1))
    assert set(metrics) == {"accuracy"}
    assert lines(capsys) == []


def test_loss_monitor_tuple_output_prints_tensor(capsys):
    """MindSpore 2.x ``_handle_loss``: a tuple's first element is printed as a tensor (loss-scale cells)."""
    model = make_model()

    class Wrap(Callback):
        def on_train_step_end(self, run_context):
            p = run_context.original_args()
            p.net_outputs = (p.net_outputs, torch.tensor(False))

    model.train(1, blobs(1), callbacks=[Wrap(), LossMonitor(1)])
    assert lines(capsys)[0].startswith("epoch: 1 step: 1, loss is tensor(")


# --------------------------------------------------------------------------- TimeMonitor


def test_time_monitor_validation():
    with pytest.raises(TypeError, match="data_time"):
        TimeMonitor(data_time=1)
    TimeMonitor(data_size=5)


def test_time_monitor_format_and_per_step(capsys):
    make_model().train(2, blobs(4), callbacks=TimeMonitor())
    out = lines(capsys)
    assert len(out) == 2
    for line in out:
        match = TIME_LINE.match(line)
        assert match and match.group(1) == "Train" and match.group(4) == ""
        epoch_ms, step_ms = float(match.group(2)), float(match.group(3))
        assert abs(epoch_ms / 4 - step_ms) <= 0.0015


def test_time_monitor_data_time_suffix(capsys):
    make_model().train(1, blobs(4), callbacks=TimeMonitor(data_time=True))
    match = TIME_LINE.match(lines(capsys)[0])
    assert re.fullmatch(r" \(data time: \d+\.\d{3} ms\)", match.group(4))


def test_time_monitor_eval_line_in_fit(capsys):
    make_model().fit(2, blobs(4), blobs(3, seed=8), callbacks=TimeMonitor())
    out = [TIME_LINE.match(l) for l in lines(capsys)]
    assert [m.group(1) for m in out] == ["Eval", "Train", "Eval", "Train"]
    for m in out:
        steps = 3 if m.group(1) == "Eval" else 4
        assert abs(float(m.group(2)) / steps - float(m.group(3))) <= 0.0015


def test_time_monitor_train_line_excludes_validation(capsys):
    import time

    class SlowEval(Callback):
        def on_eval_step_end(self, run_context):
            time.sleep(0.05)

    make_model().fit(1, blobs(2), blobs(4), callbacks=[SlowEval(), TimeMonitor()])
    eval_line, train_line = (TIME_LINE.match(l) for l in lines(capsys))
    assert float(eval_line.group(2)) >= 190
    assert float(train_line.group(2)) < float(eval_line.group(2))


def test_time_monitor_uses_data_size_when_batch_num_unknown(capsys):
    from nbcallback.train import RunContext
    from nbcallback.train.callback import CallbackParams

    rc = RunContext(CallbackParams(mode="train"))
    monitor = TimeMonitor(data_size=10)
    monitor.on_train_epoch_begin(rc)
    monitor.on_train_epoch_end(rc)
    assert TIME_LINE.match(lines(capsys)[0])
    with pytest.raises(ValueError, match="data_size"):
        TimeMonitor().on_train_epoch_end(rc)


def test_time_monitor_in_model_eval(capsys):
    make_model().eval(blobs(3), callbacks=TimeMonitor())
    out = [TIME_LINE.match(l) for l in lines(capsys)]
    assert len(out) == 1 and out[0].group(1) == "Eval"
    assert abs(float(out[0].group(2)) / 3 - float(out[0].group(3))) <= 0.0015
