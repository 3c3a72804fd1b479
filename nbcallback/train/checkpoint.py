"""``CheckpointConfig`` and ``ModelCheckpoint``: save the training network as it trains.

File names, the prefix de-duplication and the save schedule follow MindSpore
2.3 exactly, so the tutorial's ``ModelCheckpoint(prefix="mnist",
directory="./checkpoint", config=CheckpointConfig(save_checkpoint_steps=1875,
keep_checkpoint_max=10))`` with one 938-step epoch leaves ``mnist-1_938.ckpt``
and ``mnist-graph.meta``.

Every file is written atomically (see :mod:`nbcallback.train.serialization`);
old checkpoints are rotated out only *after* the new one is complete, so the
newest complete checkpoint is never deleted, even by a crash mid-save.
"""
from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import torch
from torch import nn

from nbcallback.train.callback import BuiltinCallback, CallbackParams, RunContext
from nbcallback.train.distributed import acts_on_rank
from nbcallback.train.serialization import (
    atomic_write,
    describe_network,
    remove_stale_partials,
    remove_unless_pending,
    save_checkpoint,
    wait_for_async_saves,
)

__all__ = ["CheckpointConfig", "ModelCheckpoint", "describe_network"]

_APPEND_KEYS = ("epoch_num", "step_num")


