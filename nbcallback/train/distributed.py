"""How ``Model`` runs with one process or several (``torch.distributed``).

``ParallelContext.detect()`` describes the process the model trains in.  With
one process (the default) every method is a cheap no-op, so the training loop
calls them unconditionally and pays nothing.

Data-parallel training in three lines (run with ``torchrun --nproc_per_node=N script.py``)::

    from nbcallback.train import Model, init_distributed
    init_distributed()              # reads torchrun's environment; a no-op under plain `python`
    model = Model(net, loss, opt)   # sees the process group: wraps `net` in DDP

What a data-parallel ``Model`` does differently:

* ``cb_params.parallel_mode`` is ``'data_parallel'``, ``rank_id`` the rank and
  ``device_number`` the world size.
* ``MnistDataset`` (any ``SourceDataset``) created after the process group
  shards itself by rank, with one shuffle order per epoch shared by all ranks
  and every shard padded to the same size (see
  :class:`nbcallback.dataset.sources.SourceDataset`).
* A stop requested on any rank (``run_context.request_stop()``) stops every
  rank after the same step: one step after the request within an epoch, at
  once at an epoch's end (see :class:`StopVote`).
* Validation metrics (``Model.eval`` and fit's validation) are computed over
  the samples of all ranks, see :meth:`ParallelContext.reduce_metrics`.
* The built-in callbacks that print or write (LossMonitor, TimeMonitor,
  ModelCheckpoint, SummaryCollector, the widgets…) act on rank 0 only; set
  ``NBCALLBACK_CALLBACK_RANKS=all`` to let them act on every rank
  (:func:`acts_on_rank`).
"""
from __future__ import annotations

import atexit
import datetime
import numbers
import os
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn

from nbcallback.train import metrics as m
from nbcallback.train.serialization import load_module_entries, network_entries

__all__ = [
    "ParallelContext",
    "init_distributed",
    "acts_on_rank",
    "callback_ranks",
    "CALLBACK_RANKS_ENV",
    "DistributedDataParallel",
]

#: Environment variable choosing where rank-0 callbacks act: ``zero`` (default) or ``all``.
CALLBACK_RANKS_ENV = "NBCALLBACK_CALLBACK_RANKS"


# --------------------------------------------------------------------------- process group set-up


def init_distributed(
    backend: str | None = None,
    init_method: str | None = None,
    *,
    world_size: int | None = None,
    rank: int | None = None,
    timeout_s: float | None = None,
) -> "ParallelContext":
    """Join the process group described by torchrun's environment (or the arguments).

    Call it once per process, before creating datasets and the ``Model``.

    * Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment) or with an
      explicit ``init_method`` it calls ``torch.distributed.init_process_group``.
      With CUDA available it first selects ``cuda:LOCAL_RANK``, so ``Model``
      (whose default device is the current CUDA device) trains there, and uses
      ``nccl``; otherwise ``gloo``.
    * Under plain ``python`` (no ``WORLD_SIZE``) it does nothing: the same
      script runs stand-alone.
    * When a process group is already initialised it is used as it is.

    Args:
        backend: ``'nccl'``, ``'gloo'`` …; ``None`` picks nccl with CUDA, else gloo.
        init_method: e.g. ``'tcp://127.0.0.1:29500'`` or ``'file:///tmp/pg'``;
            ``None`` is ``'env://'`` (torchrun's ``MASTER_ADDR``/``MASTER_PORT``).
        world_size, rank: for an explicit ``init_method``; ``None`` reads
            ``WORLD_SIZE`` / ``RANK``.
        timeout_s: collective timeout in seconds (``None``: torch's default).

    Returns:
        The :class:`ParallelContext` a ``Model`` created now will use.

    The process group is destroyed when the process exits (``atexit``); call
    ``torch.distributed.destroy_process_group()`` yourself to end it earlier.
    """
    dist = torch.distributed
    if not dist.is_available():
        return ParallelContext()
    if dist.is_initialized():
        return ParallelContext.detect()
    env_world = os.environ.get("WORLD_SIZE")
    if init_method is None and (env_world is None or int(env_world) <= 1) and (world_size or 1) <= 1:
        return ParallelContext()
    if world_size is None:
        world_size = int(env_world or 1)
    if rank is None:
        rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    use_cuda = torch.cuda.is_available() and backend in (None, "nccl")
    if backend is None:
        backend = "nccl" if use_cuda and dist.is_nccl_available() else "gloo"
    kwargs: dict[str, Any] = {}
    if timeout_s is not None:
        kwargs["timeout"] = datetime.timedelta(seconds=timeout_s)
    if use_cuda:
        device_index = local_rank % torch.cuda.device_count()
        torch.cuda.set_device(device_index)
        if backend == "nccl":
            kwargs["device_id"] = torch.device("cuda", device_index)
    dist.init_process_group(
        backend=backend, init_method=init_method or "env://", world_size=world_size, rank=rank, **kwargs
    )
    atexit.register(_destroy_at_exit)
    return ParallelContext.detect()


