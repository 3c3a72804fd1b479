"""``SummaryCollector``: write the training's loss, learning rate, metrics, weights and graph for TensorBoard.

MindSpore's SummaryCollector writes summary files for MindInsight; this one
writes TensorBoard event files with ``torch.utils.tensorboard.SummaryWriter``,
so ``tensorboard --logdir <summary_dir>`` shows them. TensorBoard is an
optional dependency (``pip install "nbcallback[tensorboard]"``), imported only
when a SummaryCollector is created.
"""
from __future__ import annotations

import importlib.util
import json
import math
import numbers
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from nbcallback.train._params import backbone_of
from nbcallback.train._validation import check_bool, loss_value
from nbcallback.train.callback import BuiltinCallback, RunContext
from nbcallback.train.distributed import acts_on_rank
from nbcallback.train.serialization import atomic_write

__all__ = ["SummaryCollector"]

_INSTALL_HINT = 'pip install "nbcallback[tensorboard]"'

#: What is collected unless ``collect_specified_data`` says otherwise.
DEFAULT_SPECIFIED_DATA: dict[str, Any] = {
    "collect_metric": True,
    "collect_graph": True,
    "collect_train_lineage": True,
    "collect_eval_lineage": True,
    "collect_input_data": True,
    "collect_dataset_graph": True,
    "histogram_regular": None,
    "collect_landscape": None,
}
_BOOL_KEYS = tuple(k for k, v in DEFAULT_SPECIFIED_DATA.items() if isinstance(v, bool))
_HISTOGRAM_DEFAULT_COUNT = 5
_MAX_INPUT_IMAGES = 4


def _require_tensorboard() -> None:
    if importlib.util.find_spec("tensorboard") is None:
        raise ImportError(
            f"SummaryCollector writes TensorBoard event files and needs the 'tensorboard' package: {_INSTALL_HINT}"
        )


def _summary_writer_class() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # tensorboard missing or broken
        raise ImportError(
            f"SummaryCollector writes TensorBoard event files and needs the 'tensorboard' package: {_INSTALL_HINT} "
            f"({exc})"
        ) from exc
    return SummaryWriter


def _check_positive(value: Any, name: str, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"For 'SummaryCollector', the type of `{name}` should be int{' or None' if allow_none else ''}, "
            f"but got {type(value).__name__}."
        )
    if value <= 0:
        raise ValueError(f'For "SummaryCollector", the value of `{name}` should be greater than 0, but got `{value}`.')
    return value


def _check_specified_data(specified: Any, keep_default_action: bool) -> dict[str, Any]:
    if specified is None:
        if not keep_default_action:
            raise ValueError(
                "For 'SummaryCollector', 'keep_default_action' is False and 'collect_specified_data' is None, so "
                "nothing would be collected: name what to collect, e.g. collect_specified_data="
                "{'collect_metric': True}, or keep the default action."
            )
        return dict(DEFAULT_SPECIFIED_DATA)
    if not isinstance(specified, dict):
        raise TypeError(
            f"For 'SummaryCollector', the type of `collect_specified_data` should be dict or None, but got "
            f"{type(specified).__name__}."
        )
    if not specified and not keep_default_action:
        raise ValueError(
            "For 'SummaryCollector', 'collect_specified_data' is empty and 'keep_default_action' is False, so nothing "
            "would be collected."
        )
    for key in specified:
        if not isinstance(key, str):
            raise TypeError(f"For 'SummaryCollector', the keys of `collect_specified_data` should be str, but got {key!r}.")
    unexpected = sorted(set(specified) - set(DEFAULT_SPECIFIED_DATA))
    if unexpected:
        raise ValueError(
            f"For 'collect_specified_data' the keys {unexpected} are unsupported, expect the follow keys: "
            f"{list(DEFAULT_SPECIFIED_DATA)}"
        )
    for key in _BOOL_KEYS:
        if key in specified and not isinstance(specified[key], bool):
            raise TypeError(
                f"For 'SummaryCollector', the value of `{key}` in `collect_specified_data` should be bool, but got "
                f"{type(specified[key]).__name__}."
            )
    regular = specified.get("histogram_regular")
    if regular is not None:
        if not isinstance(regular, str):
            raise TypeError(
                "For 'SummaryCollector', `histogram_regular` should be a regular expression string or None, but got "
                f"{type(regular).__name__}."
            )
        try:
            re.compile(regular)
        except re.error as exc:
            raise ValueError(f"For 'SummaryCollector', `histogram_regular` {regular!r} is not a valid regular expression: {exc}.") from None
    landscape = specified.get("collect_landscape")
    if landscape is not None:
        if not isinstance(landscape, dict):
            raise TypeError(
                "For 'SummaryCollector', `collect_landscape` should be a dict or None, but got "
                f"{type(landscape).__name__}."
            )
        warnings.warn(
            "SummaryCollector: 'collect_landscape' (MindInsight's loss landscape) is not supported by nbcallback "
            "and is ignored.",
            UserWarning,
            stacklevel=3,
        )
    result = dict(DEFAULT_SPECIFIED_DATA) if keep_default_action else {k: (False if k in _BOOL_KEYS else None) for k in DEFAULT_SPECIFIED_DATA}
    result.update(specified)
    return result


