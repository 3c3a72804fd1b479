"""Graph mode: the training step captured once with ``torch.compile`` and replayed on every batch.

``set_context(mode=GRAPH_MODE)`` (MindSpore's switch, :mod:`nbcallback.context`)
or ``Model(..., graph_mode=True)`` turns it on; ``Model(graph_mode=False)`` keeps
one model eager whatever the context says. At the start of each ``train``/``fit``
run :class:`GraphMode` chooses the step function once:

* the captured step, :class:`GraphStep`: forward, loss, backward and optimizer step
  in one compiled function (``torch.compile``; on CUDA ``mode="reduce-overhead"``,
  i.e. CUDA graphs). The callbacks still run around it on every step, with the same
  ``cb_params``; the loss it returns is a 0-d tensor that stays on the device, as in
  eager mode. The first step pays the compilation; its time is printed once.
* or the eager step (``TrainOneStepCell`` itself), with one warning naming the reason,
  where the captured step could give a different result or cannot run: no optimizer
  (nothing to capture), float16 loss scaling (its overflow check reads the device),
  DDP, a callback acting inside the step (between backward and optimizer step),
  ``torch.compile`` unsupported on this Python/platform, or inductor on a CPU without
  a C++ compiler.

What the captured step takes without a wrong result:

* **learning-rate changes** (LR schedulers, ``ReduceLROnPlateau``, the Dashboard's lr
  box): each parameter group's float ``lr`` is handed to the compiled code as a 0-d
  tensor (filled when the float changes), so a new rate applies at the next step
  with no recompilation; outside the step the group holds the user's float again.
* **a new shape or dtype** (the smaller last batch with ``drop_remainder=False``):
  ``torch.compile`` recompiles once (then treats the batch size as dynamic).
* **a callback that edits the network** (freezes a layer, swaps a module): the
  compiled code's guards see it and recompile. After ``torch._dynamo.config.recompile_limit``
  recompilations, PyTorch runs that code eagerly and says so in its log.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch
from torch import nn

from nbcallback.context import GRAPH_MODE, get_context
from nbcallback.train.callback import TRAIN_HOOKS, CallbackManager
from nbcallback.train.cells import TrainOneStepCell

__all__ = ["GraphMode", "GraphStep", "compile_options", "uses_cuda_graphs", "eager_reason", "GraphModeWarning"]

#: The hooks the loop calls outside the step; any other training hook runs inside it.
_OUTSIDE_STEP_HOOKS = frozenset(
    {"on_train_begin", "on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
     "on_train_epoch_end", "on_train_end"}
)
_CXX_COMPILERS = ("g++", "c++", "clang++", "cl")


class GraphModeWarning(UserWarning):
    """Graph mode was asked for and this run trains eagerly; the message says why."""


def compile_options(device: torch.device, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``torch.compile`` options of the captured step on ``device``.

    The user's options win. Otherwise inductor with its defaults, plus
    ``mode="reduce-overhead"`` on CUDA: the step is replayed as CUDA graphs, one
    launch instead of one per kernel (what a small model on a GPU is bound by).
    """
    chosen = dict(options or {})
    if device.type == "cuda" and chosen.get("backend", "inductor") == "inductor" and "mode" not in chosen \
            and "options" not in chosen:
        chosen["mode"] = "reduce-overhead"
    return chosen


def uses_cuda_graphs(device: torch.device, options: Mapping[str, Any]) -> bool:
    """Whether the compiled step replays CUDA graphs (its outputs then live in the graphs' memory pool)."""
    if device.type != "cuda":
        return False
    if options.get("backend") == "cudagraphs":
        return True
    inner = options.get("options") or {}
    return options.get("backend", "inductor") == "inductor" and (
        options.get("mode") in ("reduce-overhead", "max-autotune") or bool(inner.get("triton.cudagraphs"))
    )


def _dynamo_supported() -> bool:
    try:
        return bool(torch._dynamo.is_dynamo_supported())
    except Exception:  # noqa: BLE001 - any failure to load dynamo means: not available here
        return False


