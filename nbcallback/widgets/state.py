"""The state model every renderer reads: plain Python, no IPython, no matplotlib.

One :class:`TrainingState` per run holds the counters, the clock marks, the
smoothed rates and ETAs, the loss series and the table of evaluation results.
The callbacks feed it at refresh ticks (never per step); renderers take an
immutable :class:`View` (and :class:`PlotData` for the panels) under its lock, so
a renderer on another thread never sees a half-updated run.

Every method takes the current time as an argument.  That keeps the model free
of clocks, and lets the tests drive it with made-up times.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nbcallback.widgets.series import Buckets, Cursor, Points
from nbcallback.widgets.words import Msg

__all__ = ["EvalRow", "PlotData", "TrainingState", "View", "STATUSES"]

#: Life cycle of a run, in order; the last four are final.
STATUSES = ("starting", "running", "finished", "stopped", "error", "interrupted")
FINAL_STATUSES = frozenset(STATUSES[2:])


@dataclass(frozen=True)
class EvalRow:
    """One evaluation: a row of the metrics table and points of the plot.

    Attributes:
        epoch: the training epoch it followed (None for a stand-alone ``Model.eval``).
        step: the global training step it followed (None for ``Model.eval``).
        values: metric name -> value (floats; lists for per-class metrics).
        seconds: how long the evaluation pass took, when measured.
        elapsed: seconds since the run started.
        partial: True when the pass was cut short by a stop request, so its
            numbers cover only part of the validation set.
    """

    epoch: int | None
    step: int | None
    values: Mapping[str, Any]
    seconds: float | None
    elapsed: float
    partial: bool = False


@dataclass(frozen=True)
class View:
    """A consistent, immutable picture of a run for the renderers.

    Attributes:
        kind: ``'train'`` (train/fit) or ``'eval'`` (a stand-alone ``Model.eval``).
        status: one of :data:`STATUSES`.
        status_text: one human line, e.g. ``"stopped by user at epoch 2, step 312"``.
        phase: ``'train'`` or ``'eval'`` (fit's validation runs are ``'eval'``).
        epoch: the current epoch number (as ``cb_params.cur_epoch_num``), or None.
        last_epoch: the number of the run's final epoch, or None before the first epoch.
        epochs_done: epochs completed in this run (a stopped, partial epoch is not counted).
        epochs: epochs planned for this run.
        step_in_epoch: 1-based step within the current epoch (0 before the first step).
        steps_per_epoch: training steps per epoch.
        steps_done: training steps done in this run.
        total_steps: training steps planned for this run.
        global_step: ``cb_params.cur_step_num`` of the last recorded training step.
        eval_step: steps done in the current (or last) evaluation pass.
        eval_steps: steps of one evaluation pass, when known.
        elapsed: seconds since the run started (frozen at the end).
        rate: training steps per second (smoothed), None until measured.
        eval_rate: evaluation steps per second (smoothed), None until measured.
        samples_per_step: the batch size seen on the first step, for samples/s.
        eta_train: seconds of training left (evaluations excluded), or None.
        eta_total: seconds left including the predicted evaluations, or None.
        eta_total_estimated: True while no evaluation has been timed, so the
            evaluation part of ``eta_total`` is a guess from the training speed.
        loss: the smoothed training loss, or None.
        last_loss: the last raw training loss, or None.
        lr: the learning rate of the first parameter group, when known.
        lr_changes: ``(global step, lr)`` for every change made through the controls.
        columns: metric names of the table, in first-seen order.
        rows: the rows to show (the last few while live, all or a capped
            head and tail in the snapshot).
        rows_total: how many evaluations the run had.
        rows_omitted: rows left out in the middle (0 unless capped).
        omitted_after: index in ``rows`` after which the omitted rows belong.
        error: ``"ValueError: message"`` when the run failed.
        display_seconds: the time the display callbacks spent on the training thread so far
            (opening the view, recording losses, refreshes, the final snapshot).
        validates: the run has a validation set (fit), so evaluations are expected.
    """

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
    """What the panels draw, for the final PNG.

    Attributes:
        x_range: the planned x extent (global steps), preset so the plot does not jump.
        epoch_marks: x positions of the planned epoch boundaries.
        series: data key -> columns: ``'loss'`` has ``x``, ``lo``, ``hi`` (the
            raw per-step extremes of each bucket) and ``y`` (smoothed);
            ``'eval:<metric>'`` and ``'lr'`` have ``x`` and ``y``.  None marks
            a missing value.
        metrics: the evaluated metric names, in the order first seen.
    """

    x_range: tuple[float, float]
    epoch_marks: tuple[float, ...]
    series: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    loss_positive: bool = True
    lr_changed: bool = False


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite real scalar, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _advance_rate(
    mark: tuple[float, int] | None, rate: float | None, now: float, step: int, smoothing: float
) -> tuple[tuple[float, int] | None, float | None]:
    """The next (mark, steps/s EMA) after reaching ``step`` at ``now``.

    The first measurement of a phase is a reference point only: it includes
    warm-up (first batch, allocations), which Keras' ETA also excludes.
    """
    if mark is None:
        return (now, step), rate
    dt, ds = now - mark[0], step - mark[1]
    if ds <= 0 or dt <= 0:
        return mark, rate
    inst = ds / dt
    return (now, step), inst if rate is None else smoothing * inst + (1 - smoothing) * rate


#: A short run's smoothed loss averages over at most this share of its planned steps (1/25).
_SMOOTHING_SHARE = 25


class TrainingState:
    """Counters, rates, ETAs, loss series and the evaluation table of one run.

    Args:
        smoothing: the EMA factor of the smoothed loss (fastai's 0.98, with
            bias correction so the first values are not pulled towards 0), at
            most: a run of fewer than 1,250 planned steps averages over about
            a 25th of them instead (0.98 averages over ~50 steps, and in a run
            of 200 the line would trail far behind a falling loss).
        rate_smoothing: weight of the newest measurement in the rate EMA (tqdm's 0.3).
        max_points: the most points per line (buckets of the loss, evaluations, lr values).
        eval_cost_guess: before an evaluation has been timed, one evaluation step
            is assumed to cost this fraction of a training step (a forward pass is
            about a third of forward + backward + update).

    All methods are thread-safe (one re-entrant lock).  Times are seconds on
    one monotonic scale, passed in by the caller.
    """

    def __init__(
        self,
        smoothing: float = 0.98,
        rate_smoothing: float = 0.3,
        max_points: int = 1000,
        eval_cost_guess: float = 0.35,
    ) -> None:
        if not 0 <= smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing!r}")
        if not 0 < rate_smoothing <= 1:
            raise ValueError(f"rate_smoothing must be in (0, 1], got {rate_smoothing!r}")
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points!r}")
        self.smoothing = float(smoothing)
        self.rate_smoothing = float(rate_smoothing)
        self.max_points = int(max_points)
        self.eval_cost_guess = float(eval_cost_guess)
        self._lock = threading.RLock()
        self.reset()

    # ------------------------------------------------------------------ life cycle

    def reset(self) -> None:
        """Forget everything (a new run)."""
        with self._lock:
            self._kind = "train"
            self._status = "starting"
            self._status_text: str = Msg("starting")
            self._phase = "train"
            self._t_start: float | None = None
            self._t_end: float | None = None
            self._epochs = 0
            self._spe = 0
            self._first_global = 0
            self._first_epoch: int | None = None
            self._epoch: int | None = None
            self._epochs_done = 0
            self._epoch_open = False
            self._global = 0
            self._has_validation = False
            self._eval_steps: int | None = None
            self._eval_step = 0
            self._t_eval_start: float | None = None
            self._eval_cut = False  # a stop request cut the current validation pass short
            self._eval_pass_seconds: float | None = None
            self._rate: float | None = None
            self._eval_rate: float | None = None
            self._train_mark: tuple[float, int] | None = None
            self._eval_mark: tuple[float, int] | None = None
            self._samples_per_step: int | None = None
            self._avg = 0.0
            self._beta = self.smoothing
            self._avg_count = 0
            self._loss: float | None = None
            self._last_loss: float | None = None
            self._loss_series = Buckets(self.max_points)
            self._loss_positive = True
            self._evals: dict[str, Points] = {}
            self._lr_series = Points(self.max_points)
            self._rows: list[EvalRow] = []
            self._columns: list[str] = []
            self._validated: dict[int, bool] = {}
            self._lr: float | None = None
            self._lr_changes: list[tuple[int, float]] = []
            self._error: str | None = None
            self._display_seconds = 0.0
            self._version = 0
            self._plot_version = 0

    def start(
        self,
        now: float,
        *,
        kind: str = "train",
        epochs: int = 1,
        steps_per_epoch: int = 0,
        first_global_step: int = 0,
        has_validation: bool = False,
        eval_steps: int | None = None,
        lr: float | None = None,
    ) -> None:
        """Begin a run.

        Args:
            now: the current time.
            kind: ``'train'`` (train and fit) or ``'eval'`` (``Model.eval``).
            epochs: epochs planned (``cb_params.epoch_num``).
            steps_per_epoch: training steps per epoch (``cb_params.batch_num``).
            first_global_step: ``cb_params.cur_step_num`` before the first step.
            has_validation: fit with a validation set (evaluations are predicted).
            eval_steps: steps of one evaluation pass, when known.
            lr: the learning rate of the first parameter group, when known.
        """
        if kind not in ("train", "eval"):
            raise ValueError(f"kind must be 'train' or 'eval', got {kind!r}")
        with self._lock:
            self.reset()
            self._kind = kind
            self._status = "running"
            self._status_text = Msg("running") if kind == "train" else Msg("evaluating")
            self._phase = kind
            self._t_start = now
            self._epochs = max(0, int(epochs))
            self._spe = max(0, int(steps_per_epoch))
            self._first_global = int(first_global_step)
            self._global = int(first_global_step)
            self._has_validation = bool(has_validation)
            self._eval_steps = int(eval_steps) if eval_steps else None
            planned = self._epochs * self._spe
            self._loss_series = Buckets(self.max_points, planned=planned)
            window = planned / _SMOOTHING_SHARE  # steps the average spans, at most
            self._beta = min(self.smoothing, 1 - 1 / window) if window > 1 else self.smoothing
            self._lr = _finite(lr)
            if self._lr is not None and kind == "train":
                self._lr_series.add(self._first_global, self._lr)
            if kind == "eval":
                self._t_eval_start = now
            self._version += 1
            self._plot_version += 1

    def begin_epoch(self, epoch: int, now: float) -> None:
        """A training epoch starts (``epoch`` as ``cb_params.cur_epoch_num``)."""
        with self._lock:
            if self._first_epoch is None:
                self._first_epoch = int(epoch)
            self._epoch = int(epoch)
            self._epoch_open = True
            self._phase = "train"
            self._eval_cut = False
            self._train_mark = None  # the first step of an epoch includes the loader's start-up

    def set_samples_per_step(self, samples: int | None) -> None:
        """The batch size, to show samples/s next to it/s (first value wins)."""
        with self._lock:
            if self._samples_per_step is None and samples:
                self._samples_per_step = int(samples)

    def record_steps(self, now: float, global_step: int, losses: Sequence[float] = ()) -> None:
        """Training reached ``global_step``; ``losses`` are the raw losses of the
        last ``len(losses)`` steps (ending at ``global_step``), possibly none."""
        with self._lock:
            self._global = int(global_step)
            self._train_mark, self._rate = _advance_rate(
                self._train_mark, self._rate, now, self._global, self.rate_smoothing
            )
            if losses:
                self._add_losses(self._global - len(losses) + 1, losses)
            elif self._global > self._first_global + self._epochs * self._spe:
                self._plot_version += 1  # past the plan: the x-range grows
            self._version += 1

    def _add_losses(self, first_x: int, losses: Sequence[float]) -> None:
        beta = self._beta
        avg, count = self._avg, self._avg_count
        level = self._loss
        for x, value in enumerate(losses, start=first_x):
            if math.isfinite(value):  # a NaN step shows as a gap; it must not poison the average
                self._loss_positive = self._loss_positive and value > 0
                count += 1
                avg = beta * avg + (1 - beta) * value
                level = avg / (1 - beta**count)
            self._loss_series.add(x, value, level)
        self._avg, self._avg_count = avg, count
        self._loss = level
        self._last_loss = float(losses[-1])
        self._plot_version += 1

    def begin_eval(self, now: float, total: int | None) -> None:
        """An evaluation pass of ``total`` steps starts (fit's validation)."""
        with self._lock:
            self._phase = "eval"
            self._eval_step = 0
            if total:
                self._eval_steps = int(total)
            self._t_eval_start = now
            self._eval_mark = None
            self._eval_cut = False

    def record_eval_steps(self, now: float, step: int) -> None:
        """The evaluation pass reached ``step`` (1-based within the pass)."""
        with self._lock:
            self._eval_step = int(step)
            self._eval_mark, self._eval_rate = _advance_rate(
                self._eval_mark, self._eval_rate, now, self._eval_step, self.rate_smoothing
            )
            self._version += 1

    def end_eval(self, now: float, complete: bool = True) -> float | None:
        """The evaluation pass ended; returns its duration.

        Args:
            now: the current time.
            complete: False when the pass was stopped early; its duration is then
                not used to predict the next passes.
        """
        with self._lock:
            seconds = None
            if self._t_eval_start is not None:
                seconds = max(0.0, now - self._t_eval_start)
                if complete and self._eval_step:
                    self._eval_pass_seconds = seconds
                    if seconds > 0 and self._eval_rate is None:
                        self._eval_rate = self._eval_step / seconds
            if self._kind == "train":
                if complete:
                    self._phase = "train"
                else:
                    # A stop during validation: the run ends here, so the final
                    # picture keeps the eval phase and step where it stopped.
                    self._eval_cut = True
            self._train_mark = None
            return seconds

    def add_eval_row(
        self,
        now: float,
        values: Mapping[str, Any],
        *,
        epoch: int | None,
        step: int | None,
        seconds: float | None = None,
        partial: bool = False,
    ) -> EvalRow:
        """Record one evaluation's results (a table row and plot points).

        fit's ``eval_results`` hold ``eval_loss`` next to the metrics; when a
        ``'loss'`` metric is there too, both are the mean validation loss, so
        ``eval_loss`` is left out (one column, one line).
        """
        with self._lock:
            clean: dict[str, Any] = {}
            loss, eval_loss = _finite(values.get("loss")), _finite(values.get("eval_loss"))
            if loss is not None and eval_loss is not None and math.isclose(loss, eval_loss, rel_tol=1e-5):
                values = {name: value for name, value in values.items() if name != "eval_loss"}
            for name, value in values.items():
                clean[str(name)] = value
                if str(name) not in self._columns:
                    self._columns.append(str(name))
            row = EvalRow(
                epoch=epoch,
                step=step,
                values=clean,
                seconds=seconds,
                elapsed=self._elapsed(now),
                partial=partial,
            )
            self._rows.append(row)
            x = float(step if step is not None else self._global)
            for name, value in clean.items():
                number = _finite(value)
                if number is not None:
                    self._evals.setdefault(name, Points(self.max_points)).add(x, number)
                    self._plot_version += 1
            self._version += 1
            return row

    def end_epoch(self, epoch: int, now: float, validated: bool) -> None:
        """A training epoch ended (after its validation, if any)."""
        with self._lock:
            if self._spe == 0 or self.step_in_epoch == self._spe:
                self._epochs_done += 1  # a stopped, partial epoch does not count as done
            self._epoch_open = False
            self._validated[int(epoch)] = bool(validated)
            if not self._eval_cut:
                self._phase = "train"
            self._version += 1

    def set_lr(self, lr: float | None, *, changed_at: int | None = None) -> None:
        """The current learning rate; ``changed_at`` (a global step) records a control change.

        The lr panel gets a point whenever the value differs from the last one;
        it is read at refresh ticks, so a scheduler's change shows at the first
        tick after it (within a quarter of a second of steps).
        """
        with self._lock:
            value = _finite(lr)
            self._lr = value
            if value is None:
                return
            if changed_at is not None:
                self._lr_changes.append((int(changed_at), value))
            if self._lr_series.last() != value:
                self._lr_series.add(changed_at if changed_at is not None else self._global, value)
                self._plot_version += 1

    def note_display_cost(self, seconds: float) -> None:
        """Add time the display took on the training thread (its overhead)."""
        with self._lock:
            self._display_seconds += max(0.0, seconds)

    def finish(self, now: float, status: str, text: str | None = None, error: str | None = None) -> None:
        """End the run with a final ``status`` and its human ``text``."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"status must be one of {sorted(FINAL_STATUSES)}, got {status!r}")
        with self._lock:
            if self._t_start is None:
                self._t_start = now
            self._status = status
            self._status_text = text or (Msg(status) if status == "finished" else status)
            self._error = error
            self._t_end = now
            if self._t_eval_start is not None and self._phase == "eval" and self._kind == "train" and not self._eval_cut:
                self._phase = "train"
            self._version += 1

    # ------------------------------------------------------------------ reading

    @property
    def status(self) -> str:
        """The current status (one of :data:`STATUSES`)."""
        return self._status

    @property
    def kind(self) -> str:
        """``'train'`` or ``'eval'``."""
        return self._kind

    @property
    def phase(self) -> str:
        """``'train'`` or ``'eval'``."""
        return self._phase

    @property
    def global_step(self) -> int:
        """``cb_params.cur_step_num`` of the last recorded training step."""
        return self._global

    @property
    def epoch(self) -> int | None:
        """The current epoch number, or None before the first epoch."""
        return self._epoch

    @property
    def step_in_epoch(self) -> int:
        """1-based step within the current epoch (0 before the first step)."""
        if self._global > self._first_global and self._spe:
            return (self._global - 1) % self._spe + 1
        return 0

    @property
    def samples_per_step(self) -> int | None:
        """The batch size seen first, when known."""
        return self._samples_per_step

    @property
    def version(self) -> int:
        """Increases with every change of the recorded data."""
        return self._version

    @property
    def plot_version(self) -> int:
        """Increases when what the plot shows changes (the plan, losses, evaluation
        points); progress alone does not change it."""
        return self._plot_version

    def _elapsed(self, now: float) -> float:
        if self._t_start is None:
            return 0.0
        end = self._t_end if self._t_end is not None else now
        return max(0.0, end - self._t_start)

    def inferred_valid_frequency(self) -> int | None:
        """The smallest ``valid_frequency`` consistent with the epochs seen so far.

        fit's ``valid_frequency`` is not in ``cb_params``; it is inferred from which
        epochs were validated (1 until an epoch without validation is seen).
        None when no integer frequency explains the record (a list was passed).
        """
        with self._lock:
            if not self._validated:
                return 1
            top = max(self._validated)
            for freq in range(1, top + 2):
                if all((epoch % freq == 0) == done for epoch, done in self._validated.items()):
                    return freq
            return None

    def _remaining_evals(self) -> float:
        if not self._has_validation or self._kind != "train":
            return 0.0
        if self._first_epoch is None:
            first, current_done = 1, False
            current = 0
        else:
            current = self._epoch if self._epoch is not None else self._first_epoch
            first = current
            current_done = not self._epoch_open or self._phase == "eval"
        last = (self._first_epoch or 1) + self._epochs - 1
        start = current + 1 if current_done else first
        pending = range(start, last + 1)
        freq = self.inferred_valid_frequency()
        if freq is not None:
            return float(sum(1 for epoch in pending if epoch % freq == 0))
        share = sum(self._validated.values()) / max(1, len(self._validated))
        return share * len(pending)

    def _etas(self) -> tuple[float | None, float | None, bool]:
        if self._kind == "eval":
            if self._eval_steps is None or not self._eval_rate:
                return None, None, False
            left = max(0, self._eval_steps - self._eval_step) / self._eval_rate
            return left, left, False
        done = self._global - self._first_global
        left_steps = max(0, self._epochs * self._spe - done)
        if left_steps == 0:
            eta_train: float | None = 0.0
        elif self._rate:
            eta_train = left_steps / self._rate
        else:
            eta_train = None
        if eta_train is None:
            return None, None, False
        extra = 0.0
        estimated = False
        if self._has_validation:
            pass_seconds = self._eval_pass_seconds
            if pass_seconds is None:
                if self._eval_steps and self._rate:
                    pass_seconds = self._eval_steps * self.eval_cost_guess / self._rate
                    estimated = True
                else:
                    pass_seconds = 0.0
                    estimated = True
            extra += self._remaining_evals() * pass_seconds
            if self._phase == "eval" and self._eval_steps:
                left = max(0, self._eval_steps - self._eval_step)
                if self._eval_rate:
                    extra += left / self._eval_rate
                else:
                    extra += pass_seconds * left / self._eval_steps
        return eta_train, eta_train + extra, estimated

    def view(self, now: float, *, live_rows: int | None = 10, max_rows: int | None = None) -> View:
        """An immutable picture of the run at ``now``.

        Args:
            now: the current time.
            live_rows: keep only the last this-many table rows (the live view, so
                the bytes per refresh stay constant); None keeps all rows.
            max_rows: with ``live_rows=None``, cap the table at this many rows: a
                tenth from the start, the rest from the end, and the number left
                out in between.
        """
        with self._lock:
            rows = list(self._rows)
            omitted, omitted_after = 0, len(rows)
            if live_rows is not None:
                rows = rows[-live_rows:] if live_rows > 0 else []
                omitted_after = 0
                omitted = 0
            elif max_rows is not None and len(rows) > max_rows:
                head = max(1, max_rows // 10)
                tail = max_rows - head
                omitted = len(rows) - head - tail
                rows = rows[:head] + (rows[-tail:] if tail else [])
                omitted_after = head
            eta_train, eta_total, estimated = self._etas()
            last_epoch = None if self._first_epoch is None else self._first_epoch + self._epochs - 1
            spe = self._spe
            step_in_epoch = 0
            if self._global > self._first_global and spe:
                step_in_epoch = (self._global - 1) % spe + 1
            return View(
                kind=self._kind,
                status=self._status,
                status_text=self._status_text,
                phase=self._phase,
                epoch=self._epoch,
                last_epoch=last_epoch,
                epochs_done=self._epochs_done,
                epochs=self._epochs,
                step_in_epoch=step_in_epoch,
                steps_per_epoch=spe,
                steps_done=self._global - self._first_global,
                total_steps=self._epochs * spe,
                global_step=self._global,
                eval_step=self._eval_step,
                eval_steps=self._eval_steps,
                elapsed=self._elapsed(now),
                rate=self._rate,
                eval_rate=self._eval_rate,
                samples_per_step=self._samples_per_step,
                eta_train=eta_train,
                eta_total=eta_total,
                eta_total_estimated=estimated,
                loss=self._loss,
                last_loss=self._last_loss,
                lr=self._lr,
                lr_changes=tuple(self._lr_changes),
                columns=tuple(self._columns),
                rows=tuple(rows),
                rows_total=len(self._rows),
                rows_omitted=omitted,
                omitted_after=omitted_after,
                error=self._error,
                display_seconds=self._display_seconds,
                validates=self._has_validation,
            )

    def _plan(self) -> tuple[tuple[float, float], tuple[float, ...]]:
        spe, epochs, first = self._spe, self._epochs, self._first_global
        end = first + epochs * spe
        if end <= first:
            end = max(self._global, first + 1)
        marks = tuple(float(first + k * spe) for k in range(1, epochs)) if spe else ()
        return (float(first), float(max(end, self._global))), marks

    def _all_series(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if len(self._loss_series):
            found["loss"] = self._loss_series
        for name, points in self._evals.items():
            found["eval:" + name] = points
        if len(self._lr_series):
            found["lr"] = self._lr_series
        return found

    def _lr_tail(self) -> dict[str, float] | None:
        last = self._lr_series.x[-1] if len(self._lr_series) else None
        if last is None or self._lr is None or self._global <= last:
            return None
        return {"x": float(self._global), "y": self._lr}

    def plot_data(self) -> PlotData:
        """Every point of every series (at most ``max_points`` each), for the final PNG."""
        with self._lock:
            x_range, marks = self._plan()
            series = {key: s.points() for key, s in self._all_series().items()}
            tail = self._lr_tail()
            if tail is not None:
                series["lr"] = {"x": series["lr"]["x"] + [tail["x"]], "y": series["lr"]["y"] + [tail["y"]]}
            return PlotData(
                x_range=x_range,
                epoch_marks=marks,
                series=series,
                metrics=tuple(self._evals),
                loss_positive=self._loss_positive,
                lr_changed=len(self._lr_series) > 1,
            )

    def plot_delta(self, cursors: dict[str, Cursor] | None) -> tuple[dict[str, Any], dict[str, Cursor]]:
        """What a reader holding ``cursors`` lacks: ``{"x_range", "epoch_marks", "metrics",
        "series": {key: delta}}`` (only changed series), and the reader's new cursors.

        ``cursors`` None: everything (a new view).
        """
        with self._lock:
            x_range, marks = self._plan()
            held = dict(cursors or {})
            deltas: dict[str, Any] = {}
            for key, series in self._all_series().items():
                delta, held[key] = series.delta(held.get(key) if cursors is not None else None)
                if delta is not None:
                    deltas[key] = delta
            lr_tail = self._lr_tail()
            if lr_tail is not None:  # the lr line runs on to the current step
                deltas.setdefault("lr", {"gen": self._lr_series.gen, "start": len(self._lr_series), "x": [],
                                         "y": []})["tail"] = lr_tail
            return {"x_range": list(x_range), "epoch_marks": list(marks), "metrics": list(self._evals),
                    "loss_positive": self._loss_positive, "lr_changed": len(self._lr_series) > 1,
                    "series": deltas}, held

    def is_last_epoch(self, epoch: int) -> bool:
        """Whether ``epoch`` (as ``cb_params.cur_epoch_num``) is the run's last one.

        ``cb_params.epoch_num`` counts the epochs of this call, and epochs are
        numbered from ``initial_epoch + 1`` (``Model.fit(..., initial_epoch=2)``
        runs epochs 3, 4, 5 with ``epoch_num`` 3), so the last one is counted
        from the first epoch seen.
        """
        with self._lock:
            first = self._first_epoch if self._first_epoch is not None else int(epoch)
            return int(epoch) >= first + self._epochs - 1

    def has_plot_points(self) -> bool:
        """Whether a plot of the run would show anything (a loss or an evaluation point)."""
        with self._lock:
            return len(self._loss_series) > 0 or any(len(series) for series in self._evals.values())

    def loss_points(self) -> int:
        """How many raw loss values were recorded."""
        with self._lock:
            return self._loss_series.count