def _check_lineage(data: Any) -> dict[str, Any] | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise TypeError(
            f"For 'SummaryCollector', the type of `custom_lineage_data` should be dict or None, but got {type(data).__name__}."
        )
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError(f"For 'SummaryCollector', the keys of `custom_lineage_data` should be str, but got {key!r}.")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(
                f"For 'SummaryCollector', the value of `custom_lineage_data['{key}']` should be int, float or str, but "
                f"got {type(value).__name__}."
            )
    return dict(data)


def _check_export_options(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"For 'SummaryCollector', the type of `export_options` should be dict or None, but got {type(options).__name__}.")
    unexpected = sorted(set(options) - {"tensor_format"})
    if unexpected:
        raise ValueError(f"For `export_options` the keys {unexpected} are unsupported, expect the follow keys: ['tensor_format']")
    if options.get("tensor_format") not in (None, "npy"):
        raise ValueError(
            f"For `export_options`, the value of 'tensor_format' should be 'npy' or None, but got {options.get('tensor_format')!r}."
        )
    return dict(options)


def _markdown_table(rows: Mapping[str, Any]) -> str:
    lines = ["| key | value |", "|---|---|"]
    for key, value in rows.items():
        text = str(value).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {key} | {text} |")
    return "\n".join(lines)