def _check_count(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For 'CheckpointConfig', '{name}': The input value must be int, but got '{type(value).__name__}'.")
    if value < 0:
        raise ValueError(
            f"For 'CheckpointConfig', '{name}': The input value must be int and must >= 0, but got '{value}' with type 'int'."
        )
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For 'CheckpointConfig', the type of '{name}' must be bool, but got {type(value).__name__}.")
    return value


class CheckpointConfig:
    """When to save checkpoints and how many to keep.

    Args:
        save_checkpoint_steps: save every N global steps (counted from the last
            save). When > 0 it wins over ``save_checkpoint_seconds``.
        save_checkpoint_seconds: save when this many seconds passed since the
            last save (only when ``save_checkpoint_steps`` is 0 or None).
        keep_checkpoint_max: keep at most this many files of this prefix
            (the oldest are deleted after a new one is written). When > 0 it wins
            over ``keep_checkpoint_per_n_minutes``.  Rotation never deletes a
            file that a queued write (e.g. an ``async_save`` still running) will
            produce.
        keep_checkpoint_per_n_minutes: keep one checkpoint per N minutes (the
            first of each window); only when ``keep_checkpoint_max`` is 0 or None.
            If both keep arguments are 0, ``keep_checkpoint_max`` becomes 1.
        integrated_save: accepted for MindSpore compatibility (no effect in one process).
        async_save: write files on a background thread (the tensors are copied
            first, so training does not wait for the disk).
        saved_network: a ``torch.nn.Module`` to save instead of the training
            network (e.g. the backbone only, without optimizer state).
        append_info: extra entries stored in every file: ``"epoch_num"`` and/or
            ``"step_num"`` (the current epoch and global step) and at most one dict
            ``{str: int|float|bool|str|Tensor}``.
        enc_key, enc_mode: MindSpore's encryption; not supported (``enc_key`` must be None).
        exception_save: when training raises (including ``KeyboardInterrupt``),
            save ``{prefix}-{epoch}_{step}_breakpoint.ckpt`` before the error propagates.
        crc_check: accepted for MindSpore compatibility (zip members always carry CRCs).

    Raises:
        TypeError / ValueError: with MindSpore's messages, for a wrong type, a
            negative count, all four schedule arguments 0/None, or a bad ``append_info``.
    """

    def __init__(
        self,
        save_checkpoint_steps: int | None = 1,
        save_checkpoint_seconds: int | None = 0,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_per_n_minutes: int | None = 0,
        integrated_save: bool = True,
        async_save: bool = False,
        saved_network: nn.Module | None = None,
        append_info: list[Any] | None = None,
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
        exception_save: bool = False,
        crc_check: bool = False,
        **kwargs: Any,
    ) -> None:
        steps = _check_count("save_checkpoint_steps", save_checkpoint_steps)
        seconds = _check_count("save_checkpoint_seconds", save_checkpoint_seconds)
        keep_max = _check_count("keep_checkpoint_max", keep_checkpoint_max)
        keep_minutes = _check_count("keep_checkpoint_per_n_minutes", keep_checkpoint_per_n_minutes)
        if saved_network is not None and not isinstance(saved_network, nn.Module):
            raise TypeError(
                "For 'CheckpointConfig', the type of 'saved_network' must be None or Cell, "
                f"but got {type(saved_network)}."
            )
        if not steps and not seconds and not keep_max and not keep_minutes:
            raise ValueError(
                "For 'CheckpointConfig', the input arguments 'save_checkpoint_steps', 'save_checkpoint_seconds', "
                "'keep_checkpoint_max' and 'keep_checkpoint_per_n_minutes' can't be all None or 0."
            )
        self.exception_save = _check_bool("exception_save", exception_save)
        if steps:
            seconds = None
        if keep_max:
            keep_minutes = None
        elif not keep_minutes:
            keep_max = 1
        self._save_checkpoint_steps = steps
        self._save_checkpoint_seconds = seconds
        self._keep_checkpoint_max = keep_max
        self._keep_checkpoint_per_n_minutes = keep_minutes
        self._integrated_save = _check_bool("integrated_save", integrated_save)
        self._async_save = _check_bool("async_save", async_save)
        self._crc_check = _check_bool("crc_check", crc_check)
        if enc_key is not None:
            raise ValueError(
                "For 'CheckpointConfig', encryption ('enc_key') is not supported by nbcallback; leave it None."
            )
        if not isinstance(enc_mode, str):
            raise TypeError(f"For 'CheckpointConfig', 'enc_mode' must be str, but got {type(enc_mode).__name__}.")
        self._enc_key = enc_key
        self._enc_mode = enc_mode
        self._saved_network = saved_network
        self._append_dict = self._handle_append_info(append_info)
        self._kwargs = dict(kwargs)

    @staticmethod
    def _handle_append_info(append_info: Any) -> dict[str, Any] | None:
        if append_info is None or append_info == []:
            return None
        if not isinstance(append_info, list):
            raise TypeError(
                f"For 'CheckpointConfig', the type of 'append_info' must be list,but got {type(append_info)}."
            )
        result: dict[str, Any] = {}
        seen_dict = False
        for element in append_info:
            if isinstance(element, str):
                if element not in _APPEND_KEYS:
                    raise ValueError(
                        "For 'CheckpointConfig', the value of element in the argument 'append_info' must be in "
                        f"['epoch_num', 'step_num'], but got {element}."
                    )
                result[element] = 0
            elif isinstance(element, dict):
                if seen_dict:
                    raise TypeError(
                        "For 'CheckpointConfig', the element of 'append_info' must has only one dict, "
                        "but got more than one."
                    )
                seen_dict = True
                for key, value in element.items():
                    if not isinstance(key, str) or not isinstance(value, (int, float, bool, str, torch.Tensor)):
                        raise TypeError(
                            "For 'CheckpointConfig', the type of dict in 'append_info' must be key: string, "
                            f"value: int, float, bool, str or Tensor, but got {key!r}: {type(value).__name__}."
                        )
                    result[key] = value
            else:
                raise TypeError(
                    "For 'CheckpointConfig', the type of element in the argument 'append_info' must be str or dict, "
                    f"but got {type(element).__name__}."
                )
        return result

    @property
    def save_checkpoint_steps(self) -> int | None:
        return self._save_checkpoint_steps

    @property
    def save_checkpoint_seconds(self) -> int | None:
        return self._save_checkpoint_seconds

    @property
    def keep_checkpoint_max(self) -> int | None:
        return self._keep_checkpoint_max

    @property
    def keep_checkpoint_per_n_minutes(self) -> int | None:
        return self._keep_checkpoint_per_n_minutes

    @property
    def integrated_save(self) -> bool:
        return self._integrated_save

    @property
    def async_save(self) -> bool:
        return self._async_save

    @property
    def saved_network(self) -> nn.Module | None:
        return self._saved_network

    @property
    def enc_key(self) -> bytes | None:
        return self._enc_key

    @property
    def enc_mode(self) -> str:
        return self._enc_mode

    @property
    def crc_check(self) -> bool:
        return self._crc_check

    @property
    def append_dict(self) -> dict[str, Any] | None:
        return self._append_dict

    def get_checkpoint_policy(self) -> dict[str, Any]:
        """The schedule as a dict (MindSpore's keys)."""
        return {
            "save_checkpoint_steps": self.save_checkpoint_steps,
            "save_checkpoint_seconds": self.save_checkpoint_seconds,
            "keep_checkpoint_max": self.keep_checkpoint_max,
            "keep_checkpoint_per_n_minutes": self.keep_checkpoint_per_n_minutes,
            "saved_network": self.saved_network,
        }

    def __repr__(self) -> str:
        policy = ", ".join(f"{k}={v!r}" for k, v in self.get_checkpoint_policy().items() if k != "saved_network")
        return f"CheckpointConfig({policy})"


def _backbone(network: nn.Module) -> nn.Module:
    """The user's network inside a training wrapper (and inside DDP)."""
    inner = getattr(network, "network", None) or getattr(network, "backbone", None)
    if isinstance(inner, nn.Module):
        network = inner
    module = getattr(network, "module", None)
    if isinstance(module, nn.Module) and type(network).__name__ == "DistributedDataParallel":
        network = module
    return network


def _step_in_epoch(cb_params: Mapping[str, Any]) -> int:
    return (cb_params["cur_step_num"] - 1) % cb_params["batch_num"] + 1


class ModelCheckpoint(BuiltinCallback):
    """Save checkpoints of the training network on a schedule.

    Args:
        prefix: file-name prefix (no ``/``), or a callable ``f(cb_params) -> str``
            giving the full name (without ``.ckpt``) for each save. With a string,
            if the folder already holds ``{prefix}-*.ckpt`` files, the prefix gets a
            suffix (``mnist_1``, ``mnist_2`` …) so an earlier run is never overwritten.
        directory: the folder (created if missing). ``None`` is the current working
            directory at construction. May be a callable ``f(cb_params) -> str``.
        config: a :class:`CheckpointConfig` (``None``: save every step, keep 5).

    Files are named ``{prefix}-{epoch}_{step in epoch}.ckpt``; a final checkpoint
    is forced at the end of training unless one was just written at that step.
    Before the first checkpoint, ``{prefix}-graph.meta`` (JSON) describes the
    network. Only rank 0 writes when training with several processes (every
    rank with ``NBCALLBACK_CALLBACK_RANKS=all``: then give each rank its own
    ``directory``).

    Raises:
        ValueError: a bad prefix. TypeError: a bad directory or config type.
        NotADirectoryError: ``directory`` is an existing file.
    """

    def __init__(
        self,
        prefix: str | Callable[[CallbackParams], str] = "CKP",
        directory: str | os.PathLike[str] | Callable[[CallbackParams], str] | None = None,
        config: CheckpointConfig | None = None,
    ) -> None:
        super().__init__()
        if not callable(prefix) and (not isinstance(prefix, str) or "/" in prefix or not prefix):
            raise ValueError(
                "For 'ModelCheckpoint', the argument 'prefix' for checkpoint file name is invalid, it must be "
                f"callable or string that does not contain '/', but got {prefix}."
            )
        if config is None:
            config = CheckpointConfig()
        elif not isinstance(config, CheckpointConfig):
            raise TypeError(
                "For 'ModelCheckpoint', the type of argument 'config' should be 'CheckpointConfig', "
                f"but got {type(config)}."
            )
        self._config = config
        # The schedule, read on every step (the config is immutable).
        self._save_steps = config.save_checkpoint_steps
        self._save_seconds = config.save_checkpoint_seconds
        self._prefix_fn = prefix if callable(prefix) else None
        self._directory_fn = directory if callable(directory) else None
        # Callables name each save anew, so MindSpore calls them every step; plain names never change.
        self._names_fixed = self._prefix_fn is None and self._directory_fn is None
        if self._directory_fn is None:
            if directory is None:
                folder = Path.cwd()
            elif isinstance(directory, (str, os.PathLike)):
                folder = Path(os.path.realpath(os.fspath(directory)))
            else:
                raise TypeError("The path is invalid, the type should be string.")
            if folder.exists() and not folder.is_dir():
                raise NotADirectoryError(f"For 'ModelCheckpoint', the directory {folder} is an existing file.")
            folder.mkdir(parents=True, exist_ok=True)
            self._directory: Path | None = folder
        else:
            self._directory = None
        if self._prefix_fn is None and self._directory is not None:
            self._prefix = _deduplicated_prefix(self._directory, prefix)  # type: ignore[arg-type]
        else:
            self._prefix = prefix if isinstance(prefix, str) else ""
        self._last_triggered_step = 0
        self._last_time = time.time()
        self._last_time_for_keep = time.time()
        # An async save's (path, time): rotated once its file is complete (see _finish_async_save).
        self._rotation_due: tuple[Path, float] | None = None
        self._graph_written = False
        self._latest_ckpt_file_name = ""
        self._append_dict = dict(config.append_dict or {})
        self._append_initial = {k: self._append_dict.get(k, 0) for k in _APPEND_KEYS if k in self._append_dict}

    # ------------------------------------------------------------------ properties

    @property
    def latest_ckpt_file_name(self) -> str:
        """Absolute path of the last checkpoint written (``""`` before the first)."""
        return self._latest_ckpt_file_name

    @property
    def prefix(self) -> str:
        """The prefix in use (after de-duplication)."""
        return self._prefix

    @property
    def directory(self) -> str:
        """The folder checkpoints go to."""
        return str(self._directory) if self._directory is not None else ""

    @property
    def config(self) -> CheckpointConfig:
        return self._config

    # ------------------------------------------------------------------ hooks

    # MindSpore's legacy names (step_end, end), reached through on_train_step_end / on_train_end.
    def begin(self, run_context: RunContext) -> None:
        """Remove partial files left by an interrupted save."""
        if self._directory is not None:
            remove_stale_partials(self._directory)
        self._last_time = time.time()

    def step_end(self, run_context: RunContext) -> None:
        """Save when the schedule says so (the graph file first, once)."""
        cb_params = run_context.original_args()
        if self._graph_written and self._names_fixed and not self._due(cb_params, force=False):
            return  # an ordinary step: nothing to write, nothing to resolve
        if not acts_on_rank(cb_params):
            return
        self._resolve_names(cb_params)
        if not self._graph_written:
            self._write_graph(cb_params)
        self._save_ckpt(cb_params, force=False)

    def end(self, run_context: RunContext) -> None:
        """Force a final save unless this step was just saved; wait for async saves."""
        cb_params = run_context.original_args()
        if acts_on_rank(cb_params) and cb_params.get("cur_step_num", 0) > 0:
            self._resolve_names(cb_params)
            self._save_ckpt(cb_params, force=True)
        wait_for_async_saves()
        self._finish_async_save()

    def __exit__(self, *exc_info: object) -> None:
        wait_for_async_saves()
        self._finish_async_save()
        return None

    # ------------------------------------------------------------------ saving

    def _resolve_names(self, cb_params: CallbackParams) -> None:
        if self._prefix_fn is not None:
            prefix = self._prefix_fn(cb_params)
            if not isinstance(prefix, str) or "/" in prefix or not prefix:
                raise ValueError(
                    "For 'ModelCheckpoint', the argument 'prefix' for checkpoint file name is callable, it must "
                    f"return a string that does not contain '/', but got {prefix}."
                )
            self._prefix = prefix
        if self._directory_fn is not None:
            folder = self._directory_fn(cb_params)
            if not isinstance(folder, (str, os.PathLike)):
                raise TypeError(
                    f"For 'ModelCheckpoint', the callable 'directory' must return a path string, but got {folder!r}."
                )
            self._directory = Path(os.path.realpath(os.fspath(folder)))
        assert self._directory is not None
        # The folder is (re)created where files are written, not on every step (a syscall per step).

    def _write_graph(self, cb_params: CallbackParams) -> None:
        assert self._directory is not None
        network = self._config.saved_network or _backbone(cb_params["train_network"])
        text = json.dumps(describe_network(network), indent=1)
        graph_prefix = self._prefix if self._prefix_fn is None else "graph"
        self._directory.mkdir(parents=True, exist_ok=True)
        atomic_write(self._directory / f"{graph_prefix}-graph.meta", lambda handle: handle.write(text.encode()))
        self._graph_written = True

    def _due(self, cb_params: CallbackParams, force: bool) -> bool:
        step = cb_params["cur_step_num"]
        if step == self._last_triggered_step:
            return False
        if force:
            return True
        steps = self._save_steps
        if steps:
            return step >= self._last_triggered_step + steps
        seconds = self._save_seconds
        if seconds:
            return time.time() - self._last_time > seconds
        return False

    def _save_ckpt(self, cb_params: CallbackParams, force: bool) -> None:
        if not self._due(cb_params, force):
            return
        assert self._directory is not None
        self._directory.mkdir(parents=True, exist_ok=True)
        # As MindSpore does: let this callback's previous async save finish, so rotation sees its file.
        self._finish_async_save()
        now = time.time()
        if self._config.save_checkpoint_seconds and not self._config.save_checkpoint_steps:
            self._last_time = now
        self._last_triggered_step = cb_params["cur_step_num"]
        if self._prefix_fn is not None:
            name = f"{self._prefix}.ckpt"
        else:
            name = f"{self._prefix}-{cb_params['cur_epoch_num']}_{_step_in_epoch(cb_params)}.ckpt"
        path = self._directory / name
        self._write(cb_params, path)
        if self._config.async_save:
            # The file is still being written: rotating now could delete the newest complete one.
            self._rotation_due = (path, now)
        else:
            self._rotate(keep=path, now=now)
            self._last_time_for_keep = now
        self._latest_ckpt_file_name = str(path)
        cb_params["latest_ckpt_file"] = str(path)
        cb_params["last_save_ckpt_step"] = cb_params["cur_step_num"]

    def _finish_async_save(self) -> None:
        """Wait for this callback's last async save, then rotate for it (if its file exists)."""
        due, self._rotation_due = self._rotation_due, None
        if due is not None:
            wait_for_async_saves(due[0])
        if due is not None and due[0].is_file():
            self._rotate(keep=due[0], now=due[1])
            self._last_time_for_keep = due[1]

    def _write(self, cb_params: CallbackParams, path: Path) -> None:
        append = None
        if self._append_dict:
            append = dict(self._append_dict)
            if "epoch_num" in append:
                append["epoch_num"] = self._append_initial["epoch_num"] + cb_params.get("cur_epoch_num", 0)
            if "step_num" in append:
                append["step_num"] = self._append_initial["step_num"] + cb_params["cur_step_num"]
        network = self._config.saved_network or cb_params["train_network"]
        save_checkpoint(network, str(path), async_save=self._config.async_save, append_dict=append)

    def _managed_files(self) -> list[Path]:
        """Checkpoints of this prefix that rotation may delete (not breakpoints, not other prefixes)."""
        assert self._directory is not None
        start = self._prefix + "-"
        files = []
        for entry in self._directory.iterdir():
            name = entry.name
            if name.startswith(start) and name.endswith(".ckpt") and not re.search(r"[A-Za-z]", name[len(start):-5]):
                files.append(entry)
        return files

    def _rotate(self, keep: Path, now: float) -> None:
        if self._prefix_fn is not None:
            return
        config = self._config
        files = [f for f in self._managed_files() if f != keep]

        def age_key(path: Path) -> tuple[int, tuple[int, ...], str]:
            # Equal mtimes (coarse file-system clocks) fall back to the epoch/step numbers in the name.
            numbers = tuple(int(n) for n in re.findall(r"\d+", path.name[len(self._prefix):]))
            try:
                return path.stat().st_mtime_ns, numbers, path.name
            except OSError:
                return 0, numbers, path.name

        files.sort(key=age_key)
        if config.keep_checkpoint_max and config.keep_checkpoint_max > 0:
            surplus = len(files) + 1 - config.keep_checkpoint_max
            doomed = files[:max(surplus, 0)]
        elif config.keep_checkpoint_per_n_minutes and now - self._last_time_for_keep < config.keep_checkpoint_per_n_minutes * 60:
            window = config.keep_checkpoint_per_n_minutes * 60
            recent = [f for f in files if now - age_key(f)[0] / 1e9 < window]
            doomed = recent[1:]  # keep the oldest of the window
        else:
            doomed = []
        for path in doomed:
            # A file that a queued write (another callback, a user's async save) will produce stays.
            try:
                remove_unless_pending(path)
            except OSError as exc:
                warnings.warn(f"ModelCheckpoint could not remove the old checkpoint {path}: {exc}", stacklevel=2)

    def on_train_exception(self, run_context: RunContext, step_in_epoch: int) -> None:
        """Save ``{prefix}-{epoch}_{step}_breakpoint.ckpt`` when training failed (``exception_save``).

        ``step_in_epoch`` is 0 when the failing epoch ran no step yet. As in MindSpore,
        only the last ``ModelCheckpoint`` of the callback list writes one (and only
        when its own config has ``exception_save=True``).
        """
        cb_params = run_context.original_args()
        checkpoints = [cb for cb in cb_params.get("list_callback") or () if isinstance(cb, ModelCheckpoint)]
        if checkpoints and checkpoints[-1] is not self:
            return
        if not self._config.exception_save or not acts_on_rank(cb_params):
            return
        if "train_network" not in cb_params:
            return
        try:
            self._resolve_names(cb_params)
            assert self._directory is not None
            self._directory.mkdir(parents=True, exist_ok=True)
        except (ValueError, TypeError, OSError):
            return
        prefix = _deduplicated_prefix(self._directory, self._prefix, breakpoints=True)
        path = self._directory / f"{prefix}-{cb_params.get('cur_epoch_num', 0)}_{step_in_epoch}_breakpoint.ckpt"
        network = self._config.saved_network or cb_params["train_network"]
        save_checkpoint(network, str(path))
        self._latest_ckpt_file_name = str(path)


def _deduplicated_prefix(directory: Path, prefix: str, breakpoints: bool = False) -> str:
    """MindSpore's rule: ``mnist`` → ``mnist_1`` → ``mnist_2`` … when files of that prefix exist."""
    best = 0
    found = False
    for name in os.listdir(directory):
        if not name.endswith(".ckpt"):
            continue
        if name.endswith("_breakpoint.ckpt") != breakpoints:
            continue
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):]
        if rest and rest[0].isalpha():
            continue
        if rest.startswith("-"):
            found, best = True, max(best, 1)
            continue
        dash = rest.find("-")
        if dash > 1 and rest[0] == "_" and rest[1:dash].isdigit():
            found, best = True, max(best, int(rest[1:dash]) + 1)
    return f"{prefix}_{best}" if found else prefix
