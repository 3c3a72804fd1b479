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
* No rank waits for the others longer than ``NBCALLBACK_DIST_TIMEOUT`` seconds
  (default 300, or ``init_distributed(timeout_s=...)``): the set-up and the
  collectives nbcallback adds raise :class:`DistributedError` naming the rank
  and what it waited for.
* A group that torchrun starts again (``--max-restarts``) keeps its keys under
  a name fresh for that start, so it never reads what a killed rank left in
  torchrun's store (see :func:`init_distributed`).
* The built-in callbacks that print or write (LossMonitor, TimeMonitor,
  ModelCheckpoint, SummaryCollector, the widgets…) act on rank 0 only; set
  ``NBCALLBACK_CALLBACK_RANKS=all`` to let them act on every rank
  (:func:`acts_on_rank`).
"""
from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import numbers
import os
import socket
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

import torch
from torch import nn

from nbcallback.train import metrics as m
from nbcallback.train.serialization import load_module_entries, network_entries

__all__ = [
    "ParallelContext",
    "init_distributed",
    "DistributedError",
    "distributed_timeout",
    "all_reduce",
    "TIMEOUT_ENV",
    "acts_on_rank",
    "callback_ranks",
    "CALLBACK_RANKS_ENV",
    "DistributedDataParallel",
]

#: Environment variable choosing where rank-0 callbacks act: ``zero`` (default) or ``all``.
CALLBACK_RANKS_ENV = "NBCALLBACK_CALLBACK_RANKS"
_T = TypeVar("_T")


# --------------------------------------------------------------------------- process group set-up

#: Environment variable: seconds a rank waits for the others (set-up and every collective); default 300.
TIMEOUT_ENV = "NBCALLBACK_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0


class DistributedError(RuntimeError):
    """A rank waited for the others in vain: one never arrived, failed, or runs differently.

    The message names this rank, what it waited for and the time limit
    (``init_distributed(timeout_s=...)`` or ``NBCALLBACK_DIST_TIMEOUT``).
    """


def distributed_timeout(timeout_s: float | None = None) -> float:
    """The seconds a rank waits for the others: ``timeout_s``, else ``$NBCALLBACK_DIST_TIMEOUT``, else 300.

    Raises:
        ValueError: The value is not a positive number (the message names where it came from).
    """
    source = "timeout_s"
    if timeout_s is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_TIMEOUT_S
        source = TIMEOUT_ENV
        try:
            timeout_s = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, e.g. 300, but got {raw!r}.") from None
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not 0 < float(timeout_s) < float("inf"):
        raise ValueError(f"{source} must be a positive number of seconds, e.g. 300, but got {timeout_s!r}.")
    return float(timeout_s)


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
      explicit ``init_method`` it creates the process group
      (``torch.distributed.init_process_group``). With CUDA available it first
      selects ``cuda:LOCAL_RANK``, so ``Model`` (whose default device is the
      current CUDA device) trains there, and uses ``nccl``; otherwise ``gloo``.
    * Under plain ``python`` (no ``WORLD_SIZE``) it does nothing: the same
      script runs stand-alone.
    * When a process group is already initialised it is used as it is.

    Every rank first announces itself in the launcher's key-value store and
    waits (at most ``timeout_s``) until all ranks of *this* start have done
    so; the group then keeps its keys under a name fresh for this start.
    torchrun keeps one store for all restarts of a job (``--max-restarts``),
    and without the fresh name a restarted rank can read the network address
    a killed rank left there (``Gloo connectFullMesh failed … Connection
    refused``, or a hang; pytorch/pytorch#135712, #167288).

    Args:
        backend: ``'nccl'``, ``'gloo'`` …; ``None`` picks nccl with CUDA, else gloo.
        init_method: e.g. ``'tcp://127.0.0.1:29500'`` or ``'file:///tmp/pg'``;
            ``None`` is ``'env://'`` (torchrun's ``MASTER_ADDR``/``MASTER_PORT``).
        world_size, rank: for an explicit ``init_method``; ``None`` reads
            ``WORLD_SIZE`` / ``RANK``.
        timeout_s: how long a rank waits for the others, in the set-up and in
            every collective (gloo raises after it; nccl's watchdog ends the
            process). ``None``: ``$NBCALLBACK_DIST_TIMEOUT``, else 300 s.

    Returns:
        The :class:`ParallelContext` a ``Model`` created now will use.

    Raises:
        DistributedError: A rank did not arrive within the timeout, or the
            ranks disagree on the world size; the message names the ranks.

    The process group, and the gloo groups nbcallback adds for its own
    collectives, are destroyed when the process exits (``atexit``, before the
    interpreter shuts down: see :class:`_OwnGroups`); call
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
    seconds = distributed_timeout(timeout_s)
    timeout = datetime.timedelta(seconds=seconds)
    if world_size is None:
        world_size = int(env_world or 1)
    if rank is None:
        rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    use_cuda = torch.cuda.is_available() and backend in (None, "nccl")
    if backend is None:
        backend = "nccl" if use_cuda and dist.is_nccl_available() else "gloo"
    kwargs: dict[str, Any] = {}
    if use_cuda:
        device_index = local_rank % torch.cuda.device_count()
        torch.cuda.set_device(device_index)
        if backend == "nccl":
            kwargs["device_id"] = torch.device("cuda", device_index)
    url = init_method or "env://"
    where = _store_address(url)
    started = time.monotonic()
    try:
        store, rank, world_size = next(dist.rendezvous(url, rank=rank, world_size=world_size, timeout=timeout))
    except (RuntimeError, ValueError) as exc:  # DistStoreError / DistNetworkError: a timeout, a refused connection
        if "waiting for clients" in str(exc):  # rank 0 hosts the store (outside torchrun)
            raise DistributedError(
                f"Rank {rank} of {world_size} hosts the key-value store at {where} and waited {seconds:g} s for the "
                f"other ranks to connect: {_first_line(exc)} (this one included). Start every rank, with the same "
                f"WORLD_SIZE, or raise the limit: {_TIMEOUT_HINT}."
            ) from exc
        raise DistributedError(
            f"Rank {rank} of {world_size} could not reach the other ranks' key-value store at {where} within "
            f"{seconds:g} s: {_first_line(exc)}. Start every rank with the same MASTER_ADDR/MASTER_PORT (torchrun: "
            f"the same --rdzv-endpoint) and WORLD_SIZE, or raise the limit: {_TIMEOUT_HINT}."
        ) from exc
    namespace = _fresh_namespace(store, rank, world_size, started + seconds, seconds, where)
    try:
        dist.init_process_group(
            backend=backend, store=dist.PrefixStore(namespace, store), world_size=world_size, rank=rank,
            timeout=timeout, **kwargs,
        )
    except RuntimeError as exc:
        raise DistributedError(
            f"Rank {rank} of {world_size} could not connect to the other ranks ({backend}, store at {where}) "
            f"within {seconds:g} s: {_first_line(exc)}. {_PEER_HINT} {_TIMEOUT_HINT}."
        ) from exc
    _OWN_GROUPS.owns_default = True
    _at_exit(_OWN_GROUPS.close)
    return ParallelContext.detect()


_TIMEOUT_HINT = f"init_distributed(timeout_s=...) or {TIMEOUT_ENV} sets how long a rank waits"
_PEER_HINT = (
    "Another rank has failed (see its own error), is stuck, or runs differently (other data, other steps)."
)
_HANDSHAKE = "nbcallback/start"


def _store_address(url: str) -> str:
    if url.startswith("env://"):
        return f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
    return url


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300].rstrip(". ")


def _fresh_namespace(store: Any, rank: int, world_size: int, deadline: float, seconds: float, where: str) -> str:
    """A store prefix that only the ranks of this start share, once every rank announced itself.

    Rank 0 publishes a new random token; every other rank acknowledges the
    token it reads, with its world size. Rank 0 confirms once all ranks
    acknowledged (or reports a world size that differs). A token another
    rank reads may be stale, left by a rank 0 killed before a restart: if it
    was confirmed before this rank acknowledged it, or is never confirmed, the
    rank reads again until rank 0 of this start has written its own. Old
    processes are gone when torchrun restarts a group, so only the new rank 0
    can confirm a token after this rank acknowledged it.
    """
    token_key = f"{_HANDSHAKE}/token"
    me = json.dumps({"world_size": world_size, "host": socket.gethostname(), "pid": os.getpid()})
    if rank == 0:
        token = uuid.uuid4().hex
        store.set(token_key, token)
        acks = [f"{_HANDSHAKE}/{token}/rank{r}" for r in range(1, world_size)]
        pause = 0.005
        while acks and not store.check(acks):
            if time.monotonic() > deadline:
                missing = [str(r) for r, key in enumerate(acks, start=1) if not store.check([key])]
                who = f"rank {missing[0]}" if len(missing) == 1 else f"ranks {', '.join(missing)}"
                raise DistributedError(
                    f"Rank 0 of {world_size} waited {seconds:g} s for {who} to join (init_distributed, store at "
                    f"{where}); {len(missing)} of {world_size} ranks never arrived. Start every rank (torchrun: "
                    f"every node, with the same --nnodes and --nproc-per-node), or raise the limit: {_TIMEOUT_HINT}."
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
        sizes = {r: json.loads(store.get(key))["world_size"] for r, key in enumerate(acks, start=1)}
        unlike = {r: size for r, size in sizes.items() if size != world_size}
        verdict = "ok"
        if unlike:
            listed = ", ".join(f"rank {r} says {size}" for r, size in sorted(unlike.items()))
            verdict = (
                f"The ranks disagree on the world size: rank 0 says {world_size}, {listed}. Start every rank with "
                f"the same WORLD_SIZE (torchrun: the same --nnodes and --nproc-per-node on every node)."
            )
        store.set(f"{_HANDSHAKE}/{token}/go", verdict)
        if unlike:
            # Rank 0 may host the store (plain `python`, not torchrun): let the others read the verdict first.
            seen = [f"{_HANDSHAKE}/{token}/seen{r}" for r in range(1, world_size)]
            with contextlib.suppress(RuntimeError):
                store.wait(seen, datetime.timedelta(seconds=max(0.1, min(10.0, deadline - time.monotonic()))))
            raise DistributedError(verdict)
        return f"{_HANDSHAKE}/{token}/pg"
    try:
        return _join_namespace(store, rank, world_size, deadline, seconds, where, me)
    except DistributedError:
        raise
    except RuntimeError as exc:  # DistNetworkError: the store went away (rank 0 hosts it outside torchrun)
        raise DistributedError(
            f"Rank {rank} of {world_size} lost the key-value store at {where} while waiting for the other ranks "
            f"(init_distributed): {_first_line(exc)}. The process that hosts it (rank 0, outside torchrun) has "
            "ended: see its error."
        ) from exc


def _join_namespace(store: Any, rank: int, world_size: int, deadline: float, seconds: float, where: str, me: str) -> str:
    """The part of :func:`_fresh_namespace` on a rank other than 0."""
    token_key = f"{_HANDSHAKE}/token"
    acked: set[str] = set()
    pause = 0.005
    token = ""
    while True:
        token = store.get(token_key).decode() if store.check([token_key]) else ""
        if token:
            go_key = f"{_HANDSHAKE}/{token}/go"
            confirmed = store.check([go_key])
            if token in acked and confirmed:
                verdict = store.get(go_key).decode()
                if verdict != "ok":
                    store.set(f"{_HANDSHAKE}/{token}/seen{rank}", "1")
                    raise DistributedError(f"Rank {rank} (world size {world_size}): {verdict}")
                return f"{_HANDSHAKE}/{token}/pg"
            if token not in acked and not confirmed:  # this start's token (or a stale one never confirmed)
                store.set(f"{_HANDSHAKE}/{token}/rank{rank}", me)
                acked.add(token)
                continue
        if time.monotonic() > deadline:
            if not token or token not in acked:
                waited = (
                    "rank 0 to open the group (rank 0 has not announced this start: it is missing, or still "
                    "waiting for ranks that never came)"
                )
            else:
                missing = [
                    str(r) for r in range(1, world_size) if not store.check([f"{_HANDSHAKE}/{token}/rank{r}"])
                ]
                waited = "rank 0 to confirm that all ranks arrived" + (
                    f" (rank(s) {', '.join(missing)} never arrived)" if missing else ""
                )
            raise DistributedError(
                f"Rank {rank} of {world_size} waited {seconds:g} s for {waited} (init_distributed, store at "
                f"{where}). Start every rank (torchrun: every node, with the same --nnodes and --nproc-per-node), "
                f"or raise the limit: {_TIMEOUT_HINT}."
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _waited(what: str, action: Callable[[], _T]) -> _T:
    """``action()``, a collective; torch's error when a peer fails or the timeout passes, explained."""
    try:
        return action()
    except DistributedError:
        raise
    except RuntimeError as exc:  # DistBackendError: a timeout, a peer that left
        dist = torch.distributed
        rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else ("?", "?")
        text = str(exc)
        limit = f"{_group_timeout().total_seconds():g} s"
        if "timed out" in text.lower() or "timeout" in text.lower():
            why = f"the other ranks did not join it within {limit}"
        else:
            why = f"a peer left ({_first_line(exc)})"
        raise DistributedError(
            f"Rank {rank} of {world} waited for the other ranks in {what}, in vain: {why}. {_PEER_HINT} "
            f"{_TIMEOUT_HINT} (now {limit})."
        ) from exc


