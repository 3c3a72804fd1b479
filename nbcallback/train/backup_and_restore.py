"""``BackupAndRestore``: resume an interrupted training run exactly where its last backup was taken."""
from __future__ import annotations

import json
import os
import random
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch
import torch.distributed as dist

from nbcallback.train._params import is_data_parallel
from nbcallback.train._validation import check_bool
from nbcallback.train.callback import Callback, RunContext, overrides
from nbcallback.train.distributed import collective_device
from nbcallback.train.serialization import (
    load_checkpoint,
    load_param_into_net,
    remove_checkpoint_file,
    remove_stale_partials,
    save_checkpoint,
)

__all__ = ["BackupAndRestore"]

_PREFIX = "backup."
_FORMAT = 1


# --------------------------------------------------------------------------- random-number state


def _rng_snapshot() -> dict[str, Any]:
    """The global random states a training step or a shuffle may draw from."""
    np_state = np.random.get_state()
    py_state = random.getstate()
    snapshot: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": json.dumps(
            {
                "name": np_state[0],
                "keys": np_state[1].tolist(),
                "pos": int(np_state[2]),
                "has_gauss": int(np_state[3]),
                "cached_gaussian": float(np_state[4]),
            }
        ),
        "python": json.dumps([py_state[0], list(py_state[1]), py_state[2]]),
        "cuda": [],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        snapshot["cuda"] = [state.clone() for state in torch.cuda.get_rng_state_all()]
    return snapshot


def _rng_restore(snapshot: Mapping[str, Any]) -> None:
    torch.set_rng_state(snapshot["torch"].to(torch.uint8).cpu())
    state = json.loads(snapshot["numpy"])
    np.random.set_state(
        (state["name"], np.asarray(state["keys"], dtype=np.uint32), state["pos"], state["has_gauss"], state["cached_gaussian"])
    )
    version, internal, gauss = json.loads(snapshot["python"])
    random.setstate((version, tuple(internal), gauss))
    cuda = snapshot.get("cuda") or []
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.to(torch.uint8).cpu() for state in cuda[: torch.cuda.device_count()]])


