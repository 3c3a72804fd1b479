"""The callbacks in-process: hot path, controls, SIGINT, errors, display modes, text renderers."""
from __future__ import annotations

import io
import math
import pickle
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nbcallback.train import Callback, Model
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar, resolve_display
from tests.widgets.conftest import FakeClock
from nbcallback.widgets.controls import apply_learning_rate
from tests.widgets.conftest import AtStep, Ticker, batches, new_model


class TTYString(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------------- display selection


def test_display_resolution_order() -> None:
    env: dict[str, str] = {}
    assert resolve_display("auto", environ=env, notebook=False, stream=io.StringIO()) == "log"
    assert resolve_display("auto", environ=env, notebook=False, stream=TTYString()) == "tty"
    assert resolve_display("auto", environ=env, notebook=True) == "widget"
    assert resolve_display("auto", environ={"DATABRICKS_RUNTIME_VERSION": "10.4"}, notebook=True) == "static"
    assert resolve_display("auto", environ={"NBCALLBACK_DISPLAY": "final"}, notebook=True) == "final"
    assert resolve_display("auto", environ={"NBCALLBACK_DISPLAY": "off"}, notebook=True) == "off"
    # an explicit argument wins over the environment
    assert resolve_display("static", environ={"NBCALLBACK_DISPLAY": "off"}, notebook=True) == "static"
    # notebook renderers outside a kernel fall back to text (no HTML reprs in scripts)
    assert resolve_display("widget", environ=env, notebook=False, stream=io.StringIO()) == "log"
    # only rank 0 displays
    assert resolve_display("widget", rank=1, environ=env, notebook=True) == "off"
    with pytest.raises(ValueError):
        resolve_display("fancy")
    with pytest.raises(ValueError):
        resolve_display("auto", environ={"NBCALLBACK_DISPLAY": "fancy"}, notebook=True)
    with pytest.raises(ValueError):
        ProgressBar(display="fancy")


def test_bad_arguments_are_refused_where_the_callback_is_made() -> None:
    # log_interval is only read where log lines are written (CI, a pipe): it used to fail there, at the run's start
    with pytest.raises(ValueError, match=r"log_interval must be > 0 \(seconds between log lines\), got 0"):
        ProgressBar(log_interval=0)
    # a string is a sequence of one-letter "metric names": one empty panel per letter
    with pytest.raises(TypeError, match=r"groups\['acc'\] must be a list of metric names, e\.g\. groups="):
        LiveLossPlot(groups={"acc": "accuracy"})
    with pytest.raises(TypeError, match=r"got \[1\]"):
        Dashboard(groups={"acc": [1]})
    assert LiveLossPlot(groups={"quality": ("accuracy", "precision")}).groups == {"quality": ("accuracy", "precision")}


def test_the_same_callback_twice_in_one_run_is_refused() -> None:
    # Its hooks would run twice per event: "4/2 epochs" and every table row twice.
    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    message = r"callbacks holds the same ProgressBar twice \(its hooks would count every step twice\); pass it once"
    with pytest.raises(ValueError, match=message):
        model.fit(2, batches(20), batches(5, seed=1), callbacks=[bar, bar])
    with pytest.raises(ValueError, match=message):
        model.eval(batches(5), callbacks=[bar, bar])
    assert out.getvalue() == ""  # refused before anything was shown
    model.fit(2, batches(20), batches(5, seed=1), callbacks=[bar])  # once is fine, the same object afterwards too
    view = bar.view()
    assert (view.status, view.epochs_done, view.rows_total) == ("finished", 2, 2)


def test_import_is_light() -> None:
    code = (
        "import sys, nbcallback.widgets as w\n"
        "from nbcallback.widgets import ProgressBar, LiveLossPlot, Dashboard, run_in_background\n"
        "bad = [m for m in ('matplotlib', 'ipywidgets', 'IPython') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------------- hot path


def test_clock_is_read_a_few_times_per_refresh_not_per_step() -> None:
    clock = FakeClock()
    model, _ = new_model()
    bar = ProgressBar(display="text", file=TTYString(), clock=clock)
    steps = 2000
    model.train(1, batches(steps), callbacks=[Ticker(clock, 0.002), bar])  # 2 ms per step = 4 s
    view = bar.view()
    assert view.steps_done == steps and view.status == "finished"
    # About three checks per refresh (at most 0.15 s apart, at least 50 ms) over 4 s, plus a few per hook; far
    # fewer than 2000 steps.
    assert clock.reads < 4 * 8 + 40, clock.reads
    assert 25 <= bar._sampler.stride <= 75  # steps of 2 ms: checks between 50 ms and 0.15 s apart
    assert 10 <= bar._scheduler.refreshes <= 4 / 0.25 + 1  # one refresh per 0.25 s at most, and steadily


class CountingTensor(torch.Tensor):
    """A tensor that passes for a device tensor (``is_cpu`` is False) and counts
    the calls that would synchronise a GPU."""

    reads = 0

    @property
    def is_cpu(self) -> bool:
        return False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__float__, torch.Tensor.cpu):
            CountingTensor.reads += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def test_recorded_outputs_become_the_losses_mindspore_would_print() -> None:
    """First element of a tuple, mean of a multi-element tensor, NaN for what is not a number;
    the same values whether the tensors are read one by one (CPU) or stacked (device)."""
    from nbcallback.widgets.sampling import losses_to_floats

    def outputs(kind=torch.Tensor):
        return [torch.tensor(1.5).as_subclass(kind), (torch.tensor([2.0, 4.0]).as_subclass(kind), 1), 3, "n/a",
                torch.tensor([[7.0]]).as_subclass(kind), torch.tensor(2.5, dtype=torch.bfloat16).as_subclass(kind)]

    expected = [1.5, 3.0, 3.0, math.nan, 7.0, 2.5]
    for kind in (torch.Tensor, CountingTensor):
        got = losses_to_floats(outputs(kind))
        assert [round(v, 6) for v in got if v == v] == [v for v in expected if v == v]
        assert math.isnan(got[3]) and all(type(v) is float for v in got)
    # Values already on the CPU keep their precision (not rounded through float32 on the way).
    assert losses_to_floats([(torch.tensor(0.123456789, dtype=torch.float64), 1), 0.1]) == [0.123456789, 0.1]


def test_losses_are_read_in_batches_at_refresh_ticks_only() -> None:
    clock = FakeClock()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def loss_fn(logits, labels):
        return F.cross_entropy(logits, labels).as_subclass(CountingTensor)

    model = Model(net, loss_fn, torch.optim.SGD(net.parameters(), 0.05))
    bar = LiveLossPlot(display="text", file=io.StringIO(), clock=clock)
    CountingTensor.reads = 0
    steps = 1000
    model.train(1, batches(steps), callbacks=[Ticker(clock, 0.002), bar])
    ticks = bar._scheduler.refreshes + 3  # + the forced ones at epoch end, train end and the final record
    print(f"device reads: {CountingTensor.reads} for {steps} steps ({bar._scheduler.refreshes} refreshes)")
    assert CountingTensor.reads <= ticks + 2
    assert CountingTensor.reads < steps / 20
    assert bar.state.loss_points() == steps  # yet every step's loss is in the plot data


# ---------------------------------------------------------------------- controls and interrupts


def test_sigint_stops_gracefully_at_the_step_boundary() -> None:
    model, opt = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    model.fit(3, batches(60), batches(5, seed=1),
              callbacks=[AtStep(25, lambda rc: signal.raise_signal(signal.SIGINT)), bar])
    view = bar.view()
    assert view.status == "stopped"
    assert view.status_text.startswith("stopped by user at epoch 1, step 25")
    assert view.status_text.endswith("(Ctrl-C)")  # in a script or terminal; "(kernel interrupt)" in a notebook
    assert "stopped by user at epoch 1, step 25" in out.getvalue()
    assert view.steps_done == 25
    # the handler is gone and the model and optimizer are usable
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    before = [p.detach().clone() for p in model.predict_network.parameters()]
    model.train(1, batches(3))
    after = list(model.predict_network.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before))
    assert all(torch.isfinite(p).all() for p in after)


