"""``HookTrace``: the callback mechanism at work — which hooks a run called, in order, and what they saw.

An nbcallback addition (MindSpore has no such callback). Put it last in the
list, so that what the other callbacks did in a hook shows at that hook::

    trace = HookTrace()
    model.fit(2, train, valid, callbacks=[LossMonitor(300), TimeMonitor(), trace])
    print(trace)          # an indented outline: epochs, steps, the validation inside fit
    trace                 # the same as an HTML table in a notebook
    trace.hooks           # plain data: one HookCall per hook call kept

    print(HookTrace.explain([LossMonitor(), TimeMonitor()], mode="fit"))  # the order, without running

Each kept hook call records the phase (``train``, ``validation`` inside
``fit``, ``eval`` for ``Model.eval``), the callbacks of the run that act on
it (``LossMonitor (step_end)``: reached through MindSpore's legacy name; in
fit's validation only the callbacks ``Model.fit`` calls there; the trace
itself is not listed), and the
``cb_params`` fields that changed since the previous hook. Reading
``net_outputs`` as a number synchronises with a GPU, so the trace is for
learning, not for long runs on a GPU. To stay readable, each epoch and
each evaluation keeps its first and last ``keep_steps`` steps and folds the
rest into a count (``… 934 more steps …``).
"""
from __future__ import annotations

import collections
import html
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from nbcallback.train.callback import (
    EVAL_HOOKS,
    LEGACY_OF,
    TRAIN_HOOKS,
    Callback,
    RunContext,
    _is_noop,
    normalize_callbacks,
    receives_fit_eval_hooks,
)

__all__ = ["HookTrace", "HookCall", "Folded"]

#: The cb_params fields a trace follows by default.
FIELDS = ("mode", "epoch_num", "batch_num", "cur_epoch_num", "cur_step_num", "net_outputs", "metrics", "eval_results")
_STEP_HOOKS = {"on_train_step_begin", "on_train_step_end", "on_eval_step_begin", "on_eval_step_end"}


@dataclass(frozen=True)
class HookCall:
    """One hook call of a run.

    Attributes:
        hook: the hook's name (``'on_train_step_end'``).
        phase: ``'train'``, ``'validation'`` (the evaluation inside ``fit``) or ``'eval'`` (``Model.eval``).
        epoch: the training epoch (``cur_epoch_num``), ``None`` in ``Model.eval``.
        step: for step hooks, the step within its epoch or evaluation (1-based), else ``None``.
        callbacks: the callbacks that act on this hook, in call order, ``'Name (legacy)'``
            where the base class forwards to a legacy method (the trace itself left out).
        changes: the followed ``cb_params`` fields that changed since the previous hook call,
            as plain values (a 1-element tensor as a float), plus ``stop_requested: True``
            when a stop was requested since.
    """

    hook: str
    phase: str
    epoch: int | None
    step: int | None
    callbacks: tuple[str, ...]
    changes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Folded:
    """Steps left out of the trace: ``count`` steps of ``phase`` in ``epoch``."""

    phase: str
    epoch: int | None
    count: int


