"""``OnRequestExit``: on a signal, finish the current step, save, and stop cleanly."""
from __future__ import annotations

import json
import os
import signal
import threading
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch
import torch.distributed as dist

from nbcallback.train._params import backbone_of, is_data_parallel
from nbcallback.train._validation import check_bool
from nbcallback.train.callback import Callback, RunContext
from nbcallback.train.distributed import acts_on_rank, collective_device
from nbcallback.train.interrupt import SignalStop
from nbcallback.train.serialization import atomic_write, describe_network, load_checkpoint, save_checkpoint

__all__ = ["OnRequestExit"]

_UNCATCHABLE = {signal.SIGKILL: "SIGKILL"}
if hasattr(signal, "SIGSTOP"):
    _UNCATCHABLE[signal.SIGSTOP] = "SIGSTOP"


def _check_signals(sig: Any) -> tuple[int, ...]:
    values = tuple(sig) if isinstance(sig, (tuple, list)) else (sig,)
    if not values:
        raise ValueError("For 'OnRequestExit', the argument 'sig' must name at least one signal, but got an empty sequence.")
    result = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                "For 'OnRequestExit', the argument 'sig' must be a signal number such as signal.SIGTERM, or a "
                f"tuple of them, but got {value!r} of type {type(value).__name__}."
            )
        if value in _UNCATCHABLE:
            raise ValueError(f"Not support send exit request by signal {_UNCATCHABLE[value]}.")
        if value not in set(signal.valid_signals()):
            raise ValueError(f"For 'OnRequestExit', {value} in the argument 'sig' is not a valid signal number on this system.")
        if int(value) not in result:
            result.append(int(value))
    return tuple(result)