def _destroy_at_exit() -> None:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def collective_device() -> torch.device:
    """Where the tensors of a collective on the default group must live (CUDA for nccl)."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


_CONTROL_GROUP: dict[int, Any] = {}


def _control_group() -> tuple[Any, torch.device]:
    """The group for the per-step stop flag: the default group, or a CPU (gloo) side group under nccl.

    Under nccl a flag on the GPU would make every step wait for the device
    (``.item()``); a gloo group exchanges it on the host instead. Created on
    first use, which every rank reaches at the same point (the first step).
    """
    dist = torch.distributed
    if dist.get_backend() != "nccl":
        return None, torch.device("cpu")
    key = id(dist.group.WORLD)
    if key not in _CONTROL_GROUP:
        try:
            _CONTROL_GROUP[key] = dist.new_group(backend="gloo")
        except (RuntimeError, ValueError):  # a build without gloo
            _CONTROL_GROUP[key] = False
    group = _CONTROL_GROUP[key]
    if group is False:
        return None, collective_device()
    return group, torch.device("cpu")


# --------------------------------------------------------------------------- callbacks on every rank or on rank 0


def callback_ranks() -> str:
    """``'zero'`` (default) or ``'all'``: where printing/writing callbacks act, from ``NBCALLBACK_CALLBACK_RANKS``."""
    value = os.environ.get(CALLBACK_RANKS_ENV, "zero").strip().lower()
    if value in ("", "0", "zero", "rank0", "rank_0"):
        return "zero"
    if value in ("all", "*", "every"):
        return "all"
    raise ValueError(f"{CALLBACK_RANKS_ENV} must be 'zero' or 'all', but got {value!r}.")


def acts_on_rank(cb_params: Mapping[str, Any]) -> bool:
    """Whether a callback that prints or writes files acts in this process.

    True on rank 0 (and in stand-alone runs); on the other ranks only with
    ``NBCALLBACK_CALLBACK_RANKS=all``. With ``all``, give every rank its own
    ``ModelCheckpoint`` / ``SummaryCollector`` directory (e.g. with the rank in
    its name): the ranks hold the same weights and would write the same files.
    """
    rank = cb_params.get("rank_id", 0) or 0
    return rank == 0 or callback_ranks() == "all"


# --------------------------------------------------------------------------- DDP with the backbone's names


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """``torch.nn.parallel.DistributedDataParallel`` that names things as the wrapped network does.

    ``named_parameters()``, ``state_dict()`` and ``load_state_dict()`` (also
    when it sits inside a training wrapper such as ``TrainOneStepCell``) use
    the backbone's names, without DDP's ``module.`` level. So a checkpoint
    written by rank 0 (weights and optimizer state, which nbcallback names after
    the parameters) loads into a stand-alone ``Model`` and the other way round.
    ``load_state_dict`` still accepts DDP's usual ``module.``-prefixed keys.
    """

    def __init__(self, module: nn.Module, *args: Any, **kwargs: Any) -> None:
        super().__init__(module, *args, **kwargs)
        self._register_load_state_dict_pre_hook(self._add_module_level)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):  # type: ignore[override]
        return self.module.named_parameters(prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate)

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:  # type: ignore[override]
        return self.module.state_dict(*args, destination=destination, prefix=prefix, keep_vars=keep_vars)

    def _add_module_level(self, state_dict: dict, prefix: str, *_: Any) -> None:
        """Before loading: ``{prefix}name`` -> ``{prefix}module.name`` (what nn.Module's loader walks)."""
        keys = [key for key in state_dict if key.startswith(prefix)]
        inner = prefix + "module."
        already = keys and all(key.startswith(inner) for key in keys) and "module" not in self.module._modules
        if already:
            return
        for key in keys:
            state_dict[inner + key[len(prefix):]] = state_dict.pop(key)

    def checkpoint_entries(self) -> dict[str, Any]:
        return network_entries(self.module)

    def load_checkpoint_entries(self, entries: Mapping[str, Any], strict_load: bool) -> tuple[list[str], list[str]]:
        loader = getattr(self.module, "load_checkpoint_entries", None)
        if callable(loader):
            return loader(entries, strict_load)
        return load_module_entries(self.module, entries, strict_load)


# --------------------------------------------------------------------------- the context


@dataclass(frozen=True)
class ParallelContext:
    """The parallel setting of a run.

    Attributes:
        mode: ``'stand_alone'`` (one process) or ``'data_parallel'`` (DDP), the
            value of ``cb_params.parallel_mode``.
        rank: this process's rank (``cb_params.rank_id``).
        world_size: how many processes train together (``cb_params.device_number``).
    """

    mode: str = "stand_alone"
    rank: int = 0
    world_size: int = 1

    @classmethod
    def detect(cls) -> "ParallelContext":
        """The context of this process: stand-alone unless a process group of 2+ ranks is initialised."""
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            world_size = torch.distributed.get_world_size()
            if world_size > 1:
                return cls("data_parallel", torch.distributed.get_rank(), world_size)
        return cls()

    @property
    def is_distributed(self) -> bool:
        return self.mode == "data_parallel"

    def wrap(self, network: nn.Module, device: torch.device) -> nn.Module:
        """The network the training step calls (DDP-wrapped when distributed).

        Wrapping broadcasts rank 0's weights to the other ranks, so every rank
        must create its ``Model`` (a collective call).
        """
        if not self.is_distributed:
            return network
        device_ids = [device.index] if device.type == "cuda" and device.index is not None else None
        return DistributedDataParallel(network, device_ids=device_ids)

    def set_epoch(self, dataset: Any, epoch_index: int) -> None:
        """Tell a sharded dataset which epoch starts, so every rank shuffles alike.

        Works with nbcallback's pipelines (forwarded to the source dataset) and
        with a ``torch.utils.data.DataLoader`` over a ``DistributedSampler``.
        """
        if not self.is_distributed:
            return
        set_epoch = getattr(dataset, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch_index)
            return
        for sampler in (getattr(dataset, "sampler", None), getattr(getattr(dataset, "batch_sampler", None), "sampler", None)):
            set_epoch = getattr(sampler, "set_epoch", None)
            if callable(set_epoch):
                set_epoch(epoch_index)
                return

    def stop_vote(self) -> "StopVote":
        """A fresh :class:`StopVote` for one run of the training loop."""
        return StopVote(self.is_distributed)

    def reduce_metrics(self, metric_fns: Mapping[str, Any]) -> dict[str, Any]:
        """Each metric's value over the whole validation set (the samples of all ranks).

        * nbcallback's metrics (Accuracy, Loss, TopK, Precision, Recall, F1, Fbeta,
          MAE, MSE and their subclasses; Precision/Recall with
          ``eval_type='multilabel'`` excepted: their values are per sample) keep sums and counts: these are summed over
          the ranks with one ``all_reduce`` before ``eval()``, so the result is
          the value a single process computes on the union of the shards. The
          metric objects keep the totals afterwards.
        * A user metric can take part the same way by naming, in a class
          attribute ``distributed_sums``, the attributes that hold its sums
          (numbers or tensors, ``None`` for "nothing yet").
        * Any other metric is evaluated on each rank's shard and the results are
          averaged over the ranks when they are numbers (or lists/tensors of
          numbers): exact for per-sample means when the shards are the same
          size, an approximation otherwise. Other results stay per rank, with a
          warning.

        Sharded datasets pad every shard to the same size, so when the number
        of samples is not a multiple of the world size up to ``world_size - 1``
        samples count twice (none for MNIST's 10,000 test images on 2, 4, 5, 8…
        ranks). For exact metrics on such a set, give each rank the whole set
        (``num_shards=1, shard_id=0``): every sample then counts once per rank,
        which leaves these ratios unchanged.
        """
        if not self.is_distributed:
            return {name: metric.eval() for name, metric in metric_fns.items()}
        # By name: `metrics={'accuracy', 'loss'}` is a set, whose order differs between processes.
        names = sorted(metric_fns)
        _all_reduce_sums([metric_fns[name] for name in names if _sum_fields(metric_fns[name])])
        values: dict[str, Any] = {}
        for name in names:
            metric = metric_fns[name]
            values[name] = metric.eval() if _sum_fields(metric) else _mean_over_ranks(name, metric.eval())
        return {name: values[name] for name in metric_fns}

    def reduce_mean(self, loss_metric: Any) -> float:
        """The mean validation loss over the batches of all ranks."""
        if not self.is_distributed:
            return loss_metric.eval()
        _all_reduce_sums([loss_metric])
        return loss_metric.eval()


# --------------------------------------------------------------------------- agreeing on a stop


class StopVote:
    """Whether the training loop stops now, the same answer on every rank.

    Stand-alone it is the run context's own flag. With several ranks the
    flags are combined with a 1-element ``all_reduce(MAX)`` on the host (a gloo
    side group under nccl, so the GPU is not synchronised):

    * after a step the vote is *asynchronous*: the flags of step *k* are sent
      when step *k* ends and read when step *k + 1* ends, by which time they
      have long arrived, so no step waits for the network. A stop requested in
      step *k* stops every rank after step *k + 1*;
    * after an epoch (the epoch-end hooks, e.g. ``EarlyStopping``, may have
      asked to stop) the pending vote is read and one blocking vote is taken,
      so an epoch-end request stops every rank at that epoch's end.
    """

    def __init__(self, distributed: bool) -> None:
        self._distributed = distributed
        self._pending: tuple[Any, torch.Tensor] | None = None

    def after_step(self, run_context: Any) -> bool:
        """Called after every step; True when every rank stops now."""
        if not self._distributed:
            return run_context._stop_requested
        stop = self._read_pending()
        if stop:
            run_context.request_stop()
            return True
        group, device = _control_group()
        flag = _flag(run_context, device)
        work = torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX, group=group, async_op=True)
        self._pending = (work, flag)
        return False

    def after_epoch(self, run_context: Any) -> bool:
        """Called after every epoch's end hooks; True when every rank stops now."""
        if not self._distributed:
            return run_context._stop_requested
        stop = self._read_pending()
        group, device = _control_group()
        flag = _flag(run_context, device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX, group=group)
        if stop or flag.item() > 0:
            run_context.request_stop()
            return True
        return False

    def _read_pending(self) -> bool:
        if self._pending is None:
            return False
        work, flag = self._pending
        self._pending = None
        work.wait()
        return flag.item() > 0


