"""``CallbackProfiler``: where the time of a run goes — each callback's hooks, the step, the loop.

An nbcallback addition (MindSpore has no such callback; Lightning's
``SimpleProfiler`` is the closest). It goes in the callbacks list, anywhere
(first is best: its clock then also covers the other callbacks' ``__enter__``
and ``__exit__``)::

    profiler = CallbackProfiler()
    model.fit(2, train, valid, callbacks=[profiler, LossMonitor(300), TimeMonitor(), ckpoint_cb])
    print(profiler)       # a table: callback × hook -> calls, total ms, mean µs, share of the run
    profiler              # the same as an HTML table in a notebook
    profiler.rows         # plain data: one ProfileRow per line, largest total first

What is measured, and where:

* **wall**: from the profiler's ``__enter__`` (the trainer enters the callbacks
  before the run) to its ``__exit__`` (after ``on_train_end`` / ``on_eval_end``),
  with ``time.perf_counter``.
* **each callback's hooks**: when the trainer enters the callbacks, the profiler
  wraps the hook methods the trainer will call (only those that do something),
  in the trainer's dispatch table, not on the callbacks themselves: each call is
  timed as it runs. Legacy names are shown where MindSpore's base class forwards
  to them (``LossMonitor.on_train_step_end (step_end)``).
* **the training step**, split with torch's own hooks on ``TrainOneStepCell``'s
  parts: *forward* (the network's forward pre-hook to its forward hook; the
  loss function is not part of it), *backward* (the network's forward hook to
  the optimizer's step pre-hook: the loss, ``zero_grad`` and ``backward``) and
  *optimizer* (``optimizer.step``'s pre-hook to its post-hook). The
  ``on_train_backward_end`` hooks, which run between backward and the optimizer
  step, are their callbacks' rows, not the backward's; a step whose optimizer
  step a callback skips (gradient accumulation) leaves its backward in the loop. A train network
  that is not a ``TrainOneStepCell`` (no optimizer given to ``Model``) is timed
  as one *forward* part.
* **the evaluation** (fit's validation, or ``Model.eval``): *forward* (the
  network's forward hooks) and *data, loss, metrics* — the time from the first
  ``on_eval_begin`` to the last ``on_eval_end`` less the callbacks' hooks and
  the forward in it.
* **the loop**: everything else, measured as the wall time less every part
  above — loading and moving batches, ``cb_params`` bookkeeping, calling the
  hooks, the other callbacks' ``__enter__``/``__exit__`` entered after the
  profiler, and the profiler's own work. So the shares add up to the wall
  time, nothing hidden.

On a GPU, torch runs kernels asynchronously, so a clock around a launch
measures the launch only. By default (``synchronize=None``) the profiler
synchronizes the device at each boundary of the step's parts when the
network is on CUDA, so each part is charged its GPU time; the price is that
the run loses the overlap of host and device work and gets slower. The
callbacks' hooks are not synchronized around: a callback that reads the loss
waits for the device itself, and that wait is its own cost.
``synchronize=False`` measures launches only (the run keeps its speed).

Under DDP each rank profiles itself; the header says which rank (``rank 0 of 2``).

Cost: nothing when it is not in the list (the trainer's dispatch is the plain
bound methods). In the list, about two clock reads per hook call, and torch's
forward and optimizer hooks per step: see docs/performance.md for the measured
figure.
"""
from __future__ import annotations

import html
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from nbcallback.train.callback import BACKWARD_HOOK, EVAL_HOOKS, LEGACY_OF, Callback, Dispatch, RunContext

__all__ = ["CallbackProfiler", "ProfileRow"]