def _has_cxx_compiler() -> bool:
    return bool(os.environ.get("CXX")) or any(shutil.which(name) for name in _CXX_COMPILERS)


def eager_reason(
    network: nn.Module,
    device: torch.device,
    options: Mapping[str, Any],
    manager: CallbackManager | None = None,
    distributed: bool = False,
) -> str | None:
    """Why this run cannot use the captured step (``None``: it can).

    Args:
        network: the train network (``Model.train_network``).
        device: where it trains.
        options: the ``torch.compile`` options (:func:`compile_options`).
        manager: the run's callbacks (entered), to find hooks that act inside the step.
        distributed: whether the run is distributed (DDP).
    """
    if not isinstance(network, TrainOneStepCell):
        return "the model has no optimizer, so there is no training step to capture"
    if network._scaler is not None:
        return ("float16 loss scaling (amp_level 'O1' on CUDA) checks for overflow on the host at every step; "
                "use amp_level='O2' (bfloat16), which graph mode captures")
    if distributed:
        return "DDP runs are not captured here: their gradient all-reduce runs inside backward"
    if network.backward_end is not None:
        return ("a callback acts inside the training step (on_train_backward_end: gradient clipping, accumulation), "
                "between backward and the optimizer step, where a captured step cannot call it")
    if manager is not None:
        inside = sorted(hook for hook in TRAIN_HOOKS if hook not in _OUTSIDE_STEP_HOOKS and manager.runner(hook))
        if inside:
            return (f"a callback acts inside the training step ({', '.join(inside)}), between backward and the "
                    "optimizer step, where a captured step cannot stop")
    if not _dynamo_supported():
        return (f"torch.compile is not supported with Python {sys.version.split()[0]} on {sys.platform} by "
                f"torch {torch.__version__}")
    if device.type == "cpu" and options.get("backend", "inductor") == "inductor" and not _has_cxx_compiler():
        return ("torch.compile's inductor backend needs a C++ compiler on the CPU and none was found (g++, clang++ "
                "or $CXX); install one, or pass Model(graph_mode={'backend': 'aot_eager'})")
    return None


