"""The state model every renderer reads: plain Python, no IPython, no matplotlib.

One :class:`TrainingState` per run holds the counters, rates and ETAs, the loss series and the evaluation table.
The callbacks feed it at refresh ticks (never per step); renderers read an immutable :class:`View` (and
:class:`PlotData`) taken under its lock.  Every method takes the current time, so tests drive it with made-up times.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nbcallback.widgets.series import Buckets, Cursor, Points, finite_or_none
from nbcallback.widgets.words import Msg

__all__ = ["EvalRow", "PlotData", "TrainingState", "View", "STATUSES"]

#: Life cycle of a run, in order; the last four are final.
STATUSES = ("starting", "running", "finished", "stopped", "error", "interrupted")
FINAL_STATUSES = frozenset(STATUSES[2:])

#: A short run's smoothed loss averages over at most this share of its planned steps (1/25).
_SMOOTHING_SHARE = 25


@dataclass(frozen=True)
class EvalRow:
    """One evaluation (a table row): ``epoch``/``step`` are None for ``Model.eval``, ``seconds`` the pass's
    duration when measured, ``elapsed`` the run's time so far; ``partial``: a stop request cut the pass short."""

    epoch: int | None
    step: int | None
    values: Mapping[str, Any]
    seconds: float | None
    elapsed: float
    partial: bool = False


@dataclass(frozen=True)
class View:
    """An immutable picture of a run for the renderers.  The less obvious fields: ``kind`` is ``'train'`` (train,
    fit) or ``'eval'`` (``Model.eval``); ``phase`` is ``'eval'`` during fit's validation too; ``epochs_done`` leaves
    out a stopped, partial epoch; ``rate`` is smoothed training steps/s, ``eval_rate`` the pass's average steps/s;
    ``eta_total`` adds the predicted evaluations to ``eta_train`` (``eta_total_estimated``: none timed yet);
    ``rows`` are the last ones while live, else a head and tail with ``rows_omitted`` left out after index
    ``omitted_after``; ``display_seconds``: the display's time on the training thread."""

    kind: str
    status: str
    status_text: str
    phase: str
    epoch: int | None
    last_epoch: int | None
    epochs_done: int
    epochs: int
    step_in_epoch: int
    steps_per_epoch: int
    steps_done: int
    total_steps: int
    global_step: int
    eval_step: int
    eval_steps: int | None
    elapsed: float
    rate: float | None
    eval_rate: float | None
    samples_per_step: int | None
    eta_train: float | None
    eta_total: float | None
    eta_total_estimated: bool
    loss: float | None
    last_loss: float | None
    lr: float | None
    lr_changes: tuple[tuple[int, float], ...]
    columns: tuple[str, ...]
    rows: tuple[EvalRow, ...]
    rows_total: int
    rows_omitted: int
    omitted_after: int
    error: str | None
    display_seconds: float
    validates: bool = False

    @property
    def finished(self) -> bool:
        """True once the run has a final status."""
        return self.status in FINAL_STATUSES

    @property
    def samples_rate(self) -> float | None:
        """Training samples per second, when the batch size and rate are known."""
        if self.rate is None or not self.samples_per_step:
            return None
        return self.rate * self.samples_per_step


