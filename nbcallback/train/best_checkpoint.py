"""``BestCheckpoint``: keep the checkpoint of the epoch with the best validation metric.

This is the tutorial's second custom-callback example ("save the checkpoint
file with the highest accuracy during training") as a ready-made callback.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from torch import nn

from nbcallback.train._monitor import MonitorCallback
from nbcallback.train._validation import check_bool
from nbcallback.train.callback import RunContext
from nbcallback.train.distributed import acts_on_rank
from nbcallback.train.serialization import remove_stale_partials, save_checkpoint

__all__ = ["BestCheckpoint"]


class BestCheckpoint(MonitorCallback):
    """Save ``{directory}/{prefix}.ckpt`` whenever ``monitor`` reaches a new best value.

    Args:
        directory: the folder for the checkpoint (created if missing).
        monitor: the value to rank epochs by: a metric of fit's validation
            (``'accuracy'``, the default, needs ``Model(..., metrics={'accuracy'})``
            and ``model.fit(..., valid_dataset=...)``), ``'eval_loss'``, or
            ``'loss'`` (the training loss of the epoch's last step, also usable
            with ``Model.train``).
        mode: ``'max'``, ``'min'``, or ``'auto'`` (``'min'`` for losses and
            distances, ``'max'`` for accuracy and other scores).
        prefix: the file name without ``.ckpt`` (no ``/``).
        min_delta: an improvement must be larger than this to count.
        verbose: print ``Epoch 3: accuracy improved to 0.9712, saved ./best/best.ckpt``
            on each new best.
        saved_network: a ``torch.nn.Module`` to save instead of the training
            network. By default the training network is saved, as by
            :class:`ModelCheckpoint`: the backbone's weights (loadable into a fresh
            network with ``load_checkpoint(path, net=network)``) plus the optimizer state.

    One file is kept and replaced atomically on each improvement, so the folder
    always holds one complete checkpoint of the best epoch seen in this run
    (a file of an earlier run is replaced at this run's first evaluated epoch).
    The file also stores ``epoch_num``, ``step_num``, ``best_monitor`` (the
    name) and ``best_value``, readable with :func:`load_checkpoint`.

    Attributes:
        best: the best value so far. ``best_epoch``: its epoch (0: none yet).
        best_ckpt_file_name: absolute path of the file once written, else ``""``.

    Why a callback rather than a ``ModelCheckpoint`` option: ModelCheckpoint
    saves on a step schedule, while "best" is only known after fit's
    validation, at the end of an epoch. With several processes only rank 0
    writes; the monitored value is averaged over the ranks first.

    Raises:
        TypeError / ValueError: bad argument types or values (named in the message).
        NotADirectoryError: ``directory`` is an existing file.
    """

    owner = "BestCheckpoint"
    missing_warning = "Best checkpoint is conditioned on %s, which is not available. Available choices are: %s"

    def __init__(
        self,
        directory: str | os.PathLike[str],
        monitor: str = "accuracy",
        mode: str = "auto",
        prefix: str = "best",
        min_delta: float = 0,
        verbose: bool = False,
        saved_network: nn.Module | None = None,
    ) -> None:
        owner = self.owner
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"For '{owner}', the argument 'directory' must be a path string, but got {type(directory).__name__}.")
        folder = Path(os.path.realpath(os.fspath(directory)))
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"For '{owner}', the directory {folder} is an existing file.")
        if not isinstance(prefix, str) or not prefix or "/" in prefix or os.sep in prefix:
            raise ValueError(
                f"For '{owner}', the argument 'prefix' must be a non-empty string without '/', but got {prefix!r}."
            )
        if prefix.endswith(".ckpt"):
            prefix = prefix[: -len(".ckpt")]
        if saved_network is not None and not isinstance(saved_network, nn.Module):
            raise TypeError(
                f"For '{owner}', the argument 'saved_network' must be None or a torch.nn.Module, "
                f"but got {type(saved_network).__name__}."
            )
        super().__init__(monitor, mode, min_delta)
        self.verbose = check_bool(verbose, "verbose", owner)
        self.directory = str(folder)
        self.prefix = prefix
        self.saved_network = saved_network
        folder.mkdir(parents=True, exist_ok=True)
        self._reset()
        self.best_ckpt_file_name = ""

    def _reset(self) -> None:
        self.best = self.worst()
        self.best_epoch = 0

    @property
    def path(self) -> str:
        """Where the checkpoint goes: ``{directory}/{prefix}.ckpt``."""
        return os.path.join(self.directory, self.prefix + ".ckpt")

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()
        remove_stale_partials(self.directory)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        current = self.current(cb_params)
        if current is None or not self.improves(current, self.best):
            return
        self.best = current
        epoch = cb_params.get("cur_epoch_num", 1)
        self.best_epoch = epoch
        if not acts_on_rank(cb_params):
            return
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        network = self.saved_network or cb_params["train_network"]
        append = {
            "epoch_num": int(epoch),
            "step_num": int(cb_params.get("cur_step_num", 0)),
            "best_monitor": self.monitor,
            "best_value": float(current),
        }
        save_checkpoint(network, self.path, append_dict=append)
        self.best_ckpt_file_name = self.path
        if self.verbose:
            print(f"Epoch {epoch}: {self.monitor} improved to {current}, saved {self.path}", flush=True)

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to continue as the uninterrupted one (kept by BackupAndRestore)."""
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best = float(state["best"])
        self.best_epoch = int(state["best_epoch"])