def test_second_sigint_raises_and_marks_the_run_interrupted() -> None:
    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)

    def twice(run_context):
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        model.train(2, batches(40), callbacks=[AtStep(10, twice), bar])
    assert bar.view().status == "interrupted"
    assert "interrupted (KeyboardInterrupt) at epoch 1, step 10" in out.getvalue()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_request_stop_from_another_thread() -> None:
    model, _ = new_model()
    bar = ProgressBar(display="off")
    started = threading.Event()

    class Slow(Callback):
        def on_train_step_end(self, run_context):
            started.set()
            threading.Event().wait(0.002)

    timer = threading.Thread(target=lambda: (started.wait(5), bar.request_stop()))
    timer.start()
    model.train(50, batches(40), callbacks=[Slow(), bar])
    timer.join()
    view = bar.view()
    assert view.status == "stopped" and "request_stop()" in view.status_text
    assert view.steps_done < 50 * 40


def test_stop_during_validation_ends_the_run_and_the_snapshot_shows_the_eval_step() -> None:
    model, _ = new_model()
    dash = Dashboard(display="off")

    class StopAtEvalStep(Callback):
        def __init__(self) -> None:
            self.evals = 0

        def on_eval_begin(self, run_context):
            self.evals += 1

        def on_eval_step_end(self, run_context):
            if self.evals == 2 and run_context.original_args().cur_step_num == 7:
                dash.request_stop("user")

    model.fit(5, batches(30), batches(12, seed=1), callbacks=[StopAtEvalStep(), dash])
    view = dash.view()
    assert view.status == "stopped"
    assert "epoch 2" in view.status_text and "eval step 7" in view.status_text, view.status_text
    assert (view.phase, view.eval_step, view.eval_steps) == ("eval", 7, 12)
    assert view.epochs_done == 2 and view.steps_done == 60
    assert [row.partial for row in view.rows] == [False, True]


