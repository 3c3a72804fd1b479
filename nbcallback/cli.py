"""``python -m nbcallback`` / ``nbcallback``: the callback tutorial end to end in a terminal.

Downloads MNIST, builds the tutorial's pipeline and network, trains with
``Model.fit`` and the tutorial's callbacks (``LossMonitor``, ``TimeMonitor``,
``ModelCheckpoint``) and prints the final accuracy, exactly as the notebook
version does.

Where files go (see :mod:`nbcallback.paths`): MNIST in ``--data-dir``, else
``$NBCALLBACK_DATA``, else ``~/.cache/nbcallback`` (the copy the notebooks use
too); checkpoints in ``--checkpoint-dir``, else
``~/.cache/nbcallback/runs/main/checkpoint``.

Every mistake on the command line is reported in one line naming the option
and the fix, before any data is loaded, with exit status 2; failures that are
not the user's (the network is down) exit with status 1. Neither prints a
traceback unless ``--debug`` is given or ``$NBCALLBACK_DEBUG`` is ``1``.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import NoReturn, Sequence

PROG = "nbcallback"
DEBUG_ENV = "NBCALLBACK_DEBUG"
#: The seed used when ``--seed`` is not given, so that two runs on the CPU print the same numbers.
DEFAULT_SEED = 0


class UsageError(Exception):
    """A mistake on the command line (exit status 2)."""


#: A value each option takes, for the "e.g." of a one-line usage error.
EXAMPLES = {
    "--epochs": "3",
    "--batch-size": "64",
    "--lr": "0.01",
    "--data-dir": "~/data",
    "--url": "MNIST_Data.zip",
    "--checkpoint-dir": "~/checkpoints",
    "--prefix": "mnist",
    "--print-every": "300",
    "--seed": "0",
    "--threads": "1",
    "--device": "cpu",
}
_ARGUMENT = re.compile(r"^argument ([^:]+): ")


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose mistakes are one line (no usage block), exit status 2.

    argparse prints its whole usage block (seven lines here) before the error; a learner needs the
    one line that names the option and what to type instead. ``--help`` still prints the full help.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line_usage_error(message, self.prog)}\n")


def one_line_usage_error(message: str, prog: str = PROG) -> str:
    """argparse's error ``message`` with the fix appended: an example value, or where the options are listed."""
    message = " ".join(message.split())
    match = _ARGUMENT.match(message)
    if match:
        option = next((name for name in match.group(1).split("/") if name.startswith("--")), match.group(1))
        example = EXAMPLES.get(option)
        if example is not None:
            return f"{message}; e.g. {option} {example} (all options: {prog} --help)"
    return f"{message}; see {prog} --help for the options"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Run MindSpore's callback tutorial (MNIST, MLP, Model.fit with callbacks) on PyTorch.",
    )
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default: 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64, as in the tutorial)")
    parser.add_argument("--lr", type=float, default=1e-2, help="SGD learning rate (default: 0.01)")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="folder that holds or receives MNIST_Data/ (default: $NBCALLBACK_DATA, else ~/.cache/nbcallback)",
    )
    parser.add_argument(
        "--url",
        default=None,
        help="take MNIST from this source instead of the default hosts: an http(s), ftp or file:// URL or a "
        "local path of a zip in the tutorial's layout, or of a folder with the four .gz files; "
        "also read from $NBCALLBACK_MNIST_URL",
    )
    parser.add_argument(
        "--checkpoint-dir",
        default=None,
        help="where ModelCheckpoint writes (default: ~/.cache/nbcallback/runs/main/checkpoint)",
    )
    parser.add_argument("--prefix", default="mnist", help="checkpoint file prefix (default: mnist)")
    parser.add_argument("--print-every", type=int, default=300, help="LossMonitor interval in steps (default: 300)")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"torch.manual_seed, for a reproducible run (default: {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: $OMP_NUM_THREADS, else torch's default)",
    )
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: CUDA when available)")
    parser.add_argument("--no-progress", action="store_true", help="hide the download progress bar")
    parser.add_argument(
        "--debug", action="store_true", help=f"show tracebacks of errors (also ${DEBUG_ENV}=1)"
    )
    return parser


def _check_numbers(args: argparse.Namespace) -> None:
    for name, least in (("epochs", 1), ("batch_size", 1), ("print_every", 0)):
        value = getattr(args, name)
        if value < least:
            option = "--" + name.replace("_", "-")
            what = "a positive integer" if least else "0 (off) or a positive integer"
            raise UsageError(f"{option} must be {what}, but got {value}; e.g. {option} {max(least, 1)}")
    if not math.isfinite(args.lr) or args.lr <= 0:
        raise UsageError(f"--lr must be a positive number, but got {args.lr}; e.g. --lr 0.01")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be a positive integer, but got {args.threads}; e.g. --threads 1")
    if not args.prefix or "/" in args.prefix or os.sep in args.prefix:
        raise UsageError(f"--prefix must be a file name prefix without '/', but got {args.prefix!r}; e.g. --prefix mnist")


def _check_device(value: str | None) -> None:
    if value is None:
        return
    import torch

    try:
        device = torch.device(value)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(f"--device {value!r} is not a device; use cpu, cuda or cuda:N") from exc
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise UsageError(f"--device {value}: this machine has no CUDA device; use --device cpu")
        if device.index is not None and device.index >= count:
            raise UsageError(f"--device {value}: only {count} CUDA device(s) (cuda:0 … cuda:{count - 1})")
    elif device.type not in ("cpu", "mps", "xpu"):
        raise UsageError(f"--device {value}: unsupported device type {device.type!r}; use cpu, cuda or cuda:N")