@dataclass(frozen=True)
class PlotData:
    """What the panels draw, for the final PNG: the planned ``x_range`` and ``epoch_marks`` (global steps) and
    ``series``: data key -> columns (``'loss'``: ``x``, ``lo``, ``hi``, ``y``; ``'eval:<metric>'``, ``'lr'``:
    ``x``, ``y``; None for a missing value)."""

    x_range: tuple[float, float]
    epoch_marks: tuple[float, ...]
    series: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    loss_positive: bool = True
    lr_changed: bool = False


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else None."""
    try:
        return None if isinstance(value, bool) else finite_or_none(float(value))
    except (TypeError, ValueError):
        return None


#: The View fields that TrainingState keeps under the same attribute names (read them; its methods write them).
_COPIED = ("kind", "status", "status_text", "phase", "epoch", "epochs_done", "epochs", "steps_per_epoch",
           "global_step", "eval_step", "eval_steps", "rate", "eval_rate", "samples_per_step", "loss", "last_loss",
           "lr", "error", "display_seconds", "validates")


class TrainingState:
    """Counters, rates, ETAs, loss series and the evaluation table of one run (thread-safe: one lock).  The
    attributes named like :class:`View` fields (``status``, ``epoch``, ``global_step``, ...) are for reading.

    Args:
        smoothing: the EMA factor of the smoothed loss (bias-corrected), at most: a run of fewer than 1,250
            planned steps averages over about a 25th of them instead.
        rate_smoothing: weight of the newest measurement in the rate EMA (tqdm's 0.3).
        max_points: the most points per line (buckets of the loss, evaluations, lr values).
        eval_cost_guess: before an evaluation has been timed, one evaluation step is assumed to cost this
            fraction of a training step (a forward pass is about a third of a training step).
    """

    def __init__(self, smoothing: float = 0.98, rate_smoothing: float = 0.3, max_points: int = 1000,
                 eval_cost_guess: float = 0.35) -> None:
        if not 0 <= smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing!r}")
        if not 0 < rate_smoothing <= 1:
            raise ValueError(f"rate_smoothing must be in (0, 1], got {rate_smoothing!r}")
        self.smoothing = float(smoothing)
        self.rate_smoothing = float(rate_smoothing)
        self.max_points = int(max_points)
        self.eval_cost_guess = float(eval_cost_guess)
        self._lock = threading.RLock()
        self.reset()  # (its series check max_points)

    def reset(self) -> None:
        """Forget everything (a new run)."""
        with self._lock:
            # what the run is and how it stands
            self.kind = "train"
            self.phase = "train"
            self.status = "starting"
            self.status_text = Msg("starting")
            self.error: str | None = None
            self.validates = False
            self._t_start: float | None = None
            self._t_end: float | None = None
            # the plan and the counters
            self.epochs = 0
            self.steps_per_epoch = 0
            self.epoch: int | None = None
            self.epochs_done = 0
            self._first_epoch: int | None = None
            self._epoch_open = False
            self._epoch_began_at = 0  # the global step when the current epoch began
            self._epochs_ended = 0
            self._epochs_validated = 0
            self.global_step = 0
            self._first_global = 0
            self.eval_step = 0
            self.eval_steps: int | None = None
            self._t_eval_start: float | None = None
            self._eval_cut = False  # a stop request cut the current validation pass short
            self._pass_seconds: float | None = None  # the last complete validation pass
            # speeds and values
            self.rate: float | None = None
            self._train_mark: tuple[float, int] | None = None  # (time, step) of the last rate measurement
            self.eval_rate: float | None = None
            self.samples_per_step: int | None = None
            self.loss: float | None = None
            self.last_loss: float | None = None
            self._avg = 0.0  # the loss EMA before bias correction
            self._avg_count = 0
            self._beta = self.smoothing
            self._loss_positive = True
            self.lr: float | None = None
            self.display_seconds = 0.0
            # series and table
            self._loss_series = Buckets(self.max_points)
            self._lr_series = Points(self.max_points)
            self._lr_changes: list[tuple[int, float]] = []
            self._evals: dict[str, Points] = {}
            self._rows: list[EvalRow] = []
            self._columns: list[str] = []

    def start(self, now: float, *, kind: str = "train", epochs: int = 1, steps_per_epoch: int = 0,
              first_global_step: int = 0, has_validation: bool = False, eval_steps: int | None = None,
              lr: float | None = None) -> None:
        """Begin a run of ``kind`` ``'train'`` (train, fit) or ``'eval'`` (``Model.eval``).

        Args:
            epochs, steps_per_epoch, first_global_step: ``cb_params.epoch_num``, ``batch_num``, ``cur_step_num``.
            has_validation, eval_steps: fit with a validation set (evaluations are predicted) of this many steps.
            lr: the learning rate of the first parameter group, when known.
        """
        if kind not in ("train", "eval"):
            raise ValueError(f"kind must be 'train' or 'eval', got {kind!r}")
        with self._lock:
            self.reset()
            self.kind = self.phase = kind
            self.status, self.status_text = "running", Msg("running" if kind == "train" else "evaluating")
            self._t_start = now
            self.epochs, self.steps_per_epoch = max(0, int(epochs)), max(0, int(steps_per_epoch))
            self._first_global = self.global_step = int(first_global_step)
            self.validates = bool(has_validation)
            self.eval_steps = int(eval_steps) if eval_steps else None
            planned = self.epochs * self.steps_per_epoch
            self._loss_series = Buckets(self.max_points, planned=planned)
            window = planned / _SMOOTHING_SHARE  # steps the average spans, at most
            if window > 1:
                self._beta = min(self.smoothing, 1 - 1 / window)
            self.lr = _finite(lr)
            if self.lr is not None and kind == "train":
                self._lr_series.add(self._first_global, self.lr)

    def begin_epoch(self, epoch: int, now: float, global_step: int | None = None) -> None:
        """A training epoch starts (``epoch``, ``global_step``: ``cb_params.cur_epoch_num``, ``cur_step_num``).

        A run's first epoch may start past its planned start: a callback resumed it (``BackupAndRestore``) after
        :meth:`start`.  The steps and whole epochs already trained then count as done.
        """
        with self._lock:
            if self._first_epoch is None:
                self.global_step = max(self.global_step, int(global_step or 0))
                resumed = (self.global_step - self._first_global) // self.steps_per_epoch if self.steps_per_epoch else 0
                self._first_epoch = int(epoch) - resumed
                self.epochs_done += resumed
            self.epoch = int(epoch)
            self._epoch_open = True
            self._epoch_began_at = self.global_step
            self.phase = "train"
            self._eval_cut = False
            self._train_mark = None  # the first step of an epoch includes the loader's start-up

    def record_steps(self, now: float, global_step: int, losses: Sequence[float] = (),
                     samples_per_step: int | None = None) -> None:
        """Training reached ``global_step``; ``losses`` are the raw losses of the last ``len(losses)`` steps;
        ``samples_per_step``: the batch size, for samples/s (the first one given is kept)."""
        with self._lock:
            if self.samples_per_step is None and samples_per_step:
                self.samples_per_step = int(samples_per_step)
            step = int(global_step)
            mark = self._train_mark
            if mark is None or (step > mark[1] and now > mark[0]):  # a phase's first mark includes its warm-up
                if mark is not None:
                    measured = (step - mark[1]) / (now - mark[0])
                    weight = self.rate_smoothing
                    self.rate = measured if self.rate is None else weight * measured + (1 - weight) * self.rate
                self._train_mark = (now, step)
            self.global_step = step
            beta = self._beta
            avg = self._avg  # the EMA before bias correction (a local: this loop runs once per step)
            count = self._avg_count
            smoothed = self.loss
            for x, value in enumerate(losses, start=step - len(losses) + 1):
                if math.isfinite(value):  # a NaN step shows as a gap; it must not poison the average
                    self._loss_positive = self._loss_positive and value > 0
                    count += 1
                    avg = beta * avg + (1 - beta) * value
                    smoothed = avg / (1 - beta**count)
                self._loss_series.add(x, value, smoothed)
            self._avg = avg
            self._avg_count = count
            self.loss = smoothed
            if losses:
                self.last_loss = float(losses[-1])

    def begin_eval(self, now: float, total: int | None) -> None:
        """An evaluation pass of ``total`` steps starts (fit's validation)."""
        with self._lock:
            self.phase = "eval"
            self.eval_step = 0
            if total:
                self.eval_steps = int(total)
            self._t_eval_start = now
            self._eval_cut = False

    def record_eval_steps(self, now: float, step: int) -> None:
        """The evaluation pass reached ``step`` (1-based within the pass); its rate is the pass's average."""
        with self._lock:
            self.eval_step = int(step)
            if self._t_eval_start is not None and now > self._t_eval_start and self.eval_step:
                self.eval_rate = self.eval_step / (now - self._t_eval_start)

    def end_eval(self, now: float, complete: bool = True) -> float | None:
        """The evaluation pass ended; returns its duration.  A pass stopped early (not ``complete``) does not
        predict the next ones, and the final picture keeps its eval phase and step."""
        with self._lock:
            seconds = None if self._t_eval_start is None else max(0.0, now - self._t_eval_start)
            if complete and seconds is not None and self.eval_step:
                self._pass_seconds = seconds
            if self.kind == "train":
                self._eval_cut = not complete
                if complete:
                    self.phase = "train"
            self._train_mark = None
            return seconds

    def add_eval_row(self, now: float, values: Mapping[str, Any], *, epoch: int | None, step: int | None,
                     seconds: float | None = None, partial: bool = False) -> EvalRow:
        """Record one evaluation's results (a table row and plot points).  When a ``'loss'`` metric equals fit's
        ``eval_loss``, both are the mean validation loss: ``eval_loss`` is left out (one column, one line)."""
        with self._lock:
            loss, eval_loss = _finite(values.get("loss")), _finite(values.get("eval_loss"))
            same = loss is not None and eval_loss is not None and math.isclose(loss, eval_loss, rel_tol=1e-5)
            clean = {str(name): value for name, value in values.items() if not (same and name == "eval_loss")}
            self._columns += [name for name in clean if name not in self._columns]
            row = EvalRow(epoch, step, clean, seconds, self._elapsed(now), partial)
            self._rows.append(row)
            x = float(step if step is not None else self.global_step)
            for name, value in clean.items():
                number = _finite(value)
                if number is not None:
                    self._evals.setdefault(name, Points(self.max_points)).add(x, number)
            return row

    def end_epoch(self, epoch: int, now: float, validated: bool) -> None:
        """A training epoch ended (after its validation, if any)."""
        with self._lock:
            if self.steps_per_epoch == 0 or self.step_in_epoch == self.steps_per_epoch:
                self.epochs_done += 1  # a stopped, partial epoch does not count as done
            self._epoch_open = False
            self._epochs_ended += 1
            self._epochs_validated += bool(validated)
            if not self._eval_cut:
                self.phase = "train"

    def set_lr(self, lr: float | None, *, changed_at: int | None = None) -> None:
        """The current learning rate; ``changed_at`` (a global step) records a change made through the controls.
        The lr line gets a point whenever the value differs from the last one."""
        with self._lock:
            value = self.lr = _finite(lr)
            if value is None:
                return
            if changed_at is not None:
                self._lr_changes.append((int(changed_at), value))
            if self._lr_series.last() != value:
                self._lr_series.add(changed_at if changed_at is not None else self.global_step, value)

    def note_display_cost(self, seconds: float) -> None:
        """Add time the display took on the training thread (its overhead)."""
        with self._lock:
            self.display_seconds += max(0.0, seconds)

    def finish(self, now: float, status: str, text: str | None = None, error: str | None = None) -> None:
        """End the run with a final ``status`` and its human ``text``."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"status must be one of {sorted(FINAL_STATUSES)}, got {status!r}")
        with self._lock:
            if self._t_start is None:
                self._t_start = now
            self.status, self.error, self._t_end = status, error, now
            self.status_text = text or (Msg(status) if status == "finished" else status)
            if self._t_eval_start is not None and self.phase == "eval" and self.kind == "train" and not self._eval_cut:
                self.phase = "train"

    # ------------------------------------------------------------------ reading

    @property
    def step_in_epoch(self) -> int:
        """1-based step within the current epoch (0 before its first step)."""
        if self._epoch_open and self.global_step == self._epoch_began_at:
            return 0
        if self.global_step > self._first_global and self.steps_per_epoch:
            return (self.global_step - 1) % self.steps_per_epoch + 1
        return 0

    def _elapsed(self, now: float) -> float:
        if self._t_start is None:
            return 0.0
        return max(0.0, (self._t_end if self._t_end is not None else now) - self._t_start)

    def _etas(self) -> tuple[float | None, float | None, bool]:
        """(training left, everything left, whether the evaluations' part is a guess), in seconds."""
        if self.kind == "eval":
            if self.eval_steps is None or not self.eval_rate:
                return None, None, False
            left = max(0, self.eval_steps - self.eval_step) / self.eval_rate
            return left, left, False
        left_steps = max(0, self.epochs * self.steps_per_epoch - (self.global_step - self._first_global))
        if left_steps and not self.rate:
            return None, None, False
        eta = left_steps / self.rate if left_steps else 0.0
        if not self.validates:
            return eta, eta, False
        pass_seconds = self._pass_seconds
        if pass_seconds is None:  # a guess from the training speed
            pass_seconds = self.eval_steps * self.eval_cost_guess / self.rate if self.eval_steps and self.rate else 0
        # Validations to come: the epochs left (this one too until its validation starts) times the share of the
        # ended epochs that were validated (fit's valid_frequency is not in cb_params).
        if self.epoch is None:
            epochs_left = self.epochs
        else:
            last = (self._first_epoch or 1) + self.epochs - 1
            epochs_left = last - self.epoch + (self._epoch_open and self.phase == "train")
        share = self._epochs_validated / self._epochs_ended if self._epochs_ended else 1.0
        extra = max(0, epochs_left) * share * pass_seconds
        if self.phase == "eval" and self.eval_steps:
            left = max(0, self.eval_steps - self.eval_step)
            extra += left / self.eval_rate if self.eval_rate else pass_seconds * left / self.eval_steps
        return eta, eta + extra, self._pass_seconds is None

    def view(self, now: float, *, live_rows: int | None = 10, max_rows: int | None = None) -> View:
        """An immutable picture of the run at ``now``.

        Args:
            live_rows: keep only the last this-many table rows (the live view); None keeps all rows.
            max_rows: with ``live_rows=None``, at most this many rows: a tenth from the start, the rest from the end.
        """
        with self._lock:
            rows = self._rows
            omitted, omitted_after = 0, len(rows)
            if live_rows is not None:
                rows, omitted_after = rows[-live_rows:] if live_rows > 0 else [], 0
            elif max_rows is not None and len(rows) > max_rows:
                head = max(1, max_rows // 10)
                tail = max_rows - head
                omitted, omitted_after = len(rows) - head - tail, head
                rows = rows[:head] + (rows[-tail:] if tail else [])
            eta_train, eta_total, estimated = self._etas()
            return View(
                **{name: getattr(self, name) for name in _COPIED},
                last_epoch=None if self._first_epoch is None else self._first_epoch + self.epochs - 1,
                step_in_epoch=self.step_in_epoch,
                steps_done=self.global_step - self._first_global,
                total_steps=self.epochs * self.steps_per_epoch,
                elapsed=self._elapsed(now),
                eta_train=eta_train,
                eta_total=eta_total,
                eta_total_estimated=estimated,
                lr_changes=tuple(self._lr_changes),
                columns=tuple(self._columns),
                rows=tuple(rows),
                rows_total=len(self._rows),
                rows_omitted=omitted,
                omitted_after=omitted_after,
            )

    # ------------------------------------------------------------------ plot data

    def _frame(self) -> dict[str, Any]:
        """The planned x range and epoch marks (global steps), and the facts that choose the panels."""
        spe, first, planned = self.steps_per_epoch, self._first_global, self.epochs * self.steps_per_epoch
        end = max(first + planned if planned > 0 else first + 1, self.global_step)
        return {"x_range": [float(first), float(end)],
                "epoch_marks": [float(first + k * spe) for k in range(1, self.epochs)] if spe else [],
                "metrics": list(self._evals), "loss_positive": self._loss_positive,
                "lr_changed": len(self._lr_series) > 1}

    def _series(self) -> dict[str, Buckets | Points]:
        found = {"loss": self._loss_series, **{"eval:" + name: p for name, p in self._evals.items()}}
        return {key: series for key, series in {**found, "lr": self._lr_series}.items() if len(series)}

    def _lr_tail(self) -> dict[str, float] | None:
        """The lr line runs on to the current step."""
        if not len(self._lr_series) or self.lr is None or self.global_step <= self._lr_series.x[-1]:
            return None
        return {"x": float(self.global_step), "y": self.lr}

    def plot_data(self) -> PlotData:
        """Every point of every series (at most ``max_points`` each), for the final PNG."""
        with self._lock:
            frame = self._frame()
            series = {key: s.points() for key, s in self._series().items()}
            tail = self._lr_tail()
            if tail is not None:
                series["lr"] = {"x": series["lr"]["x"] + [tail["x"]], "y": series["lr"]["y"] + [tail["y"]]}
            return PlotData(tuple(frame["x_range"]), tuple(frame["epoch_marks"]), series, tuple(frame["metrics"]),
                            frame["loss_positive"], frame["lr_changed"])

    def plot_delta(self, cursors: dict[str, Cursor] | None) -> tuple[dict[str, Any], dict[str, Cursor]]:
        """What a reader holding ``cursors`` (None: nothing) lacks: ``{"x_range", "epoch_marks", "metrics",
        "loss_positive", "lr_changed", "series": {key: delta}}`` (changed series only), and its new cursors."""
        with self._lock:
            held = dict(cursors or {})
            deltas: dict[str, Any] = {}
            for key, series in self._series().items():
                delta, held[key] = series.delta(held.get(key))
                if delta is not None:
                    deltas[key] = delta
            lr_tail = self._lr_tail()
            if lr_tail is not None:
                empty = {"gen": self._lr_series.gen, "start": len(self._lr_series), "x": [], "y": []}
                deltas.setdefault("lr", empty)["tail"] = lr_tail
            return {**self._frame(), "series": deltas}, held

    def loss_points(self) -> int:
        """How many raw loss values were recorded."""
        with self._lock:
            return self._loss_series.count