def _rng_entries(name: str, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    entries: dict[str, Any] = {
        f"{_PREFIX}rng.{name}.torch": snapshot["torch"],
        f"{_PREFIX}rng.{name}.numpy": snapshot["numpy"],
        f"{_PREFIX}rng.{name}.python": snapshot["python"],
        f"{_PREFIX}rng.{name}.cuda_count": len(snapshot["cuda"]),
    }
    for index, state in enumerate(snapshot["cuda"]):
        entries[f"{_PREFIX}rng.{name}.cuda.{index}"] = state
    return entries


def _rng_from_entries(name: str, entries: Mapping[str, Any]) -> dict[str, Any]:
    count = int(entries.get(f"{_PREFIX}rng.{name}.cuda_count", 0))
    return {
        "torch": entries[f"{_PREFIX}rng.{name}.torch"],
        "numpy": entries[f"{_PREFIX}rng.{name}.numpy"],
        "python": entries[f"{_PREFIX}rng.{name}.python"],
        "cuda": [entries[f"{_PREFIX}rng.{name}.cuda.{index}"] for index in range(count)],
    }


def _jsonable(value: Any) -> Any:
    """numpy/torch scalars and arrays in a callback's state, as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


# --------------------------------------------------------------------------- the callback


class BackupAndRestore(Callback):
    """Back the run up regularly; a new process running the same ``train``/``fit`` call resumes it.

    Args:
        backup_dir: folder of the backup (created if missing). The file is
            ``{backup_dir}/backup.ckpt`` (``{backup_dir}/rank_{id}/backup.ckpt``
            for each process of a multi-process run).
        save_freq: ``'epoch'`` (the default) backs up at the end of every epoch;
            a positive int ``n`` backs up every ``n`` global steps (and at the end
            of an epoch whose last step was due). **MindSpore reads an int as a
            number of epochs; nbcallback, like Keras, reads it as steps**,
            because a mid-epoch backup is what saves work when an epoch is long.
        delete_checkpoint: delete the backup when training finishes normally
            (also after ``request_stop()``, e.g. by :class:`EarlyStopping`), so
            the next run starts afresh. With False the backup stays, and running
            the same call again "resumes" a finished run: nothing is trained.

    What a backup holds, and what resuming restores:

    * the network's weights and the optimizer's state, including every param
      group's learning rate (so :class:`LearningRateScheduler` and
      :class:`ReduceLROnPlateau` continue with the rate they had);
    * the epoch and the step reached, and the global step counter
      ``cur_step_num``: ``Model`` re-enters that epoch and skips the batches
      already trained (without running hooks for them);
    * torch's (and numpy's and Python's) global random state at the start of
      the epoch, restored in ``on_train_epoch_begin`` so the dataset draws the
      same shuffle order, and at the backup point, restored once the trained
      batches are skipped, so dropout and random augmentations continue as in
      an uninterrupted run;
    * the state of callbacks that keep some (:meth:`Callback.state_dict`:
      :class:`History`, :class:`EarlyStopping`, :class:`ReduceLROnPlateau`,
      :class:`BestCheckpoint`, and any callback of yours that implements it),
      matched by position and class in the callback list and given back with
      :meth:`Callback.load_state_dict`.

    On a CPU with a fixed seed (torch's, and numpy's if the pipeline uses it),
    a run killed (even with ``kill -9``) and resumed ends with weights bitwise
    equal to an uninterrupted run. Backups are written atomically: a kill
    during a write leaves the previous backup. A backup is written when the
    next step (or epoch) begins, once every callback has finished the previous
    one, so a learning-rate change or a History entry made by a callback later
    in the list is included. (The one thing not reproduced: random numbers
    drawn by a callback placed *after* this one, in ``on_train_step_end``.)

    A run stopped by :class:`OnRequestExit` (SIGTERM) writes a backup at the
    stop point and keeps it, so the restarted job resumes there. A run that
    raises keeps the last backup.

    Unlike MindSpore (which only reloads the weights: the caller had to pass
    ``initial_epoch`` and the data order restarted), nothing needs to change in
    the ``train``/``fit`` call to resume. Deleting a backup that was never
    written is not an error.

    Raises:
        TypeError / ValueError: bad arguments (named in the message).
        NotADirectoryError: ``backup_dir`` is an existing file.
        ValueError (at the start of training): the backup belongs to another run
            (other steps per epoch, other network, or epochs outside this call).
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike[str],
        save_freq: str | int = "epoch",
        delete_checkpoint: bool = True,
    ) -> None:
        super().__init__()
        owner = "BackupAndRestore"
        if not isinstance(backup_dir, (str, os.PathLike)):
            raise TypeError(f"For '{owner}', the argument 'backup_dir' must be a path string, but got {type(backup_dir).__name__}.")
        folder = Path(os.path.realpath(os.fspath(backup_dir)))
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"For '{owner}', the backup_dir {folder} is an existing file.")
        if isinstance(save_freq, str):
            if save_freq != "epoch":
                raise ValueError(
                    f"For '{owner}', the argument 'save_freq' must be 'epoch' or a positive int (a number of "
                    f"steps), but got {save_freq!r}."
                )
        elif isinstance(save_freq, bool) or not isinstance(save_freq, int):
            raise TypeError(
                f"For '{owner}', the argument 'save_freq' must be 'epoch' or a positive int, but got "
                f"{type(save_freq).__name__}."
            )
        elif save_freq <= 0:
            raise ValueError(
                f"For '{owner}', the argument 'save_freq' must be 'epoch' or a positive int, but got {save_freq}."
            )
        self.save_freq = save_freq
        self.delete_checkpoint = check_bool(delete_checkpoint, "delete_checkpoint", owner)
        folder.mkdir(parents=True, exist_ok=True)
        self.backup_dir = str(folder)
        self.backup_file = str(folder / "backup.ckpt")
        self._reset()

    def _reset(self) -> None:
        self._resume: dict[str, Any] | None = None
        self._pending: dict[str, Any] | None = None
        self._epoch_start_rng: dict[str, Any] | None = None
        self._due_epoch_end = False
        self._step_in_epoch = 0
        self._batch_num = 0
        #: (epoch index, step in epoch, global step) of the last resume, for tests and logs.
        self.resumed_from: tuple[int, int, int] | None = None

    # ------------------------------------------------------------------ file

    def _file_for(self, cb_params: Mapping[str, Any]) -> Path:
        if is_data_parallel(cb_params):
            return Path(self.backup_dir) / f"rank_{cb_params.get('rank_id', 0)}" / "backup.ckpt"
        return Path(self.backup_file)

    def _write(self, cb_params: Mapping[str, Any], point: tuple[int, int, int], epoch_start: Mapping[str, Any], now: Mapping[str, Any]) -> None:
        path = self._file_for(cb_params)
        path.parent.mkdir(parents=True, exist_ok=True)
        epoch, step, global_step = point
        append: dict[str, Any] = {
            f"{_PREFIX}format": _FORMAT,
            f"{_PREFIX}epoch": int(epoch),
            f"{_PREFIX}step_in_epoch": int(step),
            f"{_PREFIX}cur_step_num": int(global_step),
            f"{_PREFIX}batch_num": int(self._batch_num),
        }
        append.update(_rng_entries("epoch_start", epoch_start))
        append.update(_rng_entries("now", now))
        states = []
        for index, callback in enumerate(cb_params.get("list_callback") or ()):
            if callback is self or not overrides(callback, "state_dict"):
                continue
            state = callback.state_dict()
            plain = {name: value for name, value in state.items() if not isinstance(value, torch.Tensor)}
            states.append({"index": index, "class": type(callback).__name__, "state": plain})
            for name, value in state.items():
                if isinstance(value, torch.Tensor):
                    append[f"{_PREFIX}callback.{index}.{name}"] = value
        append[f"{_PREFIX}callbacks"] = json.dumps(states, default=_jsonable)
        save_checkpoint(cb_params["train_network"], str(path), append_dict=append)

    def _point(self, cb_params: Mapping[str, Any]) -> tuple[int, int, int]:
        """Where a run resumed from now would start: (epoch index, batches of it done, global step)."""
        epoch_index = cb_params.get("cur_epoch_num", 1) - 1
        if self._step_in_epoch >= self._batch_num:
            return epoch_index + 1, 0, cb_params["cur_step_num"]
        return epoch_index, self._step_in_epoch, cb_params["cur_step_num"]

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._reset()
        self._batch_num = int(cb_params["batch_num"])
        path = self._file_for(cb_params)
        remove_stale_partials(path.parent)
        exists = path.is_file()
        entries = load_checkpoint(str(path)) if exists else {}
        point = None
        if exists:
            if int(entries.get(f"{_PREFIX}format", 0)) != _FORMAT or f"{_PREFIX}epoch" not in entries:
                raise ValueError(
                    f"For 'BackupAndRestore', {path} is not a backup written by BackupAndRestore; delete it or use "
                    "another backup_dir."
                )
            saved_batches = int(entries[f"{_PREFIX}batch_num"])
            if saved_batches != self._batch_num:
                raise ValueError(
                    f"For 'BackupAndRestore', the backup {path} was written by a run with {saved_batches} steps per "
                    f"epoch, but this run has {self._batch_num}. It belongs to another run: delete it or use another "
                    "backup_dir."
                )
            point = (
                int(entries[f"{_PREFIX}epoch"]),
                int(entries[f"{_PREFIX}step_in_epoch"]),
                int(entries[f"{_PREFIX}cur_step_num"]),
            )
        self._check_ranks_agree(cb_params, point)
        if point is None:
            return
        weights = {k: v for k, v in entries.items() if not k.startswith(_PREFIX)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            not_loaded, _ = load_param_into_net(cb_params["train_network"], weights)
        if not_loaded:
            raise ValueError(
                f"For 'BackupAndRestore', the backup {path} does not fit this network ({len(not_loaded)} parameters "
                f"missing, e.g. {not_loaded[0]!r}). It belongs to another run: delete it or use another backup_dir."
            )
        epoch, step, global_step = point
        self._resume = {
            "epoch": epoch,
            "step": step,
            "epoch_start": _rng_from_entries("epoch_start", entries),
            "now": _rng_from_entries("now", entries),
            "callbacks": json.loads(entries.get(f"{_PREFIX}callbacks", "[]")),
            "tensors": {k[len(_PREFIX) + len("callback."):]: v for k, v in entries.items() if k.startswith(f"{_PREFIX}callback.")},
        }
        self.resumed_from = point
        run_context.resume_at(epoch, step, global_step, after_skip=self._after_skip if step else None)

    def _check_ranks_agree(self, cb_params: Mapping[str, Any], point: tuple[int, int, int] | None) -> None:
        if not is_data_parallel(cb_params):
            return
        if not (dist.is_available() and dist.is_initialized()):
            return
        device = collective_device()
        values = [1.0, *point] if point is not None else [0.0, -1.0, -1.0, -1.0]
        low = torch.tensor(values, dtype=torch.float64, device=device)
        high = low.clone()
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        if not torch.equal(low, high):
            raise ValueError(
                f"For 'BackupAndRestore', the processes hold different backups in {self.backup_dir} (some missing or "
                "taken at other steps, e.g. killed during a backup). Delete the rank_* folders to start afresh."
            )

    def _restore_callbacks(self, cb_params: Mapping[str, Any]) -> None:
        assert self._resume is not None
        callbacks = list(cb_params.get("list_callback") or ())
        tensors = self._resume["tensors"]
        for saved in self._resume["callbacks"]:
            index, name = saved["index"], saved["class"]
            target = callbacks[index] if index < len(callbacks) else None
            if target is None or type(target).__name__ != name or not overrides(target, "load_state_dict"):
                warnings.warn(
                    f"BackupAndRestore: the backup holds the state of a {name} at position {index} of the callback "
                    "list, but this run's list differs there; that state is not restored.",
                    RuntimeWarning,
                    stacklevel=3,
                )
                continue
            prefix = f"{index}."
            own = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            target.load_state_dict({**own, **saved["state"]})

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        resume = self._resume
        self._step_in_epoch = 0
        if resume is not None and cb_params["cur_epoch_num"] - 1 == resume["epoch"]:
            _rng_restore(resume["epoch_start"])
            self._restore_callbacks(cb_params)
            self._step_in_epoch = resume["step"]
            if not resume["step"]:
                self._resume = None
        if self._due_epoch_end:
            # The previous epoch is over, every callback included: back up "about to start this epoch".
            self._due_epoch_end = False
            now = _rng_snapshot()
            self._write(cb_params, (cb_params["cur_epoch_num"] - 1, 0, cb_params["cur_step_num"]), now, now)
        self._epoch_start_rng = _rng_snapshot()

    def _after_skip(self) -> None:
        if self._resume is not None:
            _rng_restore(self._resume["now"])
            self._resume = None

    def on_train_step_begin(self, run_context: RunContext) -> None:
        pending = self._pending
        if pending is not None:
            # The previous step is over, every callback included (a learning-rate change too).
            self._pending = None
            assert self._epoch_start_rng is not None
            self._write(run_context.original_args(), pending["point"], self._epoch_start_rng, pending["rng"])

    def on_train_step_end(self, run_context: RunContext) -> None:
        self._step_in_epoch += 1
        if self.save_freq == "epoch":
            return
        cb_params = run_context.original_args()
        if cb_params["cur_step_num"] % self.save_freq == 0:  # type: ignore[operator]
            self._pending = {"point": self._point(cb_params), "rng": _rng_snapshot()}

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        # A complete epoch is backed up when the next one begins (or at the end of training), after
        # the callbacks that follow this one in the list have finished the epoch too. An epoch cut
        # short by request_stop() is the last one: on_train_end decides.
        if self._step_in_epoch >= self._batch_num and (self.save_freq == "epoch" or self._pending is not None):
            self._due_epoch_end = True
            self._pending = None

    def _save_now(self, cb_params: Mapping[str, Any]) -> None:
        if self._epoch_start_rng is None:
            return  # no epoch began in this run: the backup on disk (if any) is still the right one
        point = self._point(cb_params)
        now = _rng_snapshot()
        pending, self._pending = self._pending, None
        if point[1] == 0:
            epoch_start = now  # the next epoch starts from the state of this moment
        else:
            epoch_start = self._epoch_start_rng or now
            if pending is not None and pending["point"] == point:
                now = pending["rng"]
        self._write(cb_params, point, epoch_start, now)

    def on_train_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        exit_requested = self._stopped_by_exit_request(cb_params)
        if exit_requested or (not self.delete_checkpoint and self._due_epoch_end):
            self._save_now(cb_params)
        if not exit_requested and self.delete_checkpoint:
            # In call order: after any write to the backup file still in flight.
            remove_checkpoint_file(self._file_for(cb_params))
        self._resume = None
        self._pending = None
        self._due_epoch_end = False

    @staticmethod
    def _stopped_by_exit_request(cb_params: Mapping[str, Any]) -> bool:
        """Whether an :class:`OnRequestExit` of this run got its signal (on any rank)."""
        flag = any(
            type(callback).__name__ == "OnRequestExit" and getattr(callback, "exit", False) is True
            for callback in cb_params.get("list_callback") or ()
        )
        if not is_data_parallel(cb_params):
            return flag
        if not (dist.is_available() and dist.is_initialized()):
            return flag
        device = collective_device()
        value = torch.tensor([1.0 if flag else 0.0], device=device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item() > 0)