def _group_timeout() -> datetime.timedelta:
    """The default process group's timeout (its store's: init_distributed gives both the same)."""
    try:
        return torch.distributed.distributed_c10d._get_default_store().timeout
    except (RuntimeError, AttributeError, ValueError):
        return datetime.timedelta(seconds=distributed_timeout())


def all_reduce(tensor: torch.Tensor, op: Any = None, *, what: str, group: Any = None) -> None:
    """``torch.distributed.all_reduce`` (in place, blocking) whose failure names this rank and ``what`` it waited for.

    For the collectives callbacks add; bounded by the process group's
    timeout (:func:`init_distributed`'s ``timeout_s``). A tensor on the host
    goes through nbcallback's own gloo group, which is closed before the
    interpreter exits (see :class:`_OwnGroups`).

    Raises:
        DistributedError: Another rank failed, left, or did not join within the timeout.
    """
    dist = torch.distributed
    reduce_op = dist.ReduceOp.SUM if op is None else op
    if group is None and tensor.device.type == "cpu":
        group = _OWN_GROUPS.group("host")
    _waited(what, lambda: dist.all_reduce(tensor, op=reduce_op, group=group))


def collective_device() -> torch.device:
    """Where the tensors of a collective on the default group must live (CUDA for nccl)."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


class _OwnGroups:
    """The gloo groups nbcallback opens beside the default group, and their end when the process exits.

    * ``'votes'``: the stop votes (:class:`StopVote`). A group of their own
      pairs the votes only with votes: ranks that run different numbers of
      steps then meet in a vote, which names the difference, instead of one
      rank's vote meeting another's gradient all-reduce. Under nccl a flag on
      the GPU would also make every step wait for the device (``.item()``).
    * ``'host'``: the sums on the host that callbacks and metrics add
      (:func:`all_reduce` of a CPU tensor).

    Each is created on first use, which every rank reaches at the same point,
    for the default group of the moment (a new default group gets new ones).

    Why nbcallback owns them: gloo's worker threads drop a finished
    collective's tensors a moment after the collective returns. A tensor that
    Python has let go of by then needs the GIL, and if that moment falls in
    the interpreter's finalisation the process aborts ("terminate called
    without an active exception"; pytorch/pytorch#179291). ``destroy_process_group``
    does not stop gloo's threads, and the default group lives on in DDP. So at
    exit (:meth:`close`, ``atexit``, while the interpreter is whole) these
    groups are destroyed and their threads joined; the default group then has
    carried DDP's own buffers only, which Python never holds.
    """

    def __init__(self) -> None:
        self._world: int | None = None  # id() of the default group the groups belong to
        self._groups: dict[str, Any] = {}  # purpose -> group (None: no gloo in this build)
        self.owns_default = False  # init_distributed created the default group: close() destroys it too

    def group(self, purpose: str) -> Any:
        """The group for ``purpose`` (``'votes'`` or ``'host'``); None where gloo is missing (use the default)."""
        dist = torch.distributed
        world = id(dist.group.WORLD)
        if world != self._world:  # a new default group: the old one's groups went with it
            self._world, self._groups = world, {}
        if purpose not in self._groups:
            try:
                self._groups[purpose] = dist.new_group(backend="gloo", timeout=_group_timeout())
            except (RuntimeError, ValueError):  # a build without gloo
                self._groups[purpose] = None
            _at_exit(self.close)
        return self._groups[purpose]

    def close(self) -> None:
        """Destroy nbcallback's groups, joining their threads (and the default group when nbcallback created it)."""
        groups, self._groups, self._world = self._groups, {}, None
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            return
        if self.owns_default:
            self.owns_default = False
            dist.destroy_process_group()
        else:
            for group in groups.values():
                if group is not None:
                    dist.destroy_process_group(group)
        # The last references: each group's C++ side ends here, joining its worker threads (torch releases the
        # GIL for it, so a thread still holding a tensor can let it go).
        groups.clear()