def test_learning_rate_applies_at_the_next_step_to_every_group() -> None:
    model, opt = new_model(lr=0.1, two_groups=True)
    dash = Dashboard(display="off")
    seen: dict[int, list[float]] = {}

    class Observe(Callback):
        def on_train_step_begin(self, run_context):
            seen[run_context.original_args().cur_step_num] = [g["lr"] for g in opt.param_groups]

    model.train(1, batches(20), callbacks=[Observe(), AtStep(10, lambda rc: dash.set_learning_rate(0.02)), dash])
    assert seen[10] == pytest.approx([0.1, 0.01])
    assert seen[11] == pytest.approx([0.02, 0.002])  # the group ratio is kept
    assert dash.view().lr_changes == ((10, pytest.approx(0.02)),)
    with pytest.raises(ValueError):
        dash.set_learning_rate(-1)
    with pytest.raises(ValueError):
        apply_learning_rate(opt, math.nan)


def test_errors_end_the_display_and_propagate() -> None:
    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)

    def boom(run_context):
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        model.train(1, batches(30), callbacks=[AtStep(12, boom), bar])
    text = out.getvalue()
    assert "failed with ValueError at epoch 1, step 12" in text
    assert "ValueError: bad batch" in text
    assert bar.view().status == "error"


def test_non_zero_rank_shows_nothing() -> None:
    model, _ = new_model()
    out = io.StringIO()

    class Rank1(Callback):
        def on_train_begin(self, run_context):
            run_context.original_args()["rank_id"] = 1

    bar = ProgressBar(display="text", file=out)
    model.train(1, batches(10), callbacks=[Rank1(), bar])
    assert out.getvalue() == ""
    assert bar.mode == "off" and bar.view().status == "finished"


def test_another_callbacks_request_stop_is_reported() -> None:
    model, _ = new_model()
    bar = ProgressBar(display="off")
    model.train(3, batches(10), callbacks=[AtStep(7, lambda rc: rc.request_stop()), bar])
    assert bar.view().status_text == "stopped at epoch 1, step 7 (a callback called request_stop())"


# ---------------------------------------------------------------------- text output