@dataclass(frozen=True)
class ProfileRow:
    """One line of the profile.

    Attributes:
        kind: ``'callback'``, ``'step'`` (the training step), ``'evaluation'``
            (fit's validation or ``Model.eval``) or ``'loop'`` (the rest of the wall time).
        name: the callback (``'LossMonitor'``; ``'LossMonitor#2'`` for a second
            instance), ``'train step'``, ``'validation'``/``'eval'``, or ``'loop'``.
        part: the hook (``'on_train_step_end'``), or the part of the step or evaluation
            (``'forward'``, ``'backward'``, ``'optimizer'``, ``'data, loss, metrics'``), or
            ``'data, cb_params, dispatch, the rest'``.
        legacy: the MindSpore 1.x method the hook reaches through the base class
            (``'step_end'``), else ``None``.
        calls: how many times it ran (``0`` for the loop).
        total_s: its time in seconds.
        share: ``total_s`` over the run's wall time.
    """

    kind: str
    name: str
    part: str
    legacy: str | None
    calls: int
    total_s: float
    share: float

    @property
    def total_ms(self) -> float:
        return 1e3 * self.total_s

    @property
    def mean_us(self) -> float | None:
        """The mean time of one call in microseconds (``None`` without calls)."""
        return 1e6 * self.total_s / self.calls if self.calls else None

    @property
    def label(self) -> str:
        """``'LossMonitor.on_train_step_end (step_end)'``, ``'train step: forward'``."""
        if self.kind == "callback":
            return f"{self.name}.{self.part}" + (f" ({self.legacy})" if self.legacy else "")
        return f"{self.name}: {self.part}"