def _number(value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if hasattr(value, "item") and getattr(value, "size", None) == 1:
        return float(value.item())
    return None


class SummaryCollector(BuiltinCallback):
    """Collect training information into TensorBoard event files in ``summary_dir``.

    Args:
        summary_dir: folder of the event files (created if missing); view with
            ``tensorboard --logdir <summary_dir>``.
        collect_freq: collect every this many global steps (and at the first step
            of a run): the loss (``loss/auto``), the learning rate
            (``learning_rate/auto``), weight histograms (``<parameter>/auto``) and a
            few input images (``input_data/auto``).
        collect_specified_data: a dict choosing what to collect (MindSpore's keys):
            ``collect_metric`` (loss, learning rate and, at the end of fit's
            validated epochs, ``eval/<metric>`` scalars), ``collect_graph`` (the
            network's graph, traced once with the first batch), ``collect_train_lineage``
            / ``collect_eval_lineage`` (text tables ``lineage/train`` /
            ``lineage/eval``: network, loss, optimizer, learning rate, epochs,
            steps, metrics, time), ``collect_input_data`` (images only),
            ``collect_dataset_graph`` (text ``dataset_graph``), ``histogram_regular``
            (a regular expression matched with ``re.match`` against parameter
            names; None: the first 5 parameters), ``collect_landscape`` (not
            supported; ignored with a warning). ``None``: everything.
        keep_default_action: with True, keys not in ``collect_specified_data``
            keep their default (on); with False only the keys given there are on.
        custom_lineage_data: ``{str: int|float|str}`` written as the text
            ``lineage/custom`` and added to the train lineage.
        collect_tensor_freq: accepted and validated for MindSpore compatibility.
            It paces MindSpore's ``TensorSummary`` operators, which PyTorch
            networks do not have, so it has no effect.
        max_file_size: stop writing (with a warning) once the event file is
            larger than this many bytes. None: no limit.
        export_options: ``{'tensor_format': 'npy'}`` also saves every collected
            weight tensor as ``.npy`` under ``summary_dir/export_<time>/tensor/``.

    The writer opens when training (or ``Model.eval``) begins and is closed in
    ``__exit__``, also when training raises. Tracing the graph runs the
    network once in eval mode, with the random state saved and restored around
    it, so collecting does not change the training's random numbers; a network
    that cannot be traced gives a warning and no graph. With several
    processes only rank 0 writes (every rank with ``NBCALLBACK_CALLBACK_RANKS=all``;
    then give each rank its own ``summary_dir``).

    Raises:
        ImportError: tensorboard is not installed (``pip install "nbcallback[tensorboard]"``).
        TypeError / ValueError: bad arguments, with MindSpore's messages, e.g.
            ``For "SummaryCollector", the value of `collect_freq` should be greater than 0, but got `0`.``;
            more than one SummaryCollector in the callback list.
    """

    def __init__(
        self,
        summary_dir: str | os.PathLike[str],
        collect_freq: int = 10,
        collect_specified_data: dict[str, Any] | None = None,
        keep_default_action: bool = True,
        custom_lineage_data: dict[str, Any] | None = None,
        collect_tensor_freq: int | None = None,
        max_file_size: int | None = None,
        export_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(summary_dir, (str, os.PathLike)):
            raise TypeError(
                f"For 'SummaryCollector', the type of `summary_dir` should be str, but got {type(summary_dir).__name__}."
            )
        folder = Path(os.path.realpath(os.fspath(summary_dir)))
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"For 'SummaryCollector', the summary_dir {folder} is an existing file.")
        self.collect_freq = _check_positive(collect_freq, "collect_freq", allow_none=False)
        keep_default_action = check_bool(keep_default_action, "keep_default_action", "SummaryCollector")
        self.keep_default_action = keep_default_action
        self.collect_specified_data = _check_specified_data(collect_specified_data, keep_default_action)
        # Histograms have no on/off key: they are on by default, or when histogram_regular is named.
        self._histograms_on = keep_default_action or "histogram_regular" in (collect_specified_data or {})
        self.custom_lineage_data = _check_lineage(custom_lineage_data)
        self.collect_tensor_freq = _check_positive(collect_tensor_freq, "collect_tensor_freq", allow_none=True)
        self.max_file_size = _check_positive(max_file_size, "max_file_size", allow_none=True)
        self.export_options = _check_export_options(export_options)
        _require_tensorboard()
        self.summary_dir = str(folder)
        self._writer: Any = None
        self._reset_run()

    def _reset_run(self) -> None:
        self._graph_done = False
        self._first_step_done = False
        self._full = False
        self._histogram_warned = False
        self._train_started = time.time()
        self._last_eval_results: dict[str, Any] | None = None
        self._export_dir: Path | None = None

    # ------------------------------------------------------------------ writer lifecycle

    @property
    def writer(self) -> Any:
        """The ``SummaryWriter`` while a run is open (None otherwise, and on ranks other than 0)."""
        return self._writer

    def _open(self, cb_params: Mapping[str, Any]) -> None:
        self._check_single(cb_params)
        if self._writer is not None or not acts_on_rank(cb_params):
            return
        writer_class = _summary_writer_class()
        Path(self.summary_dir).mkdir(parents=True, exist_ok=True)
        self._writer = writer_class(log_dir=self.summary_dir)

    def _close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def __exit__(self, *exc_info: object) -> None:
        self._close()
        return None

    def _check_single(self, cb_params: Mapping[str, Any]) -> None:
        collectors = [cb for cb in cb_params.get("list_callback") or () if isinstance(cb, SummaryCollector)]
        if len(collectors) > 1:
            raise ValueError(
                "There are more than one SummaryCollector instance in callback list,but expected only one "
                "SummaryCollector instance."
            )

    def _active(self) -> bool:
        return self._writer is not None and not self._full

    def _check_size(self) -> None:
        if self.max_file_size is None or self._writer is None or self._full:
            return
        self._writer.flush()
        # torch's SummaryWriter does not expose its file name; look it up defensively.
        get_file_writer = getattr(self._writer, "_get_file_writer", None)
        file_writer = get_file_writer() if callable(get_file_writer) else None
        name = getattr(getattr(file_writer, "event_writer", None), "_file_name", None)
        try:
            size = os.path.getsize(name) if name else 0
        except OSError:
            size = 0
        if size > self.max_file_size:
            self._full = True
            warnings.warn(
                f"SummaryCollector: the event file {name} is larger than max_file_size={self.max_file_size} bytes; "
                "nothing more is written in this run.",
                RuntimeWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ training hooks
    # MindSpore's legacy names, reached through the on_train_* hooks of the base class.

    def begin(self, run_context: RunContext) -> None:
        """Open the writer and write the dataset graph."""
        cb_params = run_context.original_args()
        self._reset_run()
        self._open(cb_params)
        if self._active() and self.collect_specified_data["collect_dataset_graph"]:
            self._write_dataset_graph(cb_params)

    def step_end(self, run_context: RunContext) -> None:
        """Collect the loss, learning rate, histograms and inputs when due."""
        if not self._active():
            return
        cb_params = run_context.original_args()
        step = cb_params["cur_step_num"]
        specified = self.collect_specified_data
        if not self._graph_done and specified["collect_graph"]:
            self._graph_done = True
            self._write_graph(cb_params)
        if self._first_step_done and step % self.collect_freq:  # type: ignore[operator]
            return
        self._first_step_done = True
        writer = self._writer
        if specified["collect_metric"]:
            loss = _number(loss_value(cb_params.get("net_outputs")))
            if loss is not None:
                writer.add_scalar("loss/auto", loss, step)
            optimizer = cb_params.get("optimizer")
            if isinstance(optimizer, torch.optim.Optimizer):
                for index, group in enumerate(optimizer.param_groups):
                    tag = "learning_rate/auto" if index == 0 else f"learning_rate/group{index}"
                    writer.add_scalar(tag, float(group["lr"]), step)
        self._write_histograms(cb_params, step)
        if specified["collect_input_data"]:
            self._write_input(cb_params, step)
        self._check_size()

    def epoch_end(self, run_context: RunContext) -> None:
        """Write fit's validation results."""
        cb_params = run_context.original_args()
        results = cb_params.get("eval_results") or cb_params.get("metrics")
        if results:
            self._last_eval_results = dict(results)
        if not self._active():
            return
        if results and self.collect_specified_data["collect_metric"]:
            for name, value in results.items():
                number = _number(value)
                if number is not None:
                    self._writer.add_scalar(f"eval/{name}", number, cb_params["cur_step_num"])
        self._writer.flush()
        self._check_size()

    def end(self, run_context: RunContext) -> None:
        """Write the lineage tables."""
        cb_params = run_context.original_args()
        if not self._active():
            return
        step = cb_params.get("cur_step_num", 0)
        if self.collect_specified_data["collect_train_lineage"]:
            self._writer.add_text("lineage/train", _markdown_table(self._train_lineage(cb_params)), step)
        if self.collect_specified_data["collect_eval_lineage"] and self._last_eval_results:
            self._writer.add_text("lineage/eval", _markdown_table(self._last_eval_results), step)
        if self.custom_lineage_data:
            self._writer.add_text("lineage/custom", _markdown_table(self.custom_lineage_data), step)
        self._writer.flush()

    # ------------------------------------------------------------------ evaluation hooks (Model.eval)

    def on_eval_begin(self, run_context: RunContext) -> None:
        self._open(run_context.original_args())

    def on_eval_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if not self._active():
            return
        metrics = dict(cb_params.get("metrics") or {})
        if self.collect_specified_data["collect_metric"]:
            for name, value in metrics.items():
                number = _number(value)
                if number is not None:
                    self._writer.add_scalar(f"eval/{name}", number, 0)
        if self.collect_specified_data["collect_eval_lineage"]:
            rows = {"metrics": json.dumps(metrics, default=str), "valid_dataset_size": cb_params.get("batch_num")}
            if self.custom_lineage_data:
                rows.update(self.custom_lineage_data)
            self._writer.add_text("lineage/eval", _markdown_table(rows), 0)
        self._writer.flush()

    # ------------------------------------------------------------------ collectors

    def _write_graph(self, cb_params: Mapping[str, Any]) -> None:
        inputs = cb_params.get("train_dataset_element")
        if not inputs:
            return
        inputs = tuple(inputs)
        if cb_params.get("loss_fn") is not None and len(inputs) > 1:
            inputs = inputs[:-1]
        network = backbone_of(cb_params)
        devices = sorted({x.device.index or 0 for x in inputs if isinstance(x, torch.Tensor) and x.device.type == "cuda"})
        was_training = network.training
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._writer.add_graph(network, inputs if len(inputs) > 1 else inputs[0])
        except Exception as exc:  # tracing is best effort: many dynamic networks cannot be traced
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            warnings.warn(
                f"SummaryCollector could not trace the network graph ({type(exc).__name__}: {first}); "
                "the graph is not collected.",
                RuntimeWarning,
                stacklevel=3,
            )
        finally:
            network.train(was_training)

    def _histogram_parameters(self, cb_params: Mapping[str, Any]) -> list[tuple[str, torch.Tensor]]:
        named = list(backbone_of(cb_params).named_parameters())
        regular = self.collect_specified_data["histogram_regular"]
        if regular is None:
            return named[:_HISTOGRAM_DEFAULT_COUNT]
        chosen = [(name, p) for name, p in named if re.match(regular, name)]
        if not chosen and not self._histogram_warned:
            self._histogram_warned = True
            warnings.warn(
                f"SummaryCollector: no parameter name matches histogram_regular={regular!r}; the parameters are "
                f"{[name for name, _ in named][:10]}...",
                UserWarning,
                stacklevel=4,
            )
        return chosen

    def _write_histograms(self, cb_params: Mapping[str, Any], step: int) -> None:
        if not self._histograms_on:
            return
        for name, parameter in self._histogram_parameters(cb_params):
            values = parameter.detach().float().cpu()
            if not bool(torch.isfinite(values).all()):
                continue  # TensorBoard cannot bin NaN/Inf
            self._writer.add_histogram(f"{name}/auto", values, step)
            if self.export_options.get("tensor_format") == "npy":
                self._export(name, step, values)

    def _export(self, name: str, step: int, values: torch.Tensor) -> None:
        if self._export_dir is None:
            self._export_dir = Path(self.summary_dir) / f"export_{int(time.time())}" / "tensor"
            self._export_dir.mkdir(parents=True, exist_ok=True)
        target = self._export_dir / f"{name}_{step}.npy"
        atomic_write(target, lambda handle: np.save(handle, values.numpy()))

    def _write_input(self, cb_params: Mapping[str, Any], step: int) -> None:
        inputs = cb_params.get("train_dataset_element")
        if not inputs or not isinstance(inputs[0], torch.Tensor):
            return
        images = inputs[0].detach()
        if images.dim() == 3:
            images = images.unsqueeze(1)
        if images.dim() != 4 or images.shape[1] not in (1, 3) or not images.is_floating_point() and images.dtype != torch.uint8:
            return
        images = images[:_MAX_INPUT_IMAGES].float().cpu()
        low, high = float(images.min()), float(images.max())
        if not (math.isfinite(low) and math.isfinite(high)):
            return
        images = (images - low) / (high - low) if high > low else torch.zeros_like(images)
        self._writer.add_images("input_data/auto", images, step)

    def _write_dataset_graph(self, cb_params: Mapping[str, Any]) -> None:
        dataset = cb_params.get("train_dataset")
        if dataset is None:
            return
        rows: dict[str, Any] = {"type": type(dataset).__name__, "repr": repr(dataset)[:500]}
        for attribute in ("get_dataset_size", "get_batch_size", "get_col_names"):
            method = getattr(dataset, attribute, None)
            if callable(method):
                try:
                    rows[attribute[4:]] = method()
                except Exception:  # description only
                    pass
        if "dataset_size" not in rows:
            rows["dataset_size"] = cb_params.get("batch_num")
        chain = []
        node = getattr(dataset, "_parent", None)
        while node is not None and len(chain) < 20:
            chain.append(type(node).__name__)
            node = getattr(node, "_parent", None)
        if chain:
            rows["parents"] = " <- ".join(chain)
        self._writer.add_text("dataset_graph", _markdown_table(rows), 0)

    def _train_lineage(self, cb_params: Mapping[str, Any]) -> dict[str, Any]:
        network = backbone_of(cb_params)
        optimizer = cb_params.get("optimizer")
        loss_fn = cb_params.get("loss_fn")
        rows: dict[str, Any] = {
            "network": type(network).__name__,
            "parameter_count": sum(p.numel() for p in network.parameters()),
            "loss_function": None if loss_fn is None else getattr(loss_fn, "__name__", None) or type(loss_fn).__name__,
            "optimizer": type(optimizer).__name__ if optimizer is not None else None,
            "learning_rate": [float(g["lr"]) for g in optimizer.param_groups] if isinstance(optimizer, torch.optim.Optimizer) else None,
            "epoch": cb_params.get("cur_epoch_num"),
            "epoch_num": cb_params.get("epoch_num"),
            "batch_num": cb_params.get("batch_num"),
            "cur_step_num": cb_params.get("cur_step_num"),
            "loss": _number(loss_value(cb_params.get("net_outputs"))),
            "parallel_mode": cb_params.get("parallel_mode"),
            "device_number": cb_params.get("device_number"),
            "train_time_s": round(time.time() - self._train_started, 3),
        }
        if cb_params.get("latest_ckpt_file"):
            rows["model_path"] = cb_params["latest_ckpt_file"]
        if self._last_eval_results:
            rows["metrics"] = json.dumps(self._last_eval_results, default=str)
        if self.custom_lineage_data:
            rows.update(self.custom_lineage_data)
        return rows