def test_log_mode_lines_in_fit_and_eval() -> None:
    clock = FakeClock()
    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out, log_interval=0.5, clock=clock)
    model.fit(2, batches(200), batches(10, seed=1), callbacks=[Ticker(clock, 0.005), bar])
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text and "<div" not in text and "<progress" not in text
    lines = text.splitlines()
    assert lines[0] == "training: 2 epochs x 200 steps with validation"
    assert any(line.startswith("epoch 1/2 · loss ") and "accuracy" in line for line in lines)
    assert any(line.startswith("[00:0") and "it/s" in line for line in lines)
    assert "Training finished: 2/2 epochs, 400/400 steps" in text
    assert len(lines) < 20  # a few lines per epoch, not one per refresh
    out2 = io.StringIO()
    metrics = model.eval(batches(10, seed=1), callbacks=[ProgressBar(display="text", file=out2)])
    assert "Evaluation finished: 10/10 steps" in out2.getvalue()
    assert f"{metrics['accuracy']:.4g}" in out2.getvalue()


def test_tty_mode_rewrites_one_line() -> None:
    clock = FakeClock()
    model, _ = new_model()
    out = TTYString()
    bar = ProgressBar(display="text", file=out, clock=clock)
    model.train(2, batches(100), callbacks=[Ticker(clock, 0.01), bar])
    text = out.getvalue()
    assert text.count("\r") > 4  # the live line was rewritten
    # What the terminal shows once done: the part after the last \r of each line.
    screen = [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n") if line.strip()]
    assert screen[0].startswith("epoch 1/2 · loss")
    assert screen[1].startswith("epoch 2/2 · loss")
    assert screen[2].startswith("Training finished: 2/2 epochs, 200/200 steps")
    assert len(screen) == 3


class Terminal:
    """stdout and stderr of one terminal: both TTYs, written in order into one screen."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.stdout, self.stderr = self._stream(), self._stream()

    def _stream(self) -> io.TextIOBase:
        chunks = self.chunks

        class Stream(io.TextIOBase):
            def isatty(self) -> bool:
                return True

            def write(self, text: str) -> int:
                chunks.append(text)
                return len(text)

        return Stream()

    def screen(self) -> list[str]:
        """The lines the terminal shows: a \\r goes back to the line's start, and what follows overwrites it."""
        lines: list[str] = []
        line: list[str] = []
        column = 0
        for char in "".join(self.chunks):
            if char == "\n":
                lines.append("".join(line).rstrip())
                line, column = [], 0
            elif char == "\r":
                column = 0
            else:
                line[column:column + 1] = [char]
                column += 1
        return lines + ["".join(line).rstrip()]


def test_tty_line_is_cleared_before_other_callbacks_print(monkeypatch: pytest.MonkeyPatch) -> None:
    # LossMonitor's lines and warnings used to land on the end of the progress line: "... loss 0.706epoch: 1 step: 30"
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal.stdout)
    monkeypatch.setattr(sys, "stderr", terminal.stderr)
    clock = FakeClock()

    class Talk(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            step = run_context.original_args().cur_step_num
            if step == 75:
                sys.stdout.writelines([f"step {step} ", "says hello\n"])
            elif step % 25 == 0:
                print(f"step {step} says hello")
            if step == 60:  # as Python's warnings print themselves (pytest records them instead)
                print("talk.py:1: UserWarning: a warning at step 60", file=sys.stderr)

    model, _ = new_model()
    bar = ProgressBar(clock=clock)  # file=None: the terminal's own stdout
    model.train(2, batches(50), callbacks=[Ticker(clock, 0.05), bar, Talk()])
    assert sys.stdout is terminal.stdout and sys.stderr is terminal.stderr  # given back
    screen = [line for line in terminal.screen() if line]
    assert [line for line in screen if "hello" in line] == [f"step {n} says hello" for n in (25, 50, 75, 100)]
    assert "talk.py:1: UserWarning: a warning at step 60" in screen
    assert screen[-1].startswith("Training finished: 2/2 epochs, 100/100 steps")
    assert "".join(terminal.chunks).count("\r") > 8  # the line was drawn (and cleared) while training

    # A stream given with file= is left alone, and so are both after a run that fails.
    bar = ProgressBar(file=terminal.stdout, clock=clock)
    with pytest.raises(ValueError, match="boom"):
        model.train(1, batches(50), callbacks=[Ticker(clock, 0.05), bar, AtStep(30, _raise_boom)])
    assert sys.stdout is terminal.stdout and sys.stderr is terminal.stderr


def _raise_boom(run_context: Any) -> None:
    raise ValueError("boom")


def test_a_second_progress_callback_does_not_repeat_the_lines_in_a_log() -> None:
    # ProgressBar() + Dashboard() (which shows progress too) printed every epoch line, summary and table twice.
    model, _ = new_model()
    out = io.StringIO()
    bar, dash = ProgressBar(display="text", file=out), Dashboard(display="text", file=out)
    model.fit(2, batches(20), batches(5, seed=1), callbacks=[bar, dash])
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines if " · loss " in line] == ["epoch 1/2", "epoch 2/2"]
    assert sum(line.startswith("Training finished: 2/2 epochs") for line in lines) == 1
    assert sum(line.split() == ["epoch", "step", "accuracy", "eval_loss", "time"] for line in lines) == 1
    assert lines.count("loss plot: not shown in text mode (pass save_path=... to keep the PNG)") == 1
    assert dash.view().status == "finished"  # its state is kept all the same
    model.fit(1, batches(20), callbacks=[dash])  # alone, it prints its lines
    assert out.getvalue().splitlines()[-1].startswith("Training finished: 1/1 epochs")