def _flag(run_context: Any, device: torch.device) -> torch.Tensor:
    return torch.tensor([1.0 if run_context.get_stop_requested() else 0.0], device=device)


# --------------------------------------------------------------------------- metric reduction


def _sum_fields(metric: Any) -> tuple[str, ...]:
    declared = getattr(metric, "distributed_sums", None)
    if declared:
        return tuple(declared)
    if isinstance(metric, (m.Accuracy, m.TopKCategoricalAccuracy)):
        return ("_correct", "_total")
    if isinstance(metric, (m.Loss, m._ErrorMean)):
        return ("_sum", "_count")
    return ()


def _length(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, torch.Tensor):
        return value.numel()
    return 1


def _all_reduce_sums(metrics: list[Any]) -> None:
    """Sum the ``distributed_sums`` fields of ``metrics`` over the ranks, in place (two small collectives).

    A field that is ``None`` on some ranks (no sample seen there) takes the
    shape it has elsewhere.
    """
    if not metrics:
        return
    dist = torch.distributed
    device = collective_device()
    slots = [(metric, field) for metric in metrics for field in _sum_fields(metric)]
    local = [getattr(metric, field) for metric, field in slots]
    lengths = torch.tensor([_length(v) for v in local], dtype=torch.int64, device=device)
    longest = lengths.clone()
    dist.all_reduce(longest, op=dist.ReduceOp.MAX)
    longest_list = longest.tolist()
    for (metric, field), own, size in zip(slots, lengths.tolist(), longest_list):
        if own not in (0, size):
            raise ValueError(
                f"For the metric {type(metric).__name__}, the ranks hold '{field}' with different sizes "
                f"({own} here, {size} elsewhere), e.g. a different number of classes."
            )
    parts = []
    for value, size in zip(local, longest_list):
        if value is None:
            parts.append(torch.zeros(size, dtype=torch.float64, device=device))
        elif isinstance(value, torch.Tensor):
            parts.append(value.detach().reshape(-1).to(device=device, dtype=torch.float64))
        else:
            parts.append(torch.tensor([float(value)], dtype=torch.float64, device=device))
    flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=device)
    dist.all_reduce(flat)
    flat = flat.cpu()
    offset = 0
    for (metric, field), value, size in zip(slots, local, longest_list):
        chunk = flat[offset : offset + size]
        offset += size
        if size == 0:
            continue
        if isinstance(value, torch.Tensor):
            dtype = value.dtype if not value.is_floating_point() else torch.float64
            new = chunk.to(dtype=dtype).reshape(value.shape).to(value.device)
        elif value is None:
            new = chunk.clone()
        elif isinstance(value, bool) or isinstance(value, numbers.Integral):
            new = int(round(float(chunk[0])))
        else:
            new = float(chunk[0])
        setattr(metric, field, new)