def _at_exit(function: Callable[[], None]) -> None:
    """Run ``function`` once when the process exits."""
    atexit.unregister(function)
    atexit.register(function)


_OWN_GROUPS = _OwnGroups()


def _control_group() -> tuple[Any, torch.device]:
    """The group for the stop votes, and where their flags live (the host; the default group's device without gloo)."""
    group = _OWN_GROUPS.group("votes")
    return group, (torch.device("cpu") if group is not None else collective_device())


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
        return _waited(
            "creating the Model (DistributedDataParallel sends rank 0's weights to every rank: build the Model on "
            "every rank)",
            lambda: DistributedDataParallel(network, device_ids=device_ids),
        )

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
    flags are combined with a small ``all_reduce(MAX)`` on the host (a gloo
    side group under nccl, so the GPU is not synchronised):

    * before each step the vote is sent *asynchronously*, and read when
      that step ends, by which time it has long arrived (the step's gradient
      all-reduce has synchronised the ranks), so no step waits for the
      network. A stop requested in step *k* is sent when step *k + 1* begins
      and stops every rank after step *k + 1*;
    * after an epoch (the epoch-end hooks, e.g. ``EarlyStopping``, may have
      asked to stop) one blocking vote is taken, so an epoch-end request
      stops every rank at that epoch's end.

    Each vote also carries the number of steps this rank has begun and
    whether it is a step's or an epoch's vote, in a group of its own: ranks
    whose datasets give different numbers of batches meet in a vote (the
    rank with fewer batches ends its epoch while another begins one more
    step) and fail with an error naming the difference, instead of pairing a
    vote with a gradient all-reduce or waiting for the timeout.

    A loop that does not call :meth:`before_step` gets the same votes from
    :meth:`after_step` (sent after step *k*, read after step *k + 1*).
    """

    def __init__(self, distributed: bool) -> None:
        self._distributed = distributed
        self._pending: tuple[Any, torch.Tensor, float, float] | None = None
        self._steps = 0
        self._sent_before = False

    def before_step(self, run_context: Any) -> None:
        """Called before every step's forward pass: sends this step's vote (asynchronous)."""
        if not self._distributed:
            return
        self._steps += 1
        self._sent_before = True
        self._send(run_context)

    def after_step(self, run_context: Any) -> bool:
        """Called after every step; True when every rank stops now."""
        if not self._distributed:
            return run_context._stop_requested
        if self._sent_before:  # the vote this step sent before its forward pass
            if self._read_pending():
                run_context.request_stop()
                return True
            return False
        self._steps += 1
        if self._read_pending():
            run_context.request_stop()
            return True
        self._send(run_context)
        return False

    def _send(self, run_context: Any) -> None:
        group, device = _control_group()
        flag = _vote(run_context, device, self._steps, 0.0)
        work = _waited(_STEP_VOTE, lambda: torch.distributed.all_reduce(
            flag, op=torch.distributed.ReduceOp.MAX, group=group, async_op=True
        ))
        self._pending = (work, flag, float(self._steps), 0.0)

    def after_epoch(self, run_context: Any) -> bool:
        """Called after every epoch's end hooks; True when every rank stops now."""
        if not self._distributed:
            return run_context._stop_requested
        stop = self._read_pending()
        group, device = _control_group()
        flag = _vote(run_context, device, self._steps, 1.0)
        _waited(_EPOCH_VOTE, lambda: torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX, group=group))
        _check_in_step(flag, float(self._steps), 1.0)
        if stop or flag[0].item() > 0:
            run_context.request_stop()
            return True
        return False

    def _read_pending(self) -> bool:
        if self._pending is None:
            return False
        work, flag, steps, kind = self._pending
        self._pending = None
        _waited(_STEP_VOTE, work.wait)
        _check_in_step(flag, steps, kind)
        return flag[0].item() > 0