def test_callbacks_pickle_without_their_run() -> None:
    model, _ = new_model()
    bar = ProgressBar(display="off")
    model.train(1, batches(5), callbacks=[bar])
    clone = pickle.loads(pickle.dumps(bar))
    assert isinstance(clone, ProgressBar) and clone.settings.display == "off"
    model.train(1, batches(5), callbacks=[clone])
    assert clone.view().status == "finished"


@pytest.mark.parametrize("factory", [ProgressBar, LiveLossPlot, Dashboard])
def test_an_argument_the_callback_does_not_take_is_a_type_error_naming_it(factory) -> None:
    for name in ("plot_intervall", "dpi", "width"):  # a typo; arguments of the early PNG design, never released
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
            factory(display="off", **{name: 2})


def test_a_resumed_run_counts_what_was_trained_before_it() -> None:
    """BackupAndRestore resumes a fit in on_train_begin (here: epoch 2, 10 of its 40 steps done, 50 in all):
    the display keeps the planned epochs (2/3, not 2/4) and counts the epoch trained before as done."""

    class Resume(Callback):
        def on_train_begin(self, run_context) -> None:
            run_context.resume_at(1, step_in_epoch=10, cur_step_num=50)

    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    model.fit(3, batches(40), None, callbacks=[Resume(), bar])
    view = bar.view()
    assert (view.epoch, view.last_epoch, view.epochs_done, view.epochs) == (3, 3, 3, 3)
    assert (view.steps_done, view.total_steps) == (120, 120)
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines if line.startswith("epoch ")] == ["epoch 2/3", "epoch 3/3"]
    assert "3/3 epochs, 120/120 steps" in out.getvalue()


def test_a_stop_between_two_epochs_names_the_step_where_the_run_stopped() -> None:
    """Requested after epoch 1 ended, the stop takes effect at the end of epoch 2's first step (the loop runs it
    anyway): the status says epoch 2, step 1, as the bar does, not epoch 2 with epoch 1's last step number."""

    class StopAfterEpoch1(Callback):
        def __init__(self, bar: ProgressBar) -> None:
            self.bar = bar

        def on_train_epoch_end(self, run_context) -> None:
            if run_context.original_args().cur_epoch_num == 1:
                self.bar.request_stop()

    model, _ = new_model()
    bar = ProgressBar(display="text", file=io.StringIO())
    model.fit(3, batches(20), batches(5, seed=1), callbacks=[bar, StopAfterEpoch1(bar)])
    view = bar.view()
    assert (view.status, view.epoch, view.step_in_epoch, view.steps_done) == ("stopped", 2, 1, 21)
    assert view.status_text == "stopped by user at epoch 2, step 1 (request_stop())"