def _with_own_code(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` bound to a copy of its code object.

    torch.compile keeps its compiled code and counts recompilations per code object
    (``recompile_limit``, 8): sharing one across models would make a notebook's ninth
    ``Model`` train eagerly. Each step gets its own cache, freed with the step.
    """
    func = method.__func__  # type: ignore[attr-defined]
    copy = types.FunctionType(func.__code__.replace(), func.__globals__, func.__name__, func.__defaults__,
                              func.__closure__)
    return types.MethodType(copy, method.__self__)  # type: ignore[attr-defined]


@dataclass
class _LearningRate:
    """One parameter group's learning rate as the tensor the compiled step reads."""

    tensor: torch.Tensor
    value: Any


class GraphStep:
    """The captured training step: ``step(*inputs)`` trains on one batch and returns the detached loss.

    Same contract as :meth:`TrainOneStepCell.forward` (the loss is a 0-d tensor on the
    device; reading it is what synchronises), computed by one ``torch.compile``\\ d
    function. Built once per ``Model`` and reused by its later runs.

    Args:
        cell: the model's :class:`TrainOneStepCell`.
        device: where it trains.
        options: ``torch.compile`` options (:func:`compile_options`).
    """

    def __init__(self, cell: TrainOneStepCell, device: torch.device, options: Mapping[str, Any]) -> None:
        self.cell = cell
        self.options = dict(options)
        self._device = device
        self._cuda_graphs = uses_cuda_graphs(device, self.options)
        self._compiled = torch.compile(_with_own_code(self._step), **self.options)
        self._rates: list[_LearningRate] = []
        self.compile_seconds: float | None = None

    def _step(self, *inputs: Any) -> torch.Tensor:
        cell = self.cell
        loss = cell.compute_loss(inputs)
        loss.backward()
        cell.optimizer.step()
        return loss.detach()

    def _lr_tensors(self, groups: list[dict[str, Any]]) -> list[_LearningRate]:
        if len(self._rates) != len(groups):  # first call, or add_param_group
            self._rates = [_LearningRate(torch.tensor(float(g["lr"]), device=self._device), float(g["lr"]))
                           for g in groups]
        return self._rates

    def __call__(self, *inputs: Any) -> torch.Tensor:
        optimizer = self.cell.optimizer
        groups = optimizer.param_groups
        rates = self._lr_tensors(groups)
        saved = [group["lr"] for group in groups]
        for group, rate, lr in zip(groups, rates, saved):
            if isinstance(lr, torch.Tensor):  # the user's own tensor: compiled code reads it as it is
                continue
            if lr != rate.value:
                rate.tensor.fill_(lr)
                rate.value = lr
            group["lr"] = rate.tensor
        optimizer.zero_grad(set_to_none=True)
        first = self.compile_seconds is None
        start = time.perf_counter() if first else 0.0
        try:
            if self._cuda_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            loss = self._compiled(*inputs)
        except torch._dynamo.exc.TorchDynamoException as error:
            summary = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise RuntimeError(
                f"Graph mode: torch.compile could not run the captured training step ({type(error).__name__}: "
                f"{summary}). Train this model eagerly: Model(..., graph_mode=False), or "
                "set_context(mode=PYNATIVE_MODE) before Model.train."
            ) from error
        finally:
            for group, lr in zip(groups, saved):
                group["lr"] = lr
        if self._cuda_graphs:
            # The graphs' next replay overwrites their outputs; callbacks keep losses for later.
            loss = loss.clone()
        if first:
            self.compile_seconds = time.perf_counter() - start
            backend = self.options.get("backend", "inductor")
            mode = self.options.get("mode")
            print(f"Graph mode: the training step was captured and compiled in {self.compile_seconds:.1f} s "
                  f"(torch.compile, backend '{backend}'{f', mode {mode!r}' if mode else ''}); "
                  "the next steps replay it.", flush=True)
        return loss


class GraphMode:
    """A ``Model``'s choice of step function: captured or eager, decided once per run.

    Args:
        setting: ``Model(graph_mode=...)``: ``None`` follows ``set_context(mode=...)``,
            ``True``/``False`` decide for this model, a dict of ``torch.compile`` options
            turns graph mode on with them (``{"backend": "aot_eager"}``, ``{"mode": "max-autotune"}``).
        device: where the model trains.

    Raises:
        TypeError: ``setting`` is of another type.
    """

    def __init__(self, setting: bool | Mapping[str, Any] | None, device: torch.device) -> None:
        if setting is not None and not isinstance(setting, (bool, Mapping)):
            raise TypeError(
                "For 'Model', 'graph_mode' must be None (follow set_context(mode=...)), True/False, or a dict of "
                f"torch.compile options (e.g. {{'backend': 'aot_eager'}}), but got {type(setting).__name__}."
            )
        self.setting = setting
        self.device = device
        self._captured: GraphStep | None = None

    @property
    def captured(self) -> GraphStep | None:
        """The captured step of this model's last graph-mode run (its ``compile_seconds``), else ``None``."""
        return self._captured

    def wanted(self) -> bool:
        """Whether graph mode is asked for now (the Model's argument, else the context)."""
        if self.setting is None:
            return get_context("mode") == GRAPH_MODE
        return self.setting is not False

    def step(self, network: nn.Module, manager: CallbackManager | None = None,
             distributed: bool = False) -> Callable[..., Any]:
        """The step function of a run that starts now: ``network`` itself, or the captured step.

        Warns once (:class:`GraphModeWarning`) when graph mode is asked for and this run cannot use it.
        """
        if not self.wanted():
            return network
        options = compile_options(self.device, self.setting if isinstance(self.setting, Mapping) else None)
        reason = eager_reason(network, self.device, options, manager, distributed)
        if reason is not None:
            warnings.warn(f"Graph mode: this run trains eagerly, because {reason}.", GraphModeWarning, stacklevel=5)
            return network
        assert isinstance(network, TrainOneStepCell)
        if self._captured is None or self._captured.cell is not network or self._captured.options != options:
            self._captured = GraphStep(network, self.device, options)
        return self._captured
