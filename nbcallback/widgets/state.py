"""The state model every renderer reads: plain Python, no IPython, no matplotlib.

One :class:`TrainingState` per run holds the counters, rates and ETAs, the loss series and the evaluation table.
The callbacks feed it at refresh ticks (never per step); renderers read an immutable :class:`View` (and
:class:`PlotData`) taken under its lock.  Every method takes the current time, so tests drive it with made-up times.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, TypeVar

from nbcallback.widgets.series import Buckets, Cursor, Points, finite_or_none
from nbcallback.widgets.words import Msg

__all__ = ["EvalRow", "PlotData", "TimeFacts", "TimeSegment", "TrainingState", "View", "STATUSES", "SERIES"]

_T = TypeVar("_T")

#: Life cycle of a run, in order; the last four are final.
STATUSES = ("starting", "running", "finished", "stopped", "error", "interrupted")
FINAL_STATUSES = frozenset(STATUSES[2:])

#: The series a panel's :class:`~nbcallback.widgets.panels.Line` may name besides ``'eval:<metric>'``: each is
#: kept in :class:`History` and listed by :meth:`TrainingState._series`.
SERIES = ("loss", "lr")

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
class TimeSegment:
    """One part of the "where the time goes" bar: ``key`` (``'step'``, ``'validation'``, ``'eval'``,
    ``'callback'``, ``'other'`` or ``'loop'``), its ``label`` as shown, its ``seconds`` and ``share`` of the wall
    time, and its colour ``color`` (a slot of :data:`nbcallback.widgets.panels.TIME_COLORS`)."""

    key: str
    label: str
    seconds: float
    share: float
    color: str


@dataclass(frozen=True)
class TimeFacts:
    """Where the run's time went so far, as a :class:`~nbcallback.train.CallbackProfiler` in the same run measured
    it (a :class:`View` group; None without one): the ``segments`` in the bar's order and the ``wall_s`` they add
    up to."""

    wall_s: float
    segments: tuple[TimeSegment, ...]


@dataclass(frozen=True)
class View:
    """An immutable picture of a run for the renderers.

    What the run is: ``kind`` is ``'train'`` (train, fit) or ``'eval'`` (``Model.eval``); ``status`` and
    ``status_text``; ``phase`` is ``'eval'`` during fit's validation too; ``error``; ``validates`` (fit with a
    validation set).  Where it is: ``epoch`` (``last_epoch``: the planned last one), ``epochs_done`` (a stopped,
    partial epoch left out) of ``epochs``, ``step_in_epoch`` of ``steps_per_epoch``, ``steps_done`` of
    ``total_steps``, ``global_step``, ``eval_step`` of ``eval_steps``.  Times: ``elapsed``; ``rate`` the smoothed
    training steps/s, ``eval_rate`` the pass's average steps/s; ``samples_per_step``; ``eta_train`` and
    ``eta_total`` (adds the predicted evaluations; ``eta_total_estimated``: none timed yet); ``display_seconds``,
    the display's time on the training thread.  Values: the smoothed ``loss``, ``last_loss``, ``lr`` and its
    ``lr_changes``.  The table: ``columns``, ``rows`` (the last ones while live, else a head and tail with
    ``rows_omitted`` left out after index ``omitted_after``) of ``rows_total``.  ``time``: where the time goes
    (:class:`TimeFacts`, only for a Dashboard beside a ``CallbackProfiler``, else None)."""

    kind: str
    status: str
    status_text: str
    phase: str
    error: str | None
    validates: bool
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
    display_seconds: float
    loss: float | None
    last_loss: float | None
    lr: float | None
    lr_changes: tuple[tuple[int, float], ...]
    columns: tuple[str, ...]
    rows: tuple[EvalRow, ...]
    rows_total: int
    rows_omitted: int
    omitted_after: int
    time: TimeFacts | None = None

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


@dataclass
class RunStatus:
    """What the run is and how it stands."""

    kind: str = "train"
    phase: str = "train"
    status: str = "starting"
    status_text: Any = field(default_factory=lambda: Msg("starting"))
    error: str | None = None
    validates: bool = False  # fit with a validation set
    t_start: float | None = None
    t_end: float | None = None


@dataclass
class Progress:
    """The plan (``epochs``, ``steps_per_epoch``, ``eval_steps``) and the counters."""

    epochs: int = 0
    steps_per_epoch: int = 0
    epoch: int | None = None
    epochs_done: int = 0
    first_epoch: int | None = None
    epoch_open: bool = False
    epoch_began_at: int = 0  # the global step when the current epoch began
    epochs_ended: int = 0
    epochs_validated: int = 0
    global_step: int = 0
    first_global: int = 0
    eval_step: int = 0
    eval_steps: int | None = None

    @property
    def step_in_epoch(self) -> int:
        """1-based step within the current epoch (0 before its first step)."""
        if self.epoch_open and self.global_step == self.epoch_began_at:
            return 0
        if self.global_step > self.first_global and self.steps_per_epoch:
            return (self.global_step - 1) % self.steps_per_epoch + 1
        return 0


@dataclass
class Timing:
    """Speeds and the times they are measured from."""

    rate: float | None = None  # smoothed training steps/s
    train_mark: tuple[float, int] | None = None  # (time, step) of the last rate measurement
    eval_rate: float | None = None
    samples_per_step: int | None = None
    t_eval_start: float | None = None
    eval_cut: bool = False  # a stop request cut the current validation pass short
    pass_seconds: float | None = None  # the last complete validation pass
    display_seconds: float = 0.0  # the display's time on the training thread


@dataclass
class LossAverage:
    """The smoothed loss: an EMA (``avg`` before bias correction, over ``count`` finite values) with factor
    ``beta``; ``last`` the last step's raw loss; ``positive``: every finite loss so far was > 0."""

    loss: float | None = None
    last: float | None = None
    avg: float = 0.0
    count: int = 0
    beta: float = 0.98
    positive: bool = True