class HookTrace(Callback):
    """Record the hook calls of ``Model.train`` / ``fit`` / ``eval``; show them as text or HTML.

    Args:
        keep_steps: steps kept at the start and at the end of each epoch and each
            evaluation (default 2); the steps between are counted, not kept.
            ``0`` keeps no step.
        fields: the ``cb_params`` fields to follow (default: mode, epoch_num,
            batch_num, cur_epoch_num, cur_step_num, net_outputs, metrics,
            eval_results).

    Attributes:
        hooks: the :class:`HookCall` records kept, in call order.
        entries: ``hooks`` with a :class:`Folded` marker where steps were left out.
    """

    def __init__(self, keep_steps: int = 2, fields: Sequence[str] = FIELDS) -> None:
        super().__init__()
        if isinstance(keep_steps, bool) or not isinstance(keep_steps, int) or keep_steps < 0:
            raise ValueError(f"For 'HookTrace', 'keep_steps' must be an int >= 0, but got {keep_steps!r}.")
        if isinstance(fields, str) or not all(isinstance(name, str) for name in fields):
            raise TypeError(f"For 'HookTrace', 'fields' must be a list of cb_params names, but got {fields!r}.")
        self.keep_steps = keep_steps
        self.fields = tuple(fields)
        self.entries: list[HookCall | Folded] = []
        self._training = False
        self._seen: dict[str, Any] = {}
        self._stop_seen = False
        self._pass = _Pass(keep_steps)

    @property
    def hooks(self) -> list[HookCall]:
        return [entry for entry in self.entries if isinstance(entry, HookCall)]

    # The trainer's hooks, each recorded (none of them forwards to a legacy name).
    def on_train_begin(self, run_context: RunContext) -> None:
        self._record("on_train_begin", run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._record("on_train_epoch_begin", run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self._record("on_train_step_begin", run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self._record("on_train_step_end", run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._record("on_train_epoch_end", run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self._record("on_train_end", run_context)

    def on_eval_begin(self, run_context: RunContext) -> None:
        self._record("on_eval_begin", run_context)

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        self._record("on_eval_epoch_begin", run_context)

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        self._record("on_eval_step_begin", run_context)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        self._record("on_eval_step_end", run_context)

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        self._record("on_eval_epoch_end", run_context)

    def on_eval_end(self, run_context: RunContext) -> None:
        self._record("on_eval_end", run_context)

    # ------------------------------------------------------------------ recording

    def _record(self, hook: str, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if hook == "on_train_begin" or (hook == "on_eval_begin" and not self._training):
            self.entries, self._seen, self._stop_seen = [], {}, False
            self._training = hook == "on_train_begin"
        phase = "eval" if not self._training else "validation" if hook.startswith("on_eval") else "train"
        step = None
        if hook in _STEP_HOOKS:
            step = cb_params.get("cur_step_num", 0)
            if phase == "train" and cb_params.get("batch_num"):
                step = (step - 1) % cb_params["batch_num"] + 1
        call = HookCall(
            hook=hook,
            phase=phase,
            epoch=cb_params.get("cur_epoch_num") if self._training else None,
            step=step,
            callbacks=_acting(cb_params.get("list_callback") or [self], hook, phase),
            changes=self._changes(cb_params, run_context),
        )
        if step is None:
            self.entries.extend(self._pass.flush())
            self.entries.append(call)
        else:
            self._pass.add(call)
        if hook == "on_train_end" or (hook == "on_eval_end" and not self._training):
            self._training = False

    def _changes(self, cb_params: Mapping[str, Any], run_context: RunContext) -> dict[str, Any]:
        changes = {}
        for name in self.fields:
            if name not in cb_params:
                if self._seen.pop(name, _MISSING) is not _MISSING:
                    changes[name] = None
                continue
            value = _plain(cb_params[name])
            if self._seen.get(name, _MISSING) != value:
                self._seen[name] = value
                changes[name] = value
        if run_context.get_stop_requested() and not self._stop_seen:
            self._stop_seen = True
            changes["stop_requested"] = True
        return changes

    # ------------------------------------------------------------------ showing

    def __str__(self) -> str:
        lines = [indent * "  " + text + (f"   {_show(changes)}" if changes else "") for indent, text, changes in
                 self._outline()]
        return "\n".join(lines) or "(no hook recorded yet)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's text view (a terminal, a saved notebook read as text) is the same as ``print``."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        rows = []
        for indent, text, changes in self._outline():
            hook, _, callbacks = text.partition(": ")
            style = f"padding-left:{0.4 + 1.2 * indent:.1f}em;text-align:left;white-space:nowrap"
            label = f"<code>{html.escape(hook)}</code>" if hook.startswith("on_") else f"<i>{html.escape(hook)}</i>"
            shown = f"<code>{html.escape(_show(changes))}</code>" if changes else ""
            rows.append(
                f"<tr><td style='{style}'>{label}</td><td style='text-align:left'>{html.escape(callbacks)}</td>"
                f"<td style='text-align:left'>{shown}</td></tr>"
            )
        head = "<tr><th style='text-align:left'>hook</th><th style='text-align:left'>callbacks acting</th>" \
               "<th style='text-align:left'>cb_params changed</th></tr>"
        return f"<table class='nbcallback-hook-trace'>{head}{''.join(rows)}</table>"

    def _outline(self) -> list[tuple[int, str, Mapping[str, Any]]]:
        """``(indent, text, changes)`` lines: epochs, validations and steps as headings, then their hooks.

        ``text`` is the heading or ``hook: callbacks``; the ``cb_params`` changes stay apart (the text view appends
        them, the HTML view gives them their own column).
        """
        lines: list[tuple[int, str, Mapping[str, Any]]] = []
        epoch, in_pass, step = None, None, None
        for entry in list(self.entries) + list(self._pass.peek()):
            depth = 0
            if entry.phase != "eval" and entry.epoch is not None and not (
                isinstance(entry, HookCall) and entry.hook in ("on_train_begin", "on_train_end")
            ):
                if entry.epoch != epoch:
                    epoch, in_pass, step = entry.epoch, None, None
                    lines.append((0, f"epoch {epoch}", {}))
                depth = 1
            if entry.phase in ("validation", "eval"):
                if in_pass != (entry.phase, entry.epoch):
                    in_pass, step = (entry.phase, entry.epoch), None
                    if entry.phase == "validation":
                        lines.append((depth, "validation (inside fit)", {}))
                if entry.phase == "validation":
                    depth += 1
            elif in_pass is not None:
                in_pass, step = None, None
            if isinstance(entry, Folded):
                noun = "step" if entry.count == 1 else "steps"
                lines.append((depth, f"… {entry.count} more {noun} …", {}))
                step = None
                continue
            if entry.step is not None:
                if entry.step != step:
                    step = entry.step
                    lines.append((depth, f"step {step}", {}))
                depth += 1
            callbacks = ", ".join(entry.callbacks) or "-"
            lines.append((depth, f"{entry.hook}: {callbacks}", entry.changes))
        return lines

    # ------------------------------------------------------------------ explaining without running

    @staticmethod
    def explain(callbacks: Callback | Iterable[Callback] | None, mode: str = "train") -> str:
        """The hook order of one epoch of ``mode`` (``'train'``, ``'fit'`` or ``'eval'``), without running.

        Lists, for each hook the trainer calls, the callbacks that act on it, and
        notes where the base class forwards an ``on_*`` hook to a legacy name
        the callback overrides (``step_end ← on_train_step_end``). Steps stand for
        every step of the epoch; ``fit`` shows the validation after the epoch's
        steps, with only the callbacks ``Model.fit`` calls there.
        """
        if mode not in ("train", "fit", "eval"):
            raise ValueError(f"For 'HookTrace.explain', 'mode' must be 'train', 'fit' or 'eval', but got {mode!r}.")
        listed = normalize_callbacks(callbacks)

        def block(hooks: Sequence[str], phase: str, depth: int) -> list[str]:
            out = []
            for hook in hooks:
                if hook.endswith("step_begin"):
                    out.append("  " * depth + "for each step:")
                inner = depth + 1 if "_step_" in hook else depth
                acting = _acting(listed, hook, phase, legacy_arrow=True)
                out.append("  " * inner + f"{hook}: {', '.join(acting) or '-'}")
            return out

        train_open, train_close = TRAIN_HOOKS[:4], TRAIN_HOOKS[4:]
        if mode == "eval":
            return "\n".join(["Model.eval"] + block(EVAL_HOOKS, "eval", 1))
        lines = [f"Model.{mode}"] + block(train_open[:1], "train", 1) + ["  for each epoch:"]
        lines += block(train_open[1:], "train", 2)
        if mode == "fit":
            lines += ["    validation (when due):"] + block(EVAL_HOOKS, "validation", 3)
        lines += block(train_close[:1], "train", 2) + block(train_close[1:], "train", 1)
        return "\n".join(lines)


class _Pass:
    """The steps of the current epoch or evaluation: the first ``keep`` kept, the last ``keep`` held back."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._reset()

    def _reset(self) -> None:
        self.head: list[list[HookCall]] = []
        self.tail: collections.deque[list[HookCall]] = collections.deque()
        self.folded = 0
        self.key: tuple[str, int | None] | None = None
        self.step: int | None = None
        self.group: list[HookCall] | None = None

    def add(self, call: HookCall) -> None:
        """Keep ``call`` with its step, or count the step as folded."""
        self.key = (call.phase, call.epoch)
        if call.step == self.step:
            if self.group is not None:
                self.group.append(call)
            return
        self.step, self.group = call.step, [call]
        if len(self.head) < self.keep:
            self.head.append(self.group)
            return
        self.tail.append(self.group)
        if len(self.tail) > self.keep:
            if self.tail.popleft() is self.group:
                self.group = None
            self.folded += 1

    def peek(self) -> list[HookCall | Folded]:
        """What the pass holds so far: the kept steps' calls, with a marker for the folded ones."""
        if self.key is None:
            return []
        phase, epoch = self.key
        out: list[HookCall | Folded] = [call for group in self.head for call in group]
        if self.folded:
            out.append(Folded(phase, epoch, self.folded))
        out += [call for group in self.tail for call in group]
        return out

    def flush(self) -> list[HookCall | Folded]:
        out = self.peek()
        self._reset()
        return out


_MISSING = object()


def _acting(callbacks: Sequence[Callback], hook: str, phase: str, legacy_arrow: bool = False) -> tuple[str, ...]:
    """The callbacks ``Model`` calls on ``hook`` in ``phase`` that do something there, as labels."""
    if phase == "validation":
        callbacks = [cb for cb in callbacks if receives_fit_eval_hooks(cb)]
    labels = []
    for callback in callbacks:
        if isinstance(callback, HookTrace) or _is_noop(callback, hook):  # the observer is not listed
            continue
        name = type(callback).__name__
        legacy = LEGACY_OF[hook]
        forwarded = getattr(type(callback), hook) is getattr(Callback, hook)  # the base's: it calls the legacy name
        if forwarded and getattr(type(callback), legacy) is not getattr(Callback, legacy):
            name += f" ({legacy} ← {hook})" if legacy_arrow else f" ({legacy})"
        labels.append(name)
    return tuple(labels)


def _plain(value: Any) -> Any:
    """A value as the trace shows it: tensors as floats or shapes, containers element by element."""
    if hasattr(value, "shape") and hasattr(value, "numel"):
        if value.numel() == 1:
            return round(float(value), 4)
        return "tensor[" + "×".join(str(size) for size in value.shape) + "]"
    if isinstance(value, (tuple, list)):
        return tuple(_plain(item) for item in value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, float):
        return round(value, 4)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return type(value).__name__


def _show(changes: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{name}: {value!r}" for name, value in changes.items()) + "}"