_STEP_VOTE = "the stop vote of a training step (request_stop on any rank stops all)"
_EPOCH_VOTE = "the stop vote at an epoch's end (request_stop on any rank stops all)"


def _vote(run_context: Any, device: torch.device, steps: int, kind: float) -> torch.Tensor:
    """``[stop, steps, -steps, kind, -kind]``: after MAX over the ranks, the flag and both ends of each range."""
    stop = 1.0 if run_context.get_stop_requested() else 0.0
    return torch.tensor([stop, float(steps), -float(steps), kind, -kind], dtype=torch.float64, device=device)


def _check_in_step(flag: torch.Tensor, steps: float, kind: float) -> None:
    values = flag.tolist()
    if values[1] == -values[2] == steps and values[3] == -values[4] == kind:
        return
    rank = torch.distributed.get_rank()

    def place(n: float, k: float) -> str:
        return f"at the end of an epoch after {n:g} steps" if k else f"at step {n:g}"

    others = [f"step {n:g}" for n in sorted({values[1], -values[2]} - {steps})]
    if values[3] != -values[4]:
        others.append("the end of an epoch" if kind == 0 else "(within an epoch)")
    raise DistributedError(
        f"The ranks are out of step: this rank (rank {rank}) is {place(steps, kind)} of this run, but another rank "
        f"is at {' '.join(others) or 'another point'}. Their training datasets give different numbers of batches "
        "per epoch (e.g. each rank reads its own files, or a dataset with num_shards=1, shuffle=False whose rows "
        "differ between ranks). Give every rank the same number of batches: a dataset sharded by rank (the default "
        "under torch.distributed) pads the shards to equal size."
    )


# --------------------------------------------------------------------------- metric reduction


_METRICS = "the reduction of the validation metrics over the ranks (Model.eval / fit's validation)"


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
    all_reduce(longest, dist.ReduceOp.MAX, what=_METRICS)
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
    all_reduce(flat, what=_METRICS)
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
    all_reduce(low, dist.ReduceOp.MIN, what=_METRICS)
    all_reduce(high, dist.ReduceOp.MAX, what=_METRICS)
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
    all_reduce(total, what=_METRICS)
    mean = (total / dist.get_world_size()).cpu()
    if isinstance(value, torch.Tensor):
        return mean.to(value.dtype if value.is_floating_point() else torch.float64).reshape(value.shape)
    if isinstance(value, (list, tuple)):
        return type(value)(float(v) for v in mean)
    return float(mean[0])
