"""``Model``: MindSpore's high-level trainer (``train`` / ``fit`` / ``eval`` / ``predict``) on PyTorch.

The loop, the order of the callback hooks and the keys of ``cb_params`` follow
MindSpore 2.3; see :class:`Model` for the few places where nbcallback chooses
differently and why.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy
import functools
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from nbcallback.train import distributed
from nbcallback.train.callback import (
    INTERNAL_CALLBACK_NAMES,
    Callback,
    CallbackManager,
    CallbackParams,
    RunContext,
    normalize_callbacks,
    receives_fit_eval_hooks,
)
from nbcallback.train.cells import TrainOneStepCell, WithEvalCell, WithLossCell
from nbcallback.train.graph import GraphMode
from nbcallback.train.metrics import Loss, get_metrics
from nbcallback.train.prefetch import prefetch_to_device

__all__ = ["Model", "INTERNAL_CALLBACK_NAMES"]

_LEGACY_NAMES = frozenset({"begin", "end", "epoch_begin", "epoch_end", "step_begin", "step_end"})
_ALLOWED_KWARGS = ("loss_scale_manager", "keep_batchnorm_fp32", "boost_config_dict", "acc_level")
_AMP_LEVELS = ("O0", "O1", "O2", "O3", "auto")


def _check_int(name: str, value: Any, minimum: int, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For '{where}', the argument '{name}' must be int, but got {type(value).__name__}.")
    if value < minimum:
        raise ValueError(f"For '{where}', the argument '{name}' must be >= {minimum}, but got {value}.")


def dataset_size(dataset: Any) -> int:
    """Steps per epoch: ``dataset.get_dataset_size()`` when it exists, else ``len(dataset)``."""
    size_of = getattr(dataset, "get_dataset_size", None)
    if callable(size_of):
        return int(size_of())
    try:
        return len(dataset)
    except TypeError:
        raise TypeError(
            f"The dataset {type(dataset).__name__} has neither get_dataset_size() nor len(); Model needs "
            "the number of steps per epoch. Use nbcallback.dataset, a torch DataLoader, or a list of batches."
        ) from None


def _plain(value: Any) -> Any:
    """Metric results as plain Python numbers, so printed dicts read ``{'accuracy': 0.9202}``."""
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else value.tolist()
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if hasattr(value, "tolist") and not isinstance(value, (int, float)):
        return value.tolist()
    return value


class Model:
    """Train, evaluate and predict with callbacks, as MindSpore's ``mindspore.train.Model`` does.

    Args:
        network: the ``torch.nn.Module`` to train.
        loss_fn: the loss (module or function ``(logits, labels) -> scalar``). ``None``
            with an optimizer means the network returns the loss itself.
        optimizer: a ``torch.optim.Optimizer`` over ``network``'s parameters; ``None``
            makes ``train`` run forward passes only.
        metrics: a set of names (``{'accuracy'}``; also ``'loss'``, ``'top_1_accuracy'``,
            ``'top_5_accuracy'``, ``'precision'``, ``'recall'``, ``'F1'``, ``'mae'``,
            ``'mse'``) or a ``{name: metric}`` dict (``{'mae': MAE()}``) of objects with
            ``clear()/update(*inputs)/eval()``. A list, tuple or string is refused
            (TypeError), as in MindSpore. Needed by ``eval`` and by ``fit``'s validation.
        eval_network: a module returning ``(loss, logits, labels)`` for the metrics;
            by default one is built from ``network`` and ``loss_fn``.
        eval_indexes: with a custom ``eval_network``, the positions of loss, logits
            and labels in its output (a list of 3 ints; a tuple is refused, as in
            MindSpore), or ``None`` to pass every output to every metric.
        amp_level: ``'O0'`` full precision (default); ``'O1'`` autocast (float16 with
            loss scaling on CUDA, bfloat16 on CPU); ``'O2'`` autocast in bfloat16 (on GPUs
            without bfloat16: float16 with loss scaling); ``'auto'`` is ``'O1'`` on CUDA
            and ``'O0'`` on CPU. ``'O3'`` (everything in half precision) is refused.
        boost_level: accepted for MindSpore compatibility; only ``'O0'`` exists here.
        device: where to train (``'cpu'``, ``'cuda'``, ``'cuda:1'``, a ``torch.device``).
            ``None`` picks the device the network already lives on, else CUDA when
            available, else the CPU. The network is moved there; batches are moved
            step by step without blocking.
        compile: ``True`` compiles ``network``'s forward with ``torch.compile``
            (``nn.Module.compile``: in place, so parameter names and checkpoints
            stay the same); a dict passes its options (``{"backend": "eager"}``,
            ``{"mode": "max-autotune"}``). The first steps pay the compilation.
            An nbcallback extension; off by default, because on a small CPU model
            compiling costs more than it saves.
        prefetch: ``True`` copies each batch to the device one batch ahead,
            from pinned memory on a side CUDA stream (plain copies on another
            non-CPU device), so that the copy can overlap the step before; see
            :mod:`nbcallback.train.prefetch`. Off by default: on the tutorial's
            workload (a small MLP, batches of 64) a GPU step is bound by kernel
            launches and prefetching made the epoch slower (the GPU table
            of docs/performance.md). It is meant for large batches, whose copy a busy GPU can hide
            (not measured here). Batches already on the device pass through. An
            nbcallback extension.
        graph_mode: ``None`` (default) follows ``set_context(mode=...)``: eager
            (``PYNATIVE_MODE``, the default) or, in ``GRAPH_MODE``, the whole training
            step (forward, loss, backward, optimizer step) captured once with
            ``torch.compile`` (CUDA graphs on a GPU) while every callback still runs
            every step; ``True``/``False`` decide for this model; a dict turns it on
            with those ``torch.compile`` options (``{"backend": "aot_eager"}``). Where
            a run cannot be captured it trains eagerly and warns once; see
            :mod:`nbcallback.train.graph`.
        **kwargs: MindSpore's ``loss_scale_manager``, ``keep_batchnorm_fp32``,
            ``boost_config_dict`` and ``acc_level`` are accepted and have no effect.

    Datasets are anything that yields batches ``(data, label)`` and knows its
    length: nbcallback's ``MnistDataset(...).batch(64)`` pipeline, a
    ``torch.utils.data.DataLoader``, or a list of tuples.

    Where nbcallback differs from MindSpore, on purpose:

    * ``eval_loss`` in fit is the mean over all validation batches; MindSpore
      reports the loss of the last batch only.
    * Integer labels are cast to int64 for the losses that need it (cross-entropy,
      NLL), so the tutorial's ``TypeCast(int32)`` works unchanged.
    * ``dataset_sink_mode`` and ``sink_size`` are accepted and have no effect:
      every step runs on the host loop, one callback step per batch.
    * ``cb_params.net_outputs`` is the loss as a 0-d tensor that stays on the
      device; convert it (``float(cb_params.net_outputs)``) where MindSpore code
      calls ``.asnumpy()``. Reading it is what synchronises with a GPU.
    """

    def __init__(
        self,
        network: nn.Module,
        loss_fn: Callable[..., torch.Tensor] | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        metrics: set[str] | Mapping[str, Any] | None = None,
        eval_network: nn.Module | None = None,
        eval_indexes: Sequence[int] | None = None,
        amp_level: str = "O0",
        boost_level: str = "O0",
        device: str | torch.device | None = None,
        compile: bool | Mapping[str, Any] = False,  # noqa: A002 - the name torch users know
        prefetch: bool = False,
        graph_mode: bool | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        for key in kwargs:
            if key not in _ALLOWED_KWARGS:
                raise ValueError(
                    "The argument in 'kwargs' should be 'loss_scale_manager' or 'keep_batchnorm_fp32' or "
                    f"'boost_config_dict' or 'acc_level', but got '{key}'."
                )
        if not isinstance(network, nn.Module):
            raise TypeError(
                f"For 'Model', the argument 'network' must be a torch.nn.Module, but got {type(network).__name__}."
            )
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                "For 'Model', the argument 'optimizer' must be a torch.optim.Optimizer (e.g. "
                f"torch.optim.SGD(network.parameters(), 1e-2)), but got {type(optimizer).__name__}."
            )
        if amp_level not in _AMP_LEVELS:
            raise ValueError(f"For 'Model', 'amp_level' must be one of {_AMP_LEVELS}, but got {amp_level!r}.")
        if amp_level == "O3":
            raise ValueError(
                "For 'Model', amp_level='O3' (the whole network in half precision) is not supported on "
                "PyTorch: use 'O1' or 'O2', which autocast the operations that are safe in half precision."
            )
        if optimizer is None and amp_level != "O0":
            raise ValueError(
                "Auto mixed precision will not work because 'optimizer' is None. Please set amp_level='O0' "
                "to disable auto mixed precision or set 'optimizer' not be None to use auto mixed precision."
            )
        if boost_level != "O0":
            raise ValueError(f"For 'Model', only boost_level='O0' is available in nbcallback, but got {boost_level!r}.")
        if not isinstance(compile, (bool, Mapping)):
            raise TypeError(
                "For 'Model', 'compile' must be True/False or a dict of torch.compile options "
                f"(e.g. {{'backend': 'eager'}}), but got {type(compile).__name__}."
            )

        if not isinstance(prefetch, bool):
            raise TypeError(f"For 'Model', 'prefetch' must be True or False, but got {type(prefetch).__name__}.")

        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._metric_fns = get_metrics(metrics)
        self._amp_level = amp_level
        self._device = self._pick_device(network, device)
        self._on_cpu = self._device.type == "cpu"  # read on every batch; torch.device.type costs ~0.5 us
        self._prefetch = prefetch and not self._on_cpu
        network.to(self._device)
        if optimizer is not None:
            _check_optimizer_covers(network, optimizer)
        if compile is not False:
            # In place (Module.compile), before any DDP wrapping: the module, its
            # parameters and its state_dict keys stay the user's.
            network.compile(**({} if compile is True else dict(compile)))

        self._parallel = distributed.ParallelContext.detect()
        self._graph = GraphMode(graph_mode, self._device)
        autocast, scaler = _amp(self._amp_level, self._device)
        self._autocast = autocast
        self._train_network = self._build_train_network(autocast, scaler)
        self._eval_network, self._eval_indexes = self._build_eval_network(eval_network, eval_indexes, autocast)
        self._current_epoch_num = 0
        self._current_step_num = 0
        self._epoch_start_step = 0

    # ------------------------------------------------------------------ construction

    @staticmethod
    def _pick_device(network: nn.Module, device: str | torch.device | None) -> torch.device:
        if device is not None:
            return torch.device(device)
        for tensor in network.parameters():
            if tensor.device.type != "cpu":
                return tensor.device
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def _build_train_network(self, autocast: Callable[[], Any] | None, scaler: Any) -> nn.Module:
        network = self._parallel.wrap(self._network, self._device)
        if self._optimizer is not None:
            return TrainOneStepCell(network, self._loss_fn, self._optimizer, autocast, scaler)
        if self._loss_fn is not None:
            return WithLossCell(network, self._loss_fn)
        return network

    def _build_eval_network(
        self, eval_network: nn.Module | None, eval_indexes: Sequence[int] | None, autocast: Callable[[], Any] | None
    ) -> tuple[nn.Module | None, tuple[int, int, int] | None]:
        if not self._metric_fns:
            return eval_network, None
        if eval_network is not None:
            if eval_indexes is not None and not (isinstance(eval_indexes, list) and len(eval_indexes) == 3):
                raise ValueError(
                    "The argument 'eval_indexes' must be a list or None. If 'eval_indexes' is a list, length of it "
                    f"must be three. But got 'eval_indexes' {eval_indexes!r}: pass the positions of loss, logits "
                    "and label in the eval network's outputs as a list, e.g. eval_indexes=[0, 1, 2]."
                )
            if eval_indexes is not None and not all(isinstance(i, int) and not isinstance(i, bool) for i in eval_indexes):
                raise ValueError(
                    f"The argument 'eval_indexes' must be a list of 3 ints, but got {eval_indexes!r}."
                )
            eval_network.to(self._device)
            return eval_network, (tuple(eval_indexes) if eval_indexes is not None else None)  # type: ignore[return-value]
        if self._loss_fn is None:
            raise ValueError(
                "If `metrics` is set, `eval_network` must not be None. Do not set `metrics` if you don't want "
                "an evaluation. If evaluation is required, you need to specify `eval_network`, which will be "
                "used in the framework to evaluate the model. For the simple scenarios with one data, one "
                "label and one logits, `eval_network` is optional, and then you can set `eval_network` or "
                "`loss_fn`. For the latter case, framework will automatically build an evaluation network "
                "with `network` and `loss_fn`."
            )
        return WithEvalCell(self._network, self._loss_fn, autocast), (0, 1, 2)

    # ------------------------------------------------------------------ properties

    @property
    def train_network(self) -> nn.Module:
        """The network each training step calls (``cb_params.train_network``)."""
        return self._train_network

    @property
    def eval_network(self) -> nn.Module | None:
        """The network evaluation calls (``cb_params.eval_network``)."""
        return self._eval_network

    @property
    def predict_network(self) -> nn.Module:
        """The user's network, used by :meth:`predict`."""
        return self._network

    @property
    def device(self) -> torch.device:
        """Where the network lives and batches are moved to."""
        return self._device

    # ------------------------------------------------------------------ public API

    def train(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        callbacks: Callback | Sequence[Callback] | None = None,
        dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train for epochs ``initial_epoch + 1 … epoch``.

        Args:
            epoch: the final epoch number (with ``initial_epoch=0``, how many epochs to run).
            train_dataset: batches of ``(data, label)``; iterated once per epoch.
            callbacks: a :class:`~nbcallback.train.Callback` or a list of them, called in order.
            dataset_sink_mode, sink_size: MindSpore compatibility; no effect.
            initial_epoch: epochs already done (e.g. when resuming); the run's
                ``cur_epoch_num`` starts at ``initial_epoch + 1``.

        Raises:
            ValueError: ``epoch <= initial_epoch``, an empty dataset, a batch that is
                not ``(data, label)`` while ``loss_fn`` is set.
            TypeError: a non-Callback in ``callbacks`` (named in the message).
        """
        self._check_run_args("Model.train", epoch, dataset_sink_mode, sink_size, initial_epoch)
        self._check_legacy_methods(callbacks, "train")
        self._run(epoch, train_dataset, None, 1, callbacks, initial_epoch)

    def fit(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        valid_dataset: Iterable[Any] | None = None,
        valid_frequency: int | Sequence[int] = 1,
        callbacks: Callback | Sequence[Callback] | None = None,
        dataset_sink_mode: bool = False,
        valid_dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train, evaluating ``valid_dataset`` at the end of the chosen epochs.

        Args:
            epoch, train_dataset, callbacks, initial_epoch: as in :meth:`train`.
            valid_dataset: evaluated after epoch ``e`` when ``e % valid_frequency == 0``
                (int) or ``e in valid_frequency`` (list). ``None``: plain training.
            valid_frequency: an int or a list of epoch numbers.
            dataset_sink_mode, valid_dataset_sink_mode, sink_size: MindSpore compatibility; no effect.

        From the validation's ``on_eval_end`` to the ``on_train_epoch_end`` of a
        validated epoch, ``cb_params.metrics`` holds the metric values and
        ``cb_params.eval_results`` the same plus ``eval_loss`` (as in MindSpore).
        Only the callbacks that are not MindSpore's own built-ins (plus
        ``TimeMonitor``) receive the ``on_eval_*`` hooks of the validation runs
        (:func:`nbcallback.train.callback.receives_fit_eval_hooks`).

        Raises:
            ValueError: as :meth:`train`; ``valid_dataset`` without ``metrics``; a custom
                callback defining the legacy names (``step_end``…) in its class.
        """
        self._check_run_args("Model.fit", epoch, dataset_sink_mode, sink_size, initial_epoch)
        if not isinstance(valid_frequency, (int, list)) or isinstance(valid_frequency, bool):
            raise TypeError(
                "For 'Model.fit', the type of 'valid_frequency' must be a list or an integer, but got type "
                f"{type(valid_frequency)}: validate every N epochs with an int, or after the listed epochs "
                "with a list, e.g. valid_frequency=[1, 5]."
            )
        if isinstance(valid_frequency, list) and not all(
            isinstance(e, int) and not isinstance(e, bool) for e in valid_frequency
        ):
            raise TypeError(
                f"For 'Model.fit', 'valid_frequency' as a list must hold epoch numbers (ints), but got {valid_frequency!r}."
            )
        if isinstance(valid_frequency, int) and valid_frequency < 1:
            raise ValueError(f"For 'Model.fit', 'valid_frequency' must be a positive int, but got {valid_frequency}.")
        if valid_dataset is not None and not self._metric_fns:
            raise ValueError(
                "For 'Model.fit', if valid_dataset is not None, the model argument 'metrics' can not be None or "
                "empty, you should set the argument 'metrics' for model."
            )
        self._check_legacy_methods(callbacks, "fit")
        self._run(epoch, train_dataset, valid_dataset, valid_frequency, callbacks, initial_epoch)

    def eval(
        self,
        valid_dataset: Iterable[Any],
        callbacks: Callback | Sequence[Callback] | None = None,
        dataset_sink_mode: bool = False,
    ) -> dict[str, Any]:
        """Evaluate the metrics over ``valid_dataset``.

        Returns:
            ``{metric name: value}`` with plain Python numbers, e.g. ``{'accuracy': 0.9202}``.

        Raises:
            ValueError: the model has no ``metrics``.
        """
        if not self._metric_fns:
            raise ValueError(
                "For Model.eval, the model argument 'metrics' can not be None or empty, you should set the "
                "argument 'metrics' for model."
            )
        self._check_legacy_methods(callbacks, "eval")
        manager = CallbackManager(callbacks)
        cb_params = CallbackParams(
            eval_network=self._eval_network,
            valid_dataset=valid_dataset,
            batch_num=dataset_size(valid_dataset),
            mode="eval",
            cur_step_num=0,
            list_callback=manager.callbacks,
            network=self._network,
            dataset_sink_mode=False,
            parallel_mode=self._parallel.mode,
            device_number=self._parallel.world_size,
            rank_id=self._parallel.rank,
        )
        with manager:
            metrics, _ = self._evaluate(valid_dataset, manager, cb_params)
        return metrics

    def predict(self, *predict_data: Any) -> Any:
        """Run the network on ``predict_data`` in inference mode (no gradients) and return its output."""
        network = self._network
        was_training = network.training
        network.eval()
        try:
            with torch.no_grad():
                inputs = tuple(self._to_device(x) for x in predict_data)
                with (self._autocast or contextlib.nullcontext)():
                    output = network(*inputs)
        finally:
            network.train(was_training)
        if output is None:
            raise RuntimeError("The output data can not be None, please check your net or input data.")
        return output

    # ------------------------------------------------------------------ checks

    @staticmethod
    def _check_run_args(where: str, epoch: int, sink: bool, sink_size: int, initial_epoch: int) -> None:
        if not isinstance(sink, bool):
            raise TypeError(f"For '{where}', the argument 'dataset_sink_mode' must be bool, but got {type(sink).__name__}.")
        _check_int("epoch", epoch, 1, where)
        _check_int("initial_epoch", initial_epoch, 0, where)
        if isinstance(sink_size, bool) or not isinstance(sink_size, int):
            raise TypeError(f"For '{where}', the argument 'sink_size' must be int, but got {type(sink_size).__name__}.")
        if sink_size < -1 or sink_size == 0:
            raise ValueError(f"For '{where}', The argument 'sink_size' must be -1 or positive, but got {sink_size}.")
        if initial_epoch >= epoch:
            raise ValueError(
                f"For '{where}', the parameter 'epoch' must bigger than parameter 'initial_epoch', but got the "
                f"parameter 'epoch' is {epoch}, 'initial_epoch' is {initial_epoch}."
            )

    @staticmethod
    def _check_legacy_methods(callbacks: Any, mode: str) -> None:
        if not callbacks:
            return
        for callback in normalize_callbacks(callbacks):
            cls = type(callback)
            if cls.__name__ in INTERNAL_CALLBACK_NAMES:
                continue
            legacy = sorted(_LEGACY_NAMES & set(vars(cls)))
            if not legacy:
                continue
            message = (
                f"For {cls.__name__} callback, {set(legacy)} methods may not be supported in later version, "
                "Use methods prefixed with 'on_train' or 'on_eval' instead when using customized callbacks."
            )
            if mode == "fit":
                raise ValueError(message)
            warnings.warn(message, FutureWarning, stacklevel=4)

    # ------------------------------------------------------------------ the loops

    def _to_device(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.device != self._device:
            return value.to(self._device, non_blocking=True)
        return value

    def _batch_inputs(self, batch: Any) -> tuple[Any, ...]:
        if isinstance(batch, torch.Tensor):
            batch = (batch,)
        elif not isinstance(batch, (tuple, list)) and isinstance(batch, collections.abc.Mapping):  # ABC check: slow
            raise TypeError(
                "Model needs batches as (data, label) tuples, but the dataset yields dicts; iterate a "
                "tuple iterator or the dataset itself instead of create_dict_iterator()."
            )
        if self._on_cpu:
            return tuple(batch)
        device = self._device
        return tuple([
            x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) and x.device != device else x
            for x in batch
        ])  # a list comprehension: one call (a generator would be resumed once per element)

    def _run(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        valid_dataset: Iterable[Any] | None,
        valid_frequency: int | Sequence[int],
        callbacks: Any,
        initial_epoch: int,
    ) -> None:
        batch_num = dataset_size(train_dataset)
        if batch_num == 0:
            raise ValueError("There is no valid data in dataset, please check dataset file firstly.")
        manager = CallbackManager(callbacks)
        cb_params = CallbackParams(
            train_network=self._train_network,
            epoch_num=epoch - initial_epoch,
            batch_num=batch_num,
            mode="train",
            loss_fn=self._loss_fn,
            optimizer=self._optimizer,
            parallel_mode=self._parallel.mode,
            device_number=self._parallel.world_size,
            rank_id=self._parallel.rank,
            train_dataset=train_dataset,
            list_callback=manager.callbacks,
            train_dataset_element=None,
            network=self._network,
            last_save_ckpt_step=None,
            latest_ckpt_file=None,
            cur_step_num=0,
            dataset_sink_mode=False,
        )
        if valid_dataset is not None:
            cb_params["valid_dataset"] = valid_dataset
        try:
            with manager:
                self._train_loop(manager, cb_params, epoch, initial_epoch, train_dataset, valid_dataset, valid_frequency)
        except BaseException:
            # 0 when the failing epoch ran no step yet (MindSpore's breakpoint name then says step 0).
            cur_step = cb_params.get("cur_step_num", 0)
            step = (cur_step - 1) % cb_params["batch_num"] + 1 if cur_step > self._epoch_start_step else 0
            manager.on_train_exception(RunContext(cb_params), step)
            raise
        finally:
            if isinstance(self._train_network, TrainOneStepCell):
                self._train_network.set_backward_end(None)

    def _train_loop(
        self,
        manager: CallbackManager,
        cb_params: CallbackParams,
        epoch: int,
        initial_epoch: int,
        train_dataset: Iterable[Any],
        valid_dataset: Iterable[Any] | None,
        valid_frequency: int | Sequence[int],
    ) -> None:
        run_context = RunContext(cb_params)
        train_network = self._train_network
        parallel = self._parallel
        stop_vote = parallel.stop_vote()
        stop_after_step = stop_vote.after_step
        backward_end = manager.backward_end_runner(run_context)  # None: the step runs without the hook
        if backward_end is not None:
            _attach_backward_end(train_network, backward_end)
        # Graph mode or eager, once per run (eager where a callback acts between backward and the optimizer step).
        step = self._graph.step(train_network, manager, parallel.is_distributed)
        check_columns = self._loss_fn is not None
        step_begin = manager.runner("on_train_step_begin")  # None: no callback acts on it
        step_end = manager.runner("on_train_step_end")
        batch_inputs = self._batch_inputs
        cur_step = 0
        self._epoch_start_step = 0
        self._network.train()

        manager.on_train_begin(run_context)
        first_epoch, skip_steps, after_skip = initial_epoch, 0, None
        resume, run_context._resume = run_context._resume, None  # RunContext.resume_at in on_train_begin
        if resume is not None:
            first_epoch, skip_steps, cur_step, after_skip = _resume_point(resume, initial_epoch, epoch, batch_num=cb_params["batch_num"])
            cb_params["cur_step_num"] = cur_step
        for epoch_index in range(first_epoch, epoch):
            cb_params["cur_epoch_num"] = epoch_index + 1
            self._current_epoch_num = epoch_index + 1
            self._epoch_start_step = cur_step - skip_steps
            parallel.set_epoch(train_dataset, epoch_index)
            train_network.train()
            manager.on_train_epoch_begin(run_context)
            batches = iter(train_dataset)
            if skip_steps:
                _skip(batches, skip_steps)
                skip_steps = 0
                if after_skip is not None:
                    after_skip()
            if self._prefetch:
                batches = prefetch_to_device(batches, self._device)
            for batch in batches:
                inputs = batch_inputs(batch)
                if check_columns and len(inputs) != 2:
                    raise ValueError(
                        "When 'loss_fn' is not None, 'train_dataset' should return two elements, but got "
                        f"{len(inputs)}, please check the number of elements returned by 'train_dataset'"
                    )
                cur_step += 1
                cb_params["cur_step_num"] = cur_step
                cb_params["train_dataset_element"] = inputs
                if step_begin is not None:
                    step_begin(run_context)
                cb_params["net_outputs"] = step(*inputs)
                if step_end is not None:
                    step_end(run_context)
                if stop_after_step(run_context):
                    break
            self._current_step_num = cur_step
            if valid_dataset is not None and _validates(epoch_index + 1, valid_frequency):
                self._eval_in_fit(valid_dataset, manager, cb_params)
                train_network.train()
            _reset(train_dataset)
            manager.on_train_epoch_end(run_context)
            cb_params.pop("metrics", None)
            cb_params.pop("eval_results", None)
            if stop_vote.after_epoch(run_context):
                break
        manager.on_train_end(run_context)

    def _eval_in_fit(self, valid_dataset: Iterable[Any], manager: CallbackManager, cb_params: CallbackParams) -> None:
        subset = [cb for cb in manager.callbacks if receives_fit_eval_hooks(cb)]
        saved = {key: cb_params.get(key) for key in ("cur_step_num", "batch_num", "dataset_sink_mode", "net_outputs")}
        cb_params["eval_network"] = self._eval_network
        cb_params["valid_dataset"] = valid_dataset
        cb_params["batch_num"] = dataset_size(valid_dataset)
        cb_params["mode"] = "eval"
        cb_params["cur_step_num"] = 0
        try:
            with CallbackManager(subset) as eval_manager:
                metrics, eval_loss = self._evaluate(valid_dataset, eval_manager, cb_params, with_loss=True)
        finally:
            cb_params.update(saved)
            cb_params["mode"] = "train"
        cb_params["metrics"] = metrics
        cb_params["eval_results"] = _eval_results(metrics, eval_loss)

    def _evaluate(
        self,
        dataset: Iterable[Any],
        manager: CallbackManager,
        cb_params: CallbackParams,
        with_loss: bool = False,
    ) -> tuple[dict[str, Any], float | None]:
        """One evaluation pass; returns the metrics and (when asked) the mean batch loss."""
        run_context = RunContext(cb_params)
        eval_network = self._eval_network
        if eval_network is None:
            raise ValueError("For Model.eval, the model has no eval network; set 'metrics' and 'loss_fn' or 'eval_network'.")
        metric_fns = self._metric_fns
        for metric in metric_fns.values():
            metric.clear()
        loss_mean = Loss() if with_loss and self._eval_indexes is not None else None
        indexes = self._eval_indexes
        parallel = self._parallel
        step_begin = manager.runner("on_eval_step_begin")
        step_end = manager.runner("on_eval_step_end")
        # Skip the per-batch loss when nothing can see it (no loss metric, no eval_loss, no step
        # hook reading net_outputs); the last batch's loss is filled in after the loop, so
        # net_outputs at on_eval_epoch_end/on_eval_end is what it always is.
        skip_loss = (
            type(eval_network) is WithEvalCell  # not a subclass: its forward may do more
            and indexes == (0, 1, 2)
            and eval_network.loss_fn is not None
            and loss_mean is None
            and step_begin is None
            and step_end is None
            and not any(isinstance(metric, Loss) for metric in metric_fns.values())
        )
        forward = eval_network.without_loss if skip_loss else eval_network
        outputs: Any = None
        cur_step = 0
        was_training = self._network.training
        eval_network.eval()
        try:
            with torch.no_grad():
                manager.on_eval_begin(run_context)
                manager.on_eval_epoch_begin(run_context)
                for batch in prefetch_to_device(dataset, self._device) if self._prefetch else dataset:
                    inputs = self._batch_inputs(batch)
                    cur_step += 1
                    cb_params["cur_step_num"] = cur_step
                    cb_params["eval_dataset_element"] = inputs
                    if step_begin is not None:
                        step_begin(run_context)
                    outputs = forward(*inputs)
                    if not isinstance(outputs, tuple):
                        outputs = (outputs,)
                    cb_params["net_outputs"] = outputs
                    if step_end is not None:
                        step_end(run_context)
                    _update_metrics(metric_fns, outputs, indexes)
                    if loss_mean is not None and outputs[indexes[0]] is not None:  # type: ignore[index]
                        loss_mean.update(outputs[indexes[0]])  # type: ignore[index]
                    if run_context._stop_requested:
                        break
                if skip_loss and outputs is not None:
                    cb_params["net_outputs"] = (eval_network.loss_of(outputs[1], outputs[2]), outputs[1], outputs[2])
                manager.on_eval_epoch_end(run_context)
                _reset(dataset)
                metrics = parallel.reduce_metrics(metric_fns)
                metrics = {name: _plain(value) for name, value in metrics.items()}
                cb_params["metrics"] = metrics
                eval_loss = None
                # Every rank must join the reduction, also one that saw no batch.
                if loss_mean is not None and (loss_mean._count or parallel.is_distributed):
                    eval_loss = parallel.reduce_mean(loss_mean)
                if with_loss:  # fit's validation: MindSpore sets eval_results before on_eval_end
                    cb_params["eval_results"] = _eval_results(metrics, eval_loss)
                manager.on_eval_end(run_context)
        finally:
            self._network.train(was_training)
        return metrics, eval_loss


def _eval_results(metrics: Mapping[str, Any], eval_loss: float | None) -> dict[str, Any]:
    """``cb_params.eval_results`` of fit's validation: the metrics plus ``eval_loss``."""
    results = copy.deepcopy(dict(metrics))
    if eval_loss is not None:
        results["eval_loss"] = eval_loss
    return results


def _update_metrics(metric_fns: Mapping[str, Any], outputs: tuple[Any, ...], indexes: tuple[int, int, int] | None) -> None:
    if indexes is None:
        for metric in metric_fns.values():
            metric.update(*outputs)
        return
    if len(outputs) < 3:
        raise ValueError(
            f"The length of 'outputs' must be >= 3, but got {len(outputs)}: with 'eval_indexes' set, the eval "
            "network must return (loss, logits, label)."
        )
    loss, logits, label = outputs[indexes[0]], outputs[indexes[1]], outputs[indexes[2]]
    for metric in metric_fns.values():
        if isinstance(metric, Loss):
            metric.update(loss)
        else:
            metric.update(logits, label)


def _attach_backward_end(train_network: nn.Module, backward_end: Callable[[], bool]) -> None:
    """Give the training step the run's ``on_train_backward_end`` hooks (removed when the run ends)."""
    if not isinstance(train_network, TrainOneStepCell):
        raise ValueError(
            "A callback implements on_train_backward_end, which runs between backward and the optimizer step, "
            "but this Model has no optimizer: build it with Model(network, loss_fn, optimizer)."
        )
    train_network.set_backward_end(backward_end)


def _resume_point(resume: Mapping[str, Any], initial_epoch: int, epoch: int, batch_num: int) -> tuple[int, int, int, Any]:
    """Validate a request made with :meth:`RunContext.resume_at` in ``on_train_begin``."""
    first_epoch = int(resume["epoch"])
    skip = int(resume.get("step_in_epoch", 0))
    cur_step = int(resume.get("cur_step_num", 0))
    if not initial_epoch <= first_epoch <= epoch or not 0 <= skip < max(batch_num, 1) or cur_step < 0:
        raise ValueError(
            f"Cannot resume at epoch index {first_epoch}, step {skip}: this run covers epochs "
            f"{initial_epoch + 1}..{epoch} with {batch_num} steps each. The backup belongs to another run; "
            "delete it or use another backup folder."
        )
    return first_epoch, skip, cur_step, resume.get("after_skip")


def _skip(batches: Any, count: int) -> None:
    for _ in range(count):
        try:
            next(batches)
        except StopIteration:
            raise ValueError(f"Cannot resume: the dataset ended before the {count} batches already trained.") from None


def _validates(epoch: int, valid_frequency: int | Sequence[int]) -> bool:
    if isinstance(valid_frequency, int):
        return epoch % valid_frequency == 0
    return epoch in valid_frequency


def _reset(dataset: Any) -> None:
    reset = getattr(dataset, "reset", None)
    if callable(reset):
        reset()


def _check_optimizer_covers(network: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Catch the classic notebook slip: an optimizer built over another network's parameters."""
    network_params = {id(p) for p in network.parameters()}
    optimizer_params = [p for group in optimizer.param_groups for p in group["params"]]
    if optimizer_params and not any(id(p) in network_params for p in optimizer_params):
        raise ValueError(
            "For 'Model', none of the optimizer's parameters belong to 'network': the optimizer was built "
            "over another model's parameters (e.g. before re-creating the network in a notebook). Build it "
            "again with torch.optim.SGD(network.parameters(), lr)."
        )


def _amp(level: str, device: torch.device) -> tuple[Callable[[], Any] | None, Any]:
    """Autocast factory and gradient scaler for an ``amp_level``."""
    if level == "auto":
        level = "O1" if device.type == "cuda" else "O0"
    if level == "O0":
        return None, None
    if device.type == "cuda":
        if level == "O2" and torch.cuda.is_bf16_supported():
            dtype = torch.bfloat16
        else:
            dtype = torch.float16
    else:
        dtype = torch.bfloat16
    autocast = functools.partial(torch.autocast, device_type=device.type, dtype=dtype)
    scaler = torch.amp.GradScaler(device.type) if dtype is torch.float16 else None
    return autocast, scaler
