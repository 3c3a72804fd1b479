"""``python -m nbcallback`` / ``nbcallback``: the callback tutorial end to end in a terminal.

Downloads MNIST, builds the tutorial's pipeline and network, trains with
``Model.fit`` and the tutorial's callbacks (``LossMonitor``, ``TimeMonitor``,
``ModelCheckpoint``) and prints the final accuracy, exactly as the notebook
version does.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nbcallback",
        description="Run MindSpore's callback tutorial (MNIST, MLP, Model.fit with callbacks) on PyTorch.",
    )
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default: 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64, as in the tutorial)")
    parser.add_argument("--lr", type=float, default=1e-2, help="SGD learning rate (default: 0.01)")
    parser.add_argument("--data-dir", default=".", help="folder that holds or receives MNIST_Data/ (default: .)")
    parser.add_argument(
        "--url",
        default=None,
        help="download MNIST from this mirror instead (a zip in the tutorial's layout, a folder URL with the "
        "four .gz files, or a local .zip path); also read from $NBCALLBACK_MNIST_URL",
    )
    parser.add_argument("--checkpoint-dir", default="./checkpoint", help="where ModelCheckpoint writes (default: ./checkpoint)")
    parser.add_argument("--prefix", default="mnist", help="checkpoint file prefix (default: mnist)")
    parser.add_argument("--print-every", type=int, default=300, help="LossMonitor interval in steps (default: 300)")
    parser.add_argument("--seed", type=int, default=None, help="torch.manual_seed for a reproducible run")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: $OMP_NUM_THREADS, else torch's default)",
    )
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: CUDA when available)")
    parser.add_argument("--no-progress", action="store_true", help="hide the download progress bar")
    return parser


def _mirror_url(value: str | None, data_dir: str) -> str | None:
    """The URL for ``download_mnist``; a local ``.zip`` path is unpacked into ``data_dir`` instead.

    ``download_mnist`` only fetches http(s)/ftp URLs (a ``file://`` URL is refused), so
    the four MNIST files of a local zip are copied into ``<data_dir>/MNIST_Data`` here;
    ``download_mnist`` then verifies their SHA-256 and does not go to the network.
    """
    if not value or "://" in value or not Path(value).is_file():
        return value
    import shutil
    import zipfile

    from nbcallback.dataset.download import FOLDER_NAME, MNIST_FILES

    with zipfile.ZipFile(value) as archive:
        members = {info.filename.replace("\\", "/").rsplit("/", 1)[-1]: info for info in archive.infolist()}
        for spec in MNIST_FILES:
            info = members.get(spec.name)
            if info is None or info.is_dir() or info.file_size != spec.size:
                raise SystemExit(f"nbcallback: error: {value} has no {spec.name} of {spec.size} bytes")
            dest = Path(data_dir) / FOLDER_NAME / spec.relpath
            dest.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(dest, "wb") as target:
                shutil.copyfileobj(source, target)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("epochs", "batch_size", "print_every"):
        if getattr(args, name) < (0 if name == "print_every" else 1):
            print(f"nbcallback: error: --{name.replace('_', '-')} must be positive", file=sys.stderr)
            return 2

    import torch
    from torch import nn

    threads = args.threads or (int(os.environ["OMP_NUM_THREADS"]) if os.environ.get("OMP_NUM_THREADS") else None)
    if threads:
        torch.set_num_threads(threads)
    if args.seed is not None:
        torch.manual_seed(args.seed)

    from nbcallback.dataset import download_mnist
    from nbcallback.train import CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor
    from nbcallback.tutorial import Network, datapipe

    data = download_mnist(args.data_dir, url=_mirror_url(args.url, args.data_dir), progress=not args.no_progress)

    train_dataset = datapipe(data / "train", args.batch_size)
    test_dataset = datapipe(data / "test", args.batch_size)
    network = Network()
    optimizer = torch.optim.SGD(network.parameters(), args.lr)
    model = Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy"}, device=args.device)

    steps = train_dataset.get_dataset_size()
    config = CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=args.epochs)
    checkpoint = ModelCheckpoint(prefix=args.prefix, directory=args.checkpoint_dir, config=config)
    print(
        f"Training on {model.device} for {args.epochs} epoch(s): {steps} steps of {args.batch_size} per epoch, "
        f"lr {args.lr}, {torch.get_num_threads()} CPU thread(s)",
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