def _check_writable(folder: Path, option: str) -> None:
    """Create ``folder`` and write a probe file, so a bad path fails before training, not after an epoch."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"{option} {folder}: cannot write there ({reason}); choose a folder you can write to") from exc


def _check_url(value: str | None) -> None:
    env = os.environ.get("NBCALLBACK_MNIST_URL", "").strip()
    if value is None and not env:
        return
    from nbcallback.dataset.download import URL_ENV, check_source  # imports torch: only when needed

    try:
        if value is not None:
            check_source(value, "--url")
        elif env:
            check_source(env, f"${URL_ENV}")
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from exc


def _is_local(url: str) -> bool:
    return "://" not in url or url.lower().startswith("file:")


def _local_source_error(exc: Exception, origin: str, source: str) -> str:
    """One line for a local MNIST source that is not what it must be: the source, why, and what to pass instead."""
    failures = getattr(exc, "failures", ())
    reason = " ".join(("; ".join(reason for _, reason in failures) or str(exc)).split())
    _, sep, tail = reason.partition(" is not a valid zip archive")
    if sep:  # "<the path> is not a valid zip archive (...)": the path is already named in front
        reason = "not a valid zip archive" + tail
    fix = "pass --url" if origin == "--url" else f"set {origin} to"
    return (
        f"{origin} {source}: {reason}; {fix} a .zip in the tutorial's layout (MNIST_Data/train, MNIST_Data/test) "
        f"or a folder holding the four .gz files"
    )


def _run(args: argparse.Namespace) -> int:
    from nbcallback.paths import data_home, run_dir

    _check_numbers(args)
    _check_device(args.device)
    _check_url(args.url)
    checkpoint_dir = Path(args.checkpoint_dir).expanduser() if args.checkpoint_dir else run_dir("main", create=False) / "checkpoint"
    _check_writable(checkpoint_dir, "--checkpoint-dir")
    data_dir = data_home(args.data_dir)
    _check_writable(data_dir, "--data-dir" if args.data_dir is not None else "the data folder (set --data-dir or $NBCALLBACK_DATA)")

    import torch
    from torch import nn

    import nbcallback.train  # noqa: F401 -- keeps torch to the CPU quota first (nbcallback._cpu); --threads then wins
    threads = args.threads or (int(os.environ["OMP_NUM_THREADS"]) if os.environ.get("OMP_NUM_THREADS", "").isdigit() else None)
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(args.seed)

    from nbcallback.dataset import DownloadError, download_mnist
    from nbcallback.train import CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor
    from nbcallback.tutorial import Network, datapipe

    try:
        data = download_mnist(data_dir, url=args.url, progress=not args.no_progress)
    except NotADirectoryError as exc:  # <data folder>/MNIST_Data is a file
        option = "--data-dir" if args.data_dir is not None else "the data folder"
        raise UsageError(
            f"{option} {data_dir}: {data_dir / 'MNIST_Data'} is a file, not a folder; move it away or choose "
            f"another folder with --data-dir"
        ) from exc
    except DownloadError as exc:
        source = args.url or os.environ.get("NBCALLBACK_MNIST_URL", "").strip()
        if source and _is_local(source):
            # The user's own file is broken (not a zip, wrong content): a usage error, in one line.
            raise UsageError(_local_source_error(exc, "--url" if args.url else "$NBCALLBACK_MNIST_URL", source)) from exc
        print(f"{PROG}: error: {exc.message('--url URL')}", file=sys.stderr)
        if args.debug or os.environ.get(DEBUG_ENV) == "1":
            traceback.print_exc()
        return 1

    train_dataset = datapipe(data / "train", args.batch_size)
    test_dataset = datapipe(data / "test", args.batch_size)
    network = Network()
    optimizer = torch.optim.SGD(network.parameters(), args.lr)
    model = Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy"}, device=args.device)

    steps = train_dataset.get_dataset_size()
    config = CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=args.epochs)
    checkpoint = ModelCheckpoint(prefix=args.prefix, directory=str(checkpoint_dir), config=config)
    print(
        f"Training on {model.device} for {args.epochs} epoch(s): {steps} steps of {args.batch_size} per epoch, "
        f"lr {args.lr}, seed {args.seed}, {torch.get_num_threads()} CPU thread(s)",
        flush=True,
    )
    started = time.perf_counter()
    model.fit(
        args.epochs,
        train_dataset,
        test_dataset,
        callbacks=[LossMonitor(args.print_every), TimeMonitor(), checkpoint],
    )
    accuracy = model.eval(test_dataset)["accuracy"]
    print(f"Final accuracy: {accuracy:.4f} ({time.perf_counter() - started:.1f} s)")
    print(f"Checkpoints in {checkpoint.directory}: {', '.join(sorted(os.listdir(checkpoint.directory)))}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tutorial; returns the exit status (0 done, 1 failure not the user's, 2 usage error)."""
    args = build_parser().parse_args(argv)  # argparse itself exits with status 2 on unknown options
    debug = args.debug or os.environ.get(DEBUG_ENV) == "1"
    try:
        return _run(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        if debug:
            traceback.print_exc()
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one message, the traceback on request
        if debug:
            raise
        print(
            f"{PROG}: error: {type(exc).__name__}: {exc}\n(run again with --debug or {DEBUG_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