class CallbackProfiler(Callback):
    """Time the hooks of every callback, the training step's parts and the loop of a run.

    Args:
        summary: print the table when the run ends (for scripts; in a notebook
            show ``profiler`` instead). Default ``False``.
        synchronize: synchronize the GPU at the boundaries of the step's parts
            (``None``, the default: when the network is on CUDA). See the module
            docstring for what that costs.

    Attributes:
        rows: the :class:`ProfileRow` lines of the last run (live during a run),
            largest total first; their ``total_s`` add up to ``wall_s``.
        wall_s: the run's wall time in seconds (so far, during a run).
        run: ``'Model.train'``, ``'Model.fit'`` or ``'Model.eval'``.

    Works for ``Model.train``, ``Model.fit`` (the validation's hooks and
    forward are their own rows) and ``Model.eval``. A profiler reused for a new
    run starts over. Its own hooks run first at ``on_*_begin`` and last at
    ``on_*_end``, wherever it sits in the list; it changes no callback.
    """

    def __init__(self, summary: bool = False, synchronize: bool | None = None) -> None:
        super().__init__()
        if not isinstance(summary, bool):
            raise TypeError(f"For 'CallbackProfiler', 'summary' must be True or False, but got {summary!r}.")
        if synchronize is not None and not isinstance(synchronize, bool):
            raise TypeError(
                f"For 'CallbackProfiler', 'synchronize' must be None (automatic), True or False, but got {synchronize!r}."
            )
        self.summary = summary
        self.synchronize = synchronize
        self.run: str | None = None
        self._depth = 0
        self._reset()

    def _reset(self) -> None:
        self._start: float | None = None
        self._stop: float | None = None
        self._rank = (0, 1)
        self._epochs = 0
        self._training = False
        self._in_eval = False
        self._sync: Callable[[], None] | None = None
        self._labels: dict[int, str] = {}
        self._slots: dict[tuple[str, str], list[Any]] = {}  # (label, hook) -> [calls, seconds, legacy]
        self._parts: dict[tuple[str, str], list[float]] = {}  # (kind/name, part) -> [calls, seconds]
        self._handles: list[Any] = []
        self._hooked: set[int] = set()
        self._train_forward: list[float] = [0, 0.0]
        self._backward: list[float] = [0, 0.0]
        self._optimizer: list[float] = [0, 0.0]
        self._t_forward = 0.0
        self._t_backward: float | None = None
        self._hooks_in_backward = 0.0
        self._t_optimizer = 0.0
        self._eval_started = 0.0
        self._eval_before = 0.0

    # ------------------------------------------------------------------ the run's frame

    def __enter__(self) -> "CallbackProfiler":
        if self._depth == 0:
            self._reset()
            self.run = None
            self._start = time.perf_counter()
        self._depth += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        if self._depth > 0:
            return None
        self._stop = time.perf_counter()
        self._remove_hooks()
        if self.summary and self.run is not None:
            print(self)
        return None

    def label_of(self, callback: Callback) -> str | None:
        """The row label of ``callback`` in this run (``'LossMonitor'``, ``'LossMonitor#2'`` for a second one), or
        None when the profiler times none of its hooks (itself, or a callback without hooks)."""
        return self._labels.get(id(callback))

    def instrument_hooks(self, dispatch: Dispatch) -> Dispatch:
        """The run's table of hook calls with every other callback's hook methods timed.

        This profiler's own hooks move first (``*_begin``) or last (``*_end``).
        (:meth:`Callback.instrument_hooks`: called once the callbacks are entered.)
        """
        for callback in {id(cb): cb for entries in dispatch.values() for cb, _ in entries}.values():
            if callback is not self and id(callback) not in self._labels:
                name = type(callback).__name__
                taken = sum(1 for label in self._labels.values() if label.split("#")[0] == name)
                self._labels[id(callback)] = name if not taken else f"{name}#{taken + 1}"
        timed: Dispatch = {}
        for hook, entries in dispatch.items():
            mine = [(cb, method) for cb, method in entries if cb is self]
            others = [(cb, self._timed(cb, hook, method)) for cb, method in entries if cb is not self]
            timed[hook] = mine + others if hook.endswith("_begin") else others + mine
        return timed

    def _timed(self, callback: Callback, hook: str, method: Callable[[RunContext], None]) -> Callable[[RunContext], None]:
        key = (self._labels[id(callback)], hook)
        slot = self._slots.get(key)
        if slot is None:
            legacy = LEGACY_OF.get(hook)
            forwards = legacy is not None and getattr(type(callback), hook, None) is getattr(Callback, hook) and \
                getattr(type(callback), legacy, None) is not getattr(Callback, legacy)
            slot = self._slots[key] = [0, 0.0, legacy if forwards else None]
        clock = time.perf_counter
        if hook == BACKWARD_HOOK:  # runs inside the step's backward part: charged to the callback, not twice

            def timed_backward_hook(run_context: RunContext) -> None:
                start = clock()
                try:
                    method(run_context)
                finally:
                    spent = clock() - start
                    slot[0] += 1
                    slot[1] += spent
                    self._hooks_in_backward += spent

            return timed_backward_hook

        def timed_hook(run_context: RunContext) -> None:
            start = clock()
            try:
                method(run_context)
            finally:
                slot[0] += 1
                slot[1] += clock() - start

        return timed_hook

    # ------------------------------------------------------------------ its own hooks

    def on_train_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._training = True
        self.run = "Model.fit" if "valid_dataset" in cb_params else "Model.train"
        self._rank = (cb_params.get("rank_id", 0) or 0, cb_params.get("device_number", 1) or 1)
        network = cb_params.get("train_network")
        if network is None:
            return
        self._choose_sync(network)
        backbone = getattr(network, "network", None)
        optimizer = getattr(network, "optimizer", None)
        self._train_forward = self._parts.setdefault(("train step", "forward"), [0, 0.0])
        if backbone is not None and hasattr(optimizer, "register_step_pre_hook"):
            self._backward = self._parts.setdefault(("train step", "backward"), [0, 0.0])
            self._optimizer = self._parts.setdefault(("train step", "optimizer"), [0, 0.0])
            self._hook_forward(backbone)
            self._handles.append(optimizer.register_step_pre_hook(self._optimizer_begins))
            self._handles.append(optimizer.register_step_post_hook(self._optimizer_ends))
        else:
            self._hook_forward(network)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._epochs += 1

    def on_eval_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if not self._training:
            self.run = "Model.eval"
            self._rank = (cb_params.get("rank_id", 0) or 0, cb_params.get("device_number", 1) or 1)
        network = cb_params.get("eval_network")
        if network is not None:
            self._choose_sync(network)
            self._hook_forward(getattr(network, "network", network))
        self._in_eval = True
        self._eval_before = self._eval_accounted()
        self._eval_started = time.perf_counter()

    def on_eval_end(self, run_context: RunContext) -> None:
        region = time.perf_counter() - self._eval_started
        accounted = self._eval_accounted() - self._eval_before
        self._in_eval = False
        self._add(self._eval_name(), "data, loss, metrics", region - accounted)

    def on_train_end(self, run_context: RunContext) -> None:
        self._training = False

    # ------------------------------------------------------------------ step timing (torch hooks)

    def _choose_sync(self, network: Any) -> None:
        if self._sync is not None or self.synchronize is False:
            return
        device = next((p.device for p in network.parameters()), None)
        if device is not None and device.type == "cuda":
            self._sync = lambda: torch.cuda.synchronize(device)
        elif self.synchronize and torch.cuda.is_available():
            self._sync = torch.cuda.synchronize

    def _hook_forward(self, module: Any) -> None:
        if id(module) in self._hooked:
            return
        self._hooked.add(id(module))
        self._handles.append(module.register_forward_pre_hook(self._forward_begins))
        self._handles.append(module.register_forward_hook(self._forward_ends))

    def _forward_begins(self, module: Any, inputs: Any) -> None:
        if self._sync is not None:
            self._sync()
        self._t_forward = time.perf_counter()

    def _forward_ends(self, module: Any, inputs: Any, output: Any) -> None:
        if self._sync is not None:
            self._sync()
        now = time.perf_counter()
        grad = torch.is_grad_enabled()
        if grad and not self._in_eval:
            slot = self._train_forward
            slot[0] += 1
            slot[1] += now - self._t_forward
            self._t_backward = now
            self._hooks_in_backward = 0.0
        elif self._in_eval and not grad:
            self._add(self._eval_name(), "forward", now - self._t_forward)
        # Else: the network run from inside a callback; that time is the callback's.

    def _optimizer_begins(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._sync is not None:
            self._sync()
        now = time.perf_counter()
        if self._t_backward is not None:
            slot = self._backward
            slot[0] += 1
            slot[1] += now - self._t_backward - self._hooks_in_backward
            self._t_backward = None
        self._t_optimizer = now

    def _optimizer_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._sync is not None:
            self._sync()
        slot = self._optimizer
        slot[0] += 1
        slot[1] += time.perf_counter() - self._t_optimizer

    def _add(self, name: str, part: str, seconds: float) -> None:
        slot = self._parts.get((name, part))
        if slot is None:
            slot = self._parts[(name, part)] = [0, 0.0]
        slot[0] += 1
        slot[1] += seconds

    def _eval_name(self) -> str:
        return "validation" if self._training else "eval"

    def _eval_accounted(self) -> float:
        """Seconds so far in the callbacks' eval hooks and the evaluation's forward."""
        hooks = sum(slot[1] for (_, hook), slot in self._slots.items() if hook in EVAL_HOOKS)
        forward = self._parts.get((self._eval_name(), "forward"), [0, 0.0])[1]
        return hooks + forward

    def _remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._hooked = set()

    # ------------------------------------------------------------------ the results

    @property
    def wall_s(self) -> float:
        if self._start is None:
            return 0.0
        return (self._stop if self._stop is not None else time.perf_counter()) - self._start

    @property
    def rows(self) -> list[ProfileRow]:
        wall = self.wall_s
        share = (lambda seconds: seconds / wall) if wall > 0 else (lambda seconds: 0.0)
        rows = [
            ProfileRow("callback", label, hook, legacy, calls, seconds, share(seconds))
            for (label, hook), (calls, seconds, legacy) in self._slots.items()
            if calls
        ]
        rows += [
            ProfileRow("step" if name == "train step" else "evaluation", name, part, None, int(calls), seconds,
                       share(seconds))
            for (name, part), (calls, seconds) in self._parts.items()
            if calls
        ]
        if self._start is not None:
            rest = wall - sum(row.total_s for row in rows)
            rows.append(ProfileRow("loop", "loop", "data, cb_params, dispatch, the rest", None, 0, rest, share(rest)))
        return sorted(rows, key=lambda row: -row.total_s)

    def _header(self) -> str:
        rank, world = self._rank
        steps = int(self._parts.get(("train step", "forward"), [0])[0])
        what = f"{self._epochs} epoch{'s' if self._epochs != 1 else ''}, {steps} steps, " if self.run != "Model.eval" else ""
        running = ", running" if self._start is not None and self._stop is None else ""
        return (f"CallbackProfiler: {self.run or 'a run'} on rank {rank} of {world}: {what}"
                f"wall {self.wall_s:.3f} s{running}")

    def __str__(self) -> str:
        if self._start is None:
            return "CallbackProfiler: no run profiled yet"
        return format_text(self._header(), self.rows, self.wall_s)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's text view (a terminal, a saved notebook read as text) is the same as ``print``."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        if self._start is None:
            return "<p>CallbackProfiler: no run profiled yet</p>"
        return format_html(self._header(), self.rows, self.wall_s)


def _mean(row: ProfileRow) -> str:
    return "" if row.mean_us is None else f"{row.mean_us:.1f}"


def format_text(header: str, rows: list[ProfileRow], wall_s: float) -> str:
    """The profile as a text table: one line per row, then the total (the wall time)."""
    width = max([len(row.label) for row in rows] + [len("total (wall time)")])
    lines = [header, f"{'':{width}}  {'calls':>7}  {'total ms':>10}  {'mean µs':>10}  {'share':>7}"]
    for row in rows:
        calls = str(row.calls) if row.calls else ""
        lines.append(f"{row.label:{width}}  {calls:>7}  {row.total_ms:10.2f}  {_mean(row):>10}  "
                     f"{100 * row.share:6.1f}%")
    lines.append(f"{'total (wall time)':{width}}  {'':>7}  {1e3 * wall_s:10.2f}  {'':>10}  {100.0:6.1f}%")
    return "\n".join(lines)


def format_html(header: str, rows: list[ProfileRow], wall_s: float) -> str:
    """The profile as an HTML table, with a bar for each row's share."""
    cell = "style='text-align:right;padding-left:1em'"
    body = []
    for row in rows:
        width = max(0.0, min(100.0, 100 * row.share))
        bar = (f"<div style='background:currentColor;opacity:.35;height:.7em;width:{width:.1f}%;"
               "min-width:1px'></div>")
        label = html.escape(row.label)
        if row.kind == "callback":
            label = f"<code>{label}</code>"
        body.append(
            f"<tr><td style='text-align:left'>{label}</td><td {cell}>{row.calls or ''}</td>"
            f"<td {cell}>{row.total_ms:.2f}</td><td {cell}>{_mean(row)}</td>"
            f"<td {cell}>{100 * row.share:.1f}%</td><td style='width:8em'>{bar}</td></tr>"
        )
    head = (f"<tr><th style='text-align:left'>what</th><th {cell}>calls</th><th {cell}>total ms</th>"
            f"<th {cell}>mean µs</th><th {cell}>share</th><th></th></tr>")
    total = (f"<tr><th style='text-align:left'>total (wall time)</th><th></th><th {cell}>{1e3 * wall_s:.2f}</th>"
             f"<th></th><th {cell}>100.0%</th><th></th></tr>")
    return (f"<table class='nbcallback-callback-profiler'><caption style='text-align:left'>{html.escape(header)}"
            f"</caption>{head}{''.join(body)}{total}</table>")
