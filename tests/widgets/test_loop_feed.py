"""A loop of the user's own feeds the display: ``with Dashboard(...) as board: ... board.log(loss=loss)``."""
from __future__ import annotations

import io
import threading

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from nbcallback.train import Model
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar, StopTraining
from tests.widgets.conftest import SEED, FakeClock, batches


def _net_and_opt(lr: float = 0.1) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    return net, torch.optim.SGD(net.parameters(), lr=lr)


def _step(net: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def test_a_plain_loop_shows_its_epochs_losses_and_evaluations() -> None:
    net, opt = _net_and_opt()
    data, out = batches(20), io.StringIO()
    with Dashboard("text", file=out, epochs=3, steps_per_epoch=len(data), optimizer=opt) as board:
        for epoch in range(3):
            for x, y in data:
                board.log(loss=_step(net, opt, x, y))
            board.log_eval(loss=0.5 - epoch / 10, accuracy=0.7 + epoch / 10)
    view = board.view()
    assert view.status == "finished"
    assert (view.epochs_done, view.steps_done, view.total_steps) == (3, 60, 60)
    assert [row.epoch for row in view.rows] == [1, 2, 3]
    assert [row.step for row in view.rows] == [20, 40, 60]
    assert view.rows[-1].values == pytest.approx({"loss": 0.3, "accuracy": 0.9})
    assert view.lr == pytest.approx(0.1)
    losses = board.state.plot_data().series["loss"]
    assert losses  # the per-step losses reached the plot's series
    text = out.getvalue()
    assert "training: 3 epochs x 20 steps" in text and "Training finished: 3/3 epochs, 60/60 steps" in text


def _same_net() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(SEED)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    return net, torch.optim.SGD(net.parameters(), lr=0.05)


def test_the_same_run_through_model_and_through_log_shows_the_same_losses() -> None:
    data = batches(10)
    net, opt = _same_net()
    through_model = ProgressBar("text", file=io.StringIO())
    Model(net, nn.CrossEntropyLoss(), opt).train(2, data, callbacks=[through_model])
    net, opt = _same_net()
    with ProgressBar("text", file=io.StringIO(), epochs=2, steps_per_epoch=len(data), optimizer=opt) as fed:
        for _ in range(2):
            for x, y in data:
                fed.log(loss=_step(net, opt, x, y))
    by_model, by_log = through_model.view(), fed.view()
    assert by_model.loss is not None
    assert by_log.loss == pytest.approx(by_model.loss, rel=1e-6)
    assert by_log.last_loss == pytest.approx(by_model.last_loss, rel=1e-6)
    fields = ("epochs_done", "steps_done", "global_step", "step_in_epoch", "epoch")
    assert [getattr(by_log, f) for f in fields] == [getattr(by_model, f) for f in fields]
    assert fed.state.plot_data().series == through_model.state.plot_data().series


def test_stop_ends_the_with_block_after_the_current_step() -> None:
    net, opt = _net_and_opt()
    data, seen = batches(20), []
    with Dashboard("text", file=io.StringIO(), epochs=3, steps_per_epoch=len(data)) as board:
        for epoch in range(3):
            for i, (x, y) in enumerate(data):
                if (epoch, i) == (1, 5):
                    threading.Thread(target=board.request_stop, args=("button",)).start()  # a click: another thread
                    threading.Event().wait(0.05)
                seen.append((epoch, i))
                board.log(loss=_step(net, opt, x, y))
    assert seen[-1] == (1, 5)  # the step in progress ended, no other began
    assert board.stop_requested
    view = board.view()
    assert view.status == "stopped"
    assert view.status_text == "stopped by user at epoch 2, step 6 (Stop button)"


def test_outside_a_with_block_stop_is_a_flag_and_finish_ends_the_run() -> None:
    board = ProgressBar("text", file=io.StringIO())
    board.begin(epochs=1, steps_per_epoch=100)
    steps = 0
    for step in range(100):
        board.log(loss=1.0 / (step + 1))
        steps += 1
        if step == 9:
            board.request_stop()
        if board.stop_requested:
            break
    board.finish()
    assert steps == 10  # the flag is up as soon as the request is made
    assert board.view().status_text == "stopped by user at epoch 1, step 10 (request_stop())"
    board.finish()  # a second call does nothing
    with pytest.raises(RuntimeError, match=r"log\(\) after finish\(\)"):
        board.log(loss=1.0)


def test_the_lr_box_drives_the_optimizer_and_its_scheduler() -> None:
    net, opt = _net_and_opt(lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
    data = batches(10)
    with Dashboard("off", epochs=1, steps_per_epoch=10, optimizer=opt, scheduler=scheduler) as board:
        for i, (x, y) in enumerate(data):
            if i == 4:
                before = opt.param_groups[0]["lr"]
                board.set_learning_rate(before / 2)  # what the lr box calls
            board.log(loss=_step(net, opt, x, y))
            if i == 4:
                assert opt.param_groups[0]["lr"] == pytest.approx(before / 2)
            scheduler.step()
    assert scheduler.base_lrs == [pytest.approx(0.05)]  # the schedule goes on from the new rate
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05 / 11)
    assert board.view().lr_changes  # the change is marked on the plot


def test_without_totals_the_first_log_starts_the_run() -> None:
    with LiveLossPlot("off") as board:
        assert board.view().status != "running"
        for step in range(30):
            board.log(loss=torch.tensor(1.0 / (step + 1)), epoch=step // 10)
    view = board.view()
    assert view.status == "finished"
    assert (view.epochs_done, view.steps_done) == (3, 30)


class _Reads(TorchFunctionMode):
    """Counts the calls that copy a tensor's value to the host."""

    READS = {"item", "tolist", "cpu", "__float__", "numpy", "to"}

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if getattr(func, "__name__", "") in self.READS:
            self.count += 1
        return func(*args, **(kwargs or {}))


def test_log_reads_the_losses_only_at_a_refresh_never_per_step() -> None:
    clock = FakeClock()
    board = ProgressBar("text", file=io.StringIO(), clock=clock, refresh_interval=1.0)
    board.begin(epochs=1, steps_per_epoch=1000)
    reading_steps = 0
    for i in range(1, 501):
        loss = torch.tensor(float(i))
        clock.advance(0.01)
        with _Reads() as reads:
            board.log(loss=loss)
        reading_steps += reads.count > 0
    refreshes = board._scheduler.refreshes
    assert 3 <= refreshes <= 6  # 5 s of steps, one refresh a second
    assert 1 <= reading_steps <= refreshes  # the losses are read at a refresh, on no other step
    with _Reads() as reads:
        board.finish()
    assert reads.count > 0  # the last losses, read once at the end
    assert board.view().last_loss == 500.0


def test_bad_use_gets_clear_errors() -> None:
    board = ProgressBar("off")
    with pytest.raises(ValueError, match=r"0-d tensor, got a tensor of shape \(4,\).*loss\.mean\(\)"):
        board.log(loss=torch.ones(4))
    with pytest.raises(TypeError, match="takes a number or a 0-d tensor, got str"):
        board.log(loss="0.5")
    with pytest.raises(TypeError, match="got bool"):
        board.log(loss=True)
    with pytest.raises(ValueError, match="steps_per_epoch must be a whole number"):
        Dashboard("off", steps_per_epoch=-1)
    with pytest.raises(TypeError, match="optimizer= takes the torch.optim optimizer"):
        Dashboard("off", optimizer=object())
    with ProgressBar("off") as board:
        board.log(loss=1.0)
        with pytest.raises(ValueError, match="steps count up from 1"):
            board.log(loss=1.0, step=1 - 1)
        with pytest.raises(TypeError, match=r"log_eval\(acc=...\) takes numbers"):
            board.log_eval(acc="high")
        with pytest.raises(ValueError, match="log_eval\\(\\) got no results"):
            board.log_eval()
    with pytest.raises(RuntimeError, match="after finish"):
        board.log_eval(acc=0.5)


def test_a_board_made_for_a_loop_refuses_a_model_run() -> None:
    net, opt = _same_net()
    with pytest.raises(ValueError, match="a Model run feeds its callbacks itself"):
        Model(net, nn.CrossEntropyLoss(), opt).train(1, batches(3), callbacks=[ProgressBar("off", epochs=1)])


def test_an_error_in_the_loop_shows_as_failed_and_propagates() -> None:
    with pytest.raises(ZeroDivisionError):
        with ProgressBar("off", epochs=1, steps_per_epoch=10) as board:
            board.log(loss=1.0)
            1 / 0
    assert board.view().status == "error"


def test_stop_training_is_exported_and_caught_by_the_block() -> None:
    with ProgressBar("off") as board:
        board.log(loss=1.0)
        raise StopTraining("the user's own stop")
    assert board.view().status == "finished"  # no Stop was requested: the loop just ended


def test_ctrl_c_stops_the_with_block_after_the_step() -> None:
    import os
    import signal

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    seen = []
    with ProgressBar("off", epochs=1, steps_per_epoch=50) as board:
        for step in range(50):
            seen.append(step)
            if step == 7:
                os.kill(os.getpid(), signal.SIGINT)  # the kernel's interrupt button sends the same
            board.log(loss=1.0)
    assert seen[-1] == 7
    assert board.view().status_text == "stopped by user at epoch 1, step 8 (Ctrl-C)"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


def test_an_evaluation_pass_without_results_adds_no_row() -> None:
    with ProgressBar("off", epochs=1, steps_per_epoch=20) as board:
        for step in range(20):
            board.log(loss=1.0)
            if step == 9:
                board.log_eval(loss=0.5)
            if step in (12, 13):
                board.eval_step()  # a pass that the next log() ends without results
    rows = board.view().rows
    assert [(row.step, row.values) for row in rows] == [(10, {"loss": 0.5})]