@dataclass
class History:
    """The series and the evaluation table: the loss buckets, the lr points (and the changes made through the
    controls), one series per metric, the table's rows and columns, and the current learning rate."""

    loss: Buckets
    lr_series: Points
    lr: float | None = None
    lr_changes: list[tuple[int, float]] = field(default_factory=list)
    evals: dict[str, Points] = field(default_factory=dict)
    rows: list[EvalRow] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)


class TrainingState:
    """Counters, rates, ETAs, loss series and the evaluation table of one run (thread-safe: one lock), kept in
    small groups: ``run`` (:class:`RunStatus`), ``progress`` (:class:`Progress`), ``timing`` (:class:`Timing`),
    ``losses`` (:class:`LossAverage`) and ``history`` (:class:`History`).  Read them; its methods write them.
    The most read values have properties (``kind``, ``epoch``, ``global_step``, ``step_in_epoch`` ...).

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
            self.run = RunStatus()
            self.progress = Progress()
            self.timing = Timing()
            self.losses = LossAverage(beta=self.smoothing)
            self.history = History(Buckets(self.max_points), Points(self.max_points))
            self.time: TimeFacts | None = None

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
            self.run.kind = self.run.phase = kind
            self.run.status, self.run.status_text = "running", Msg("running" if kind == "train" else "evaluating")
            self.run.t_start = now
            self.progress.epochs, self.progress.steps_per_epoch = max(0, int(epochs)), max(0, int(steps_per_epoch))
            self.progress.first_global = self.progress.global_step = int(first_global_step)
            self.run.validates = bool(has_validation)
            self.progress.eval_steps = int(eval_steps) if eval_steps else None
            planned = self.progress.epochs * self.progress.steps_per_epoch
            self.history.loss = Buckets(self.max_points, planned=planned)
            window = planned / _SMOOTHING_SHARE  # steps the average spans, at most
            if window > 1:
                self.losses.beta = min(self.smoothing, 1 - 1 / window)
            self.history.lr = _finite(lr)
            if self.history.lr is not None and kind == "train":
                self.history.lr_series.add(self.progress.first_global, self.history.lr)

    def begin_epoch(self, epoch: int, now: float, global_step: int | None = None) -> None:
        """A training epoch starts (``epoch``, ``global_step``: ``cb_params.cur_epoch_num``, ``cur_step_num``).

        A run's first epoch may start past its planned start: a callback resumed it (``BackupAndRestore``) after
        :meth:`start`.  The steps and whole epochs already trained then count as done.
        """
        with self._lock:
            if self.progress.first_epoch is None:
                self.progress.global_step = max(self.progress.global_step, int(global_step or 0))
                progress = self.progress
                trained = progress.global_step - progress.first_global
                resumed = trained // progress.steps_per_epoch if progress.steps_per_epoch else 0
                self.progress.first_epoch = int(epoch) - resumed
                self.progress.epochs_done += resumed
            self.progress.epoch = int(epoch)
            self.progress.epoch_open = True
            self.progress.epoch_began_at = self.progress.global_step
            self.run.phase = "train"
            self.timing.eval_cut = False
            self.timing.train_mark = None  # the first step of an epoch includes the loader's start-up

    def record_steps(self, now: float, global_step: int, losses: Sequence[float] = (),
                     samples_per_step: int | None = None) -> None:
        """Training reached ``global_step``; ``losses`` are the raw losses of the last ``len(losses)`` steps;
        ``samples_per_step``: the batch size, for samples/s (the first one given is kept)."""
        with self._lock:
            if self.timing.samples_per_step is None and samples_per_step:
                self.timing.samples_per_step = int(samples_per_step)
            step = int(global_step)
            mark = self.timing.train_mark
            if mark is None or (step > mark[1] and now > mark[0]):  # a phase's first mark includes its warm-up
                if mark is not None:
                    measured = (step - mark[1]) / (now - mark[0])
                    weight = self.rate_smoothing
                    old = self.timing.rate
                    self.timing.rate = measured if old is None else weight * measured + (1 - weight) * old
                self.timing.train_mark = (now, step)
            self.progress.global_step = step
            beta = self.losses.beta
            avg = self.losses.avg  # the EMA before bias correction (a local: this loop runs once per step)
            count = self.losses.count
            smoothed = self.losses.loss
            for x, value in enumerate(losses, start=step - len(losses) + 1):
                if math.isfinite(value):  # a NaN step shows as a gap; it must not poison the average
                    self.losses.positive = self.losses.positive and value > 0
                    count += 1
                    avg = beta * avg + (1 - beta) * value
                    smoothed = avg / (1 - beta**count)
                self.history.loss.add(x, value, smoothed)
            self.losses.avg = avg
            self.losses.count = count
            self.losses.loss = smoothed
            if losses:
                self.losses.last = float(losses[-1])

    def begin_eval(self, now: float, total: int | None) -> None:
        """An evaluation pass of ``total`` steps starts (fit's validation)."""
        with self._lock:
            self.run.phase = "eval"
            self.progress.eval_step = 0
            if total:
                self.progress.eval_steps = int(total)
            self.timing.t_eval_start = now
            self.timing.eval_cut = False

    def record_eval_steps(self, now: float, step: int) -> None:
        """The evaluation pass reached ``step`` (1-based within the pass); its rate is the pass's average."""
        with self._lock:
            self.progress.eval_step = int(step)
            if self.timing.t_eval_start is not None and now > self.timing.t_eval_start and self.progress.eval_step:
                self.timing.eval_rate = self.progress.eval_step / (now - self.timing.t_eval_start)

    def end_eval(self, now: float, complete: bool = True) -> float | None:
        """The evaluation pass ended; returns its duration.  A pass stopped early (not ``complete``) does not
        predict the next ones, and the final picture keeps its eval phase and step."""
        with self._lock:
            seconds = None if self.timing.t_eval_start is None else max(0.0, now - self.timing.t_eval_start)
            if complete and seconds is not None and self.progress.eval_step:
                self.timing.pass_seconds = seconds
            if self.run.kind == "train":
                self.timing.eval_cut = not complete
                if complete:
                    self.run.phase = "train"
            self.timing.train_mark = None
            return seconds

    def add_eval_row(self, now: float, values: Mapping[str, Any], *, epoch: int | None, step: int | None,
                     seconds: float | None = None, partial: bool = False) -> EvalRow:
        """Record one evaluation's results (a table row and plot points).  When a ``'loss'`` metric equals fit's
        ``eval_loss``, both are the mean validation loss: ``eval_loss`` is left out (one column, one line)."""
        with self._lock:
            loss, eval_loss = _finite(values.get("loss")), _finite(values.get("eval_loss"))
            same = loss is not None and eval_loss is not None and math.isclose(loss, eval_loss, rel_tol=1e-5)
            clean = {str(name): value for name, value in values.items() if not (same and name == "eval_loss")}
            self.history.columns += [name for name in clean if name not in self.history.columns]
            row = EvalRow(epoch, step, clean, seconds, self._elapsed(now), partial)
            self.history.rows.append(row)
            x = float(step if step is not None else self.progress.global_step)
            for name, value in clean.items():
                number = _finite(value)
                if number is not None:
                    self.history.evals.setdefault(name, Points(self.max_points)).add(x, number)
            return row

    def end_epoch(self, epoch: int, now: float, validated: bool) -> None:
        """A training epoch ended (after its validation, if any)."""
        with self._lock:
            if self.progress.steps_per_epoch == 0 or self.step_in_epoch == self.progress.steps_per_epoch:
                self.progress.epochs_done += 1  # a stopped, partial epoch does not count as done
            self.progress.epoch_open = False
            self.progress.epochs_ended += 1
            self.progress.epochs_validated += bool(validated)
            if not self.timing.eval_cut:
                self.run.phase = "train"

    def set_lr(self, lr: float | None, *, changed_at: int | None = None) -> None:
        """The current learning rate; ``changed_at`` (a global step) records a change made through the controls.
        The lr line gets a point whenever the value differs from the last one."""
        with self._lock:
            value = self.history.lr = _finite(lr)
            if value is None:
                return
            if changed_at is not None:
                self.history.lr_changes.append((int(changed_at), value))
            if self.history.lr_series.last() != value:
                self.history.lr_series.add(changed_at if changed_at is not None else self.progress.global_step, value)

    def set_time(self, time: TimeFacts | None) -> None:
        """Where the run's time went so far (read from a profiler at a refresh; the views carry it)."""
        with self._lock:
            self.time = time

    def note_display_cost(self, seconds: float) -> None:
        """Add time the display took on the training thread (its overhead)."""
        with self._lock:
            self.timing.display_seconds += max(0.0, seconds)

    def finish(self, now: float, status: str, text: str | None = None, error: str | None = None) -> None:
        """End the run with a final ``status`` and its human ``text``."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"status must be one of {sorted(FINAL_STATUSES)}, got {status!r}")
        with self._lock:
            if self.run.t_start is None:
                self.run.t_start = now
            self.run.status, self.run.error, self.run.t_end = status, error, now
            self.run.status_text = text or (Msg(status) if status == "finished" else status)
            run, timing = self.run, self.timing
            if timing.t_eval_start is not None and run.phase == "eval" and run.kind == "train" and not timing.eval_cut:
                self.run.phase = "train"

    # ------------------------------------------------------------------ reading

    @property
    def kind(self) -> str:
        """``'train'`` (train, fit) or ``'eval'`` (``Model.eval``)."""
        return self.run.kind

    @property
    def epoch(self) -> int | None:
        """The current epoch (``cb_params.cur_epoch_num``), None before the first."""
        return self.progress.epoch

    @property
    def global_step(self) -> int:
        """The training steps so far (``cb_params.cur_step_num``)."""
        return self.progress.global_step

    @property
    def step_in_epoch(self) -> int:
        """1-based step within the current epoch (0 before its first step)."""
        return self.progress.step_in_epoch

    @property
    def eval_step(self) -> int:
        """The step within the current evaluation pass."""
        return self.progress.eval_step

    @property
    def samples_per_step(self) -> int | None:
        """The batch size, once known."""
        return self.timing.samples_per_step

    def _elapsed(self, now: float) -> float:
        if self.run.t_start is None:
            return 0.0
        return max(0.0, (self.run.t_end if self.run.t_end is not None else now) - self.run.t_start)

    def _etas(self) -> tuple[float | None, float | None, bool]:
        """(training left, everything left, whether the evaluations' part is a guess), in seconds."""
        if self.run.kind == "eval":
            if self.progress.eval_steps is None or not self.timing.eval_rate:
                return None, None, False
            left = max(0, self.progress.eval_steps - self.progress.eval_step) / self.timing.eval_rate
            return left, left, False
        progress = self.progress
        left_steps = max(0, progress.epochs * progress.steps_per_epoch - (progress.global_step - progress.first_global))
        if left_steps and not self.timing.rate:
            return None, None, False
        eta = left_steps / self.timing.rate if left_steps else 0.0
        if not self.run.validates:
            return eta, eta, False
        pass_seconds = self.timing.pass_seconds
        if pass_seconds is None:  # a guess from the training speed
            steps, rate = progress.eval_steps, self.timing.rate
            pass_seconds = steps * self.eval_cost_guess / rate if steps and rate else 0
        # Validations to come: the epochs left (this one too until its validation starts) times the share of the
        # ended epochs that were validated (fit's valid_frequency is not in cb_params).
        if self.progress.epoch is None:
            epochs_left = self.progress.epochs
        else:
            last = (self.progress.first_epoch or 1) + self.progress.epochs - 1
            epochs_left = last - self.progress.epoch + (self.progress.epoch_open and self.run.phase == "train")
        share = self.progress.epochs_validated / self.progress.epochs_ended if self.progress.epochs_ended else 1.0
        extra = max(0, epochs_left) * share * pass_seconds
        if self.run.phase == "eval" and self.progress.eval_steps:
            left = max(0, self.progress.eval_steps - self.progress.eval_step)
            eval_rate = self.timing.eval_rate
            extra += left / eval_rate if eval_rate else pass_seconds * left / self.progress.eval_steps
        return eta, eta + extra, self.timing.pass_seconds is None

    def view(self, now: float, *, live_rows: int | None = 10, max_rows: int | None = None) -> View:
        """An immutable picture of the run at ``now``.

        Args:
            live_rows: keep only the last this-many table rows (the live view); None keeps all rows.
            max_rows: with ``live_rows=None``, at most this many rows: a tenth from the start, the rest from the end.
        """
        with self._lock:
            rows = self.history.rows
            omitted, omitted_after = 0, len(rows)
            if live_rows is not None:
                rows, omitted_after = rows[-live_rows:] if live_rows > 0 else [], 0
            elif max_rows is not None and len(rows) > max_rows:
                head = max(1, max_rows // 10)
                tail = max_rows - head
                omitted, omitted_after = len(rows) - head - tail, head
                rows = rows[:head] + (rows[-tail:] if tail else [])
            eta_train, eta_total, estimated = self._etas()
            run, progress, timing, losses = self.run, self.progress, self.timing, self.losses
            return View(
                kind=run.kind, status=run.status, status_text=run.status_text, phase=run.phase, error=run.error,
                validates=run.validates, epoch=progress.epoch,
                last_epoch=None if progress.first_epoch is None else progress.first_epoch + progress.epochs - 1,
                epochs_done=progress.epochs_done, epochs=progress.epochs, step_in_epoch=progress.step_in_epoch,
                steps_per_epoch=progress.steps_per_epoch, steps_done=progress.global_step - progress.first_global,
                total_steps=progress.epochs * progress.steps_per_epoch, global_step=progress.global_step,
                eval_step=progress.eval_step, eval_steps=progress.eval_steps, elapsed=self._elapsed(now),
                rate=timing.rate, eval_rate=timing.eval_rate, samples_per_step=timing.samples_per_step,
                eta_train=eta_train, eta_total=eta_total, eta_total_estimated=estimated,
                display_seconds=timing.display_seconds, loss=losses.loss, last_loss=losses.last, lr=self.history.lr,
                lr_changes=tuple(self.history.lr_changes), columns=tuple(self.history.columns), rows=tuple(rows),
                rows_total=len(self.history.rows), rows_omitted=omitted, omitted_after=omitted_after, time=self.time,
            )

    # ------------------------------------------------------------------ plot data

    def _frame(self) -> dict[str, Any]:
        """The planned x range and epoch marks (global steps), and the facts that choose the panels."""
        progress = self.progress
        spe, first = progress.steps_per_epoch, progress.first_global
        planned = progress.epochs * spe
        end = max(first + planned if planned > 0 else first + 1, self.progress.global_step)
        return {"x_range": [float(first), float(end)],
                "epoch_marks": [float(first + k * spe) for k in range(1, self.progress.epochs)] if spe else [],
                "metrics": list(self.history.evals), "loss_positive": self.losses.positive,
                "lr_changed": len(self.history.lr_series) > 1}

    def _series(self) -> dict[str, Buckets | Points]:
        """Every series with points, by the key a :class:`~nbcallback.widgets.panels.Line` names: those of
        :data:`SERIES` and ``'eval:<metric>'``."""
        evals = {"eval:" + name: points for name, points in self.history.evals.items()}
        found = {"loss": self.history.loss, **evals, "lr": self.history.lr_series}
        return {key: series for key, series in found.items() if len(series)}

    def _lr_tail(self) -> dict[str, float] | None:
        """The lr line runs on to the current step."""
        lr, series = self.history.lr, self.history.lr_series
        if not len(series) or lr is None or self.progress.global_step <= series.x[-1]:
            return None
        return {"x": float(self.progress.global_step), "y": self.history.lr}

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

    def read_series(self, read: Callable[[dict[str, Buckets | Points]], _T]) -> _T:
        """``read(series)`` under the lock, with every series that has points by its key (the live objects: read
        them there, keep nothing), e.g. the panels' y ranges from the extremes the series keep."""
        with self._lock:
            return read(self._series())

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
                empty = {"gen": self.history.lr_series.gen, "start": len(self.history.lr_series), "x": [], "y": []}
                deltas.setdefault("lr", empty)["tail"] = lr_tail
            return {**self._frame(), "series": deltas}, held

    def loss_points(self) -> int:
        """How many raw loss values were recorded."""
        with self._lock:
            return self.history.loss.count