_WARNED: set[str] = set()


def _mean_over_ranks(name: str, value: Any) -> Any:
    """A per-rank metric value averaged over the ranks (numbers, lists of numbers, tensors)."""
    dist = torch.distributed
    device = collective_device()
    numeric: torch.Tensor | None = None
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.dtype in (torch.int32, torch.int64)):
        numeric = value.detach().reshape(-1).double()
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        numeric = torch.tensor([float(value)], dtype=torch.float64)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        numeric = torch.tensor([float(v) for v in value], dtype=torch.float64)
    # Every rank first tells whether it can average (and how many numbers), so all take the same path.
    header = torch.tensor([0.0 if numeric is None else 1.0, 0.0 if numeric is None else float(numeric.numel())], device=device)
    low, high = header.clone(), header.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    if numeric is None or low[0].item() == 0 or low[1].item() != high[1].item():
        if name not in _WARNED:
            _WARNED.add(name)
            warnings.warn(
                f"The metric {name!r} ({type(value).__name__}) cannot be combined across ranks: each rank "
                "reports the value of its own shard. Give the metric class a 'distributed_sums' attribute "
                "naming the attributes that hold its sums to get the value over the whole dataset.",
                stacklevel=3,
            )
        return value
    total = numeric.to(device)
    dist.all_reduce(total)
    mean = (total / dist.get_world_size()).cpu()
    if isinstance(value, torch.Tensor):
        return mean.to(value.dtype if value.is_floating_point() else torch.float64).reshape(value.shape)
    if isinstance(value, (list, tuple)):
        return type(value)(float(v) for v in mean)
    return float(mean[0])