class OnRequestExit(Callback):
    """Turn a signal into a clean stop: finish the step, save the network, end the run normally.

    Args:
        save_ckpt: when the signal came, save ``{directory}/{file_name}_train.ckpt``
            (weights and optimizer state) at the end of training.
        save_mindir: also save ``{file_name}_train.meta``, a JSON description of
            the network (layers, parameter names and shapes). It takes the place
            of MindSpore's MindIR graph export, which has no PyTorch equivalent.
        file_name: base name of the files (no ``/``).
        directory: folder of the files (created at construction when saving).
        sig: the signal number to react to (default ``signal.SIGTERM``, what
            job schedulers and ``docker stop`` send), or a tuple of them. To make
            the notebook's *interrupt* button (SIGINT, normally a
            ``KeyboardInterrupt`` in the middle of a step) stop the same clean
            way, pass ``sig=(signal.SIGTERM, signal.SIGINT)``. A second signal of
            the same kind while the stop is pending puts the previous handler
            back and applies it: a second interrupt raises ``KeyboardInterrupt``
            at once; a second SIGTERM restores the default, so a third one
            terminates the process.

    How it works: ``on_train_begin`` installs the handlers (main thread only);
    the handler only sets :attr:`exit`; after the current step
    ``run_context.request_stop()`` ends the epoch; fit's validation (if due),
    ``on_train_epoch_end`` and ``on_train_end`` run; ``on_train_end`` saves.
    The previous handlers are always put back: in ``on_train_end`` and in
    ``__exit__``, which also runs when training raises.

    As in MindSpore, a run starting while ``{file_name}_train.ckpt`` exists in
    ``directory`` (and ``save_ckpt`` is True) first loads it into the training
    network, so a job restarted after a SIGTERM continues from the saved weights
    (the epoch count starts again; use :class:`BackupAndRestore` to resume
    counters and data order too). ``Model.eval(..., callbacks=[...])`` does the
    same with ``{file_name}_eval.ckpt``. With several processes a signal on any
    rank stops all of them at the same step, and rank 0 saves (see
    :func:`nbcallback.train.distributed.acts_on_rank`).

    Raises:
        ValueError: ``sig`` is SIGKILL (``Not support send exit request by signal
            SIGKILL.``) or SIGSTOP, which cannot be caught, or not a signal.
        TypeError: wrong argument types (named in the message).
    """

    def __init__(
        self,
        save_ckpt: bool = True,
        save_mindir: bool = True,
        file_name: str = "Net",
        directory: str | os.PathLike[str] = "./",
        sig: int | Iterable[int] = signal.SIGTERM,
    ) -> None:
        super().__init__()
        owner = "OnRequestExit"
        self.save_ckpt = check_bool(save_ckpt, "save_ckpt", owner)
        self.save_mindir = check_bool(save_mindir, "save_mindir", owner)
        self.sig = _check_signals(sig)
        if not isinstance(file_name, str) or not file_name or "/" in file_name or os.sep in file_name:
            raise ValueError(
                f"For '{owner}', the argument 'file_name' must be a non-empty string without '/', but got {file_name!r}."
            )
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"For '{owner}', the argument 'directory' must be a path string, but got {type(directory).__name__}.")
        self.file_name = file_name
        self.directory = os.path.abspath(os.fspath(directory))
        if self.save_ckpt or self.save_mindir:
            if os.path.exists(self.directory) and not os.path.isdir(self.directory):
                raise NotADirectoryError(f"For '{owner}', the directory {self.directory} is an existing file.")
            os.makedirs(self.directory, exist_ok=True)
        self.train_file_path = os.path.join(self.directory, f"{file_name}_train")
        self.eval_file_path = os.path.join(self.directory, f"{file_name}_eval")
        self.exit = False
        self._stops: list[SignalStop] = []

    # ------------------------------------------------------------------ signals

    def _on_signal(self, signum: int) -> None:
        self.exit = True

    def _install(self) -> None:
        self._uninstall()
        self.exit = False
        if threading.current_thread() is not threading.main_thread():
            warnings.warn(
                "OnRequestExit can only catch signals in the main thread; this run is in another thread, so "
                "signals keep their usual effect.",
                RuntimeWarning,
                stacklevel=3,
            )
            return
        self._stops = [SignalStop(sig, on_signal=self._on_signal).install() for sig in self.sig]

    def _uninstall(self) -> None:
        # Reverse order, so that nested handlers come back as they were.
        while self._stops:
            self._stops.pop().uninstall()

    def __exit__(self, *exc_info: object) -> None:
        self._uninstall()
        return None

    def _agreed_exit(self, cb_params: Mapping[str, Any]) -> bool:
        """Whether any rank got the signal (all ranks call this at the same point)."""
        if not is_data_parallel(cb_params):
            return self.exit
        if not (dist.is_available() and dist.is_initialized()):
            return self.exit
        device = collective_device()
        flag = torch.tensor([1.0 if self.exit else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self.exit = bool(flag.item() > 0)
        return self.exit

    # ------------------------------------------------------------------ saving

    def _load_if_saved(self, network: torch.nn.Module, *bases: str) -> None:
        if not self.save_ckpt:
            return
        for base in bases:
            path = base + ".ckpt"
            if os.path.isfile(path):
                load_checkpoint(path, net=network)
                return

    def _save(self, cb_params: Mapping[str, Any], network: torch.nn.Module, base: str) -> None:
        if not acts_on_rank(cb_params):
            return
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        if self.save_ckpt:
            save_checkpoint(network, base + ".ckpt")
        if self.save_mindir:
            text = json.dumps(describe_network(backbone_of(cb_params)), indent=1)
            atomic_write(base + ".meta", lambda handle: handle.write(text.encode()))

    # ------------------------------------------------------------------ training

    def on_train_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._install()
        self._load_if_saved(cb_params["train_network"], self.train_file_path)

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self.exit:
            run_context.request_stop()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self.exit:
            run_context.request_stop()

    def on_train_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._uninstall()
        if self._agreed_exit(cb_params):
            self._save(cb_params, cb_params["train_network"], self.train_file_path)

    # ------------------------------------------------------------------ evaluation (Model.eval)

    def on_eval_begin(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._install()
        self._load_if_saved(cb_params["eval_network"], self.eval_file_path, self.train_file_path)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        if self.exit:
            run_context.request_stop()

    def on_eval_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._uninstall()
        if self._agreed_exit(cb_params):
            self._save(cb_params, cb_params["eval_network"], self.eval_file_path)
