"""The callback tutorial with data-parallel training (PyTorch DDP) on several processes.

Run it with torchrun (one process per GPU, or per CPU slot with gloo)::

    torchrun --nproc_per_node=2 examples/ddp_mnist.py
    torchrun --nproc_per_node=2 examples/ddp_mnist.py --epochs 1 --backend gloo --checkpoint-dir /tmp/ckpt

or with plain ``python examples/ddp_mnist.py`` for the same run in one process.

On two machines (2 processes each), the same command on both, naming the first machine::

    torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d --rdzv-endpoint=HOST0:29400 \
        --rdzv-id=mnist --max-restarts=3 examples/ddp_mnist.py --backup-dir /shared/mnist-backup

With ``--backup-dir`` a ``BackupAndRestore`` backs the run up at every epoch's end; a job that torchrun
restarts after a crash (``--max-restarts``) resumes from it. See docs/distributed.md.

Each rank reads its own shard of MNIST (``MnistDataset`` shards itself by rank),
trains the tutorial's network with ``Model.fit`` and the tutorial's callbacks
(``LossMonitor``, ``TimeMonitor``, ``ModelCheckpoint``); only rank 0 prints and
writes checkpoints (under ``~/.cache/nbcallback/runs/ddp_mnist/`` unless
``--checkpoint-dir`` says otherwise). ``--batch-size`` is the global batch: each of N ranks takes
``batch_size / N`` samples per step, so 2 ranks with the default 64 run the same
optimisation as the single-process tutorial. On CUDA each rank uses
``cuda:LOCAL_RANK`` and nccl; on the CPU gloo.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="MindSpore's callback tutorial, data-parallel with torchrun.")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default: 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size, split over the ranks (default: 64)")
    parser.add_argument("--lr", type=float, default=1e-2, help="SGD learning rate (default: 0.01)")
    parser.add_argument(
        "--data-dir", default=None,
        help="folder that holds or receives MNIST_Data/ (default: $NBCALLBACK_DATA, else ~/.cache/nbcallback)",
    )
    parser.add_argument("--url", default=None, help="MNIST mirror (a zip in the tutorial's layout); also $NBCALLBACK_MNIST_URL")
    parser.add_argument("--backend", default=None, help="torch.distributed backend: nccl, gloo (default: nccl with CUDA, else gloo)")
    parser.add_argument(
        "--checkpoint-dir", default=None,
        help="where rank 0's ModelCheckpoint writes (default: ~/.cache/nbcallback/runs/ddp_mnist/checkpoint)",
    )
    parser.add_argument("--prefix", default="mnist", help="checkpoint file prefix (default: mnist)")
    parser.add_argument(
        "--backup-dir", default=None,
        help="BackupAndRestore folder (a backup per epoch; a restarted job resumes from it); default: no backup",
    )
    parser.add_argument("--print-every", type=int, default=300, help="LossMonitor interval in steps (default: 300)")
    parser.add_argument("--num-samples", type=int, default=None, help="cap on the training rows per rank and epoch (quick runs)")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed on every rank (default: 0)")
    parser.add_argument("--device", default=None, help="cpu, cuda … (default: cuda:LOCAL_RANK with CUDA, else cpu)")
    return parser


def resume_note_class():
    from nbcallback.train import Callback

    class ResumeNote(Callback):
        """Prints, on rank 0, where a restarted job resumes (after BackupAndRestore's on_train_begin)."""

        def __init__(self, backup, rank: int) -> None:
            self.backup, self.rank = backup, rank

        def on_train_begin(self, run_context) -> None:
            if self.rank == 0 and self.backup.resumed_from is not None:
                epoch, step, global_step = self.backup.resumed_from
                where = f"the start of epoch {epoch + 1}" if step == 0 else f"epoch {epoch + 1} after its step {step}"
                print(f"Resumed from the backup in {self.backup.backup_dir} at {where} (global step {global_step + 1})", flush=True)

    return ResumeNote


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    import torch
    import torch.distributed as dist
    from torch import nn

    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    torch.manual_seed(args.seed)

    from nbcallback.dataset import download_mnist
    from nbcallback.paths import run_dir
    from nbcallback.train import BackupAndRestore, CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor
    from nbcallback.train.distributed import init_distributed
    from nbcallback.tutorial import Network, datapipe

    ResumeNote = resume_note_class()

    # torchrun's environment -> process group (gloo/nccl); plain `python` -> stand-alone.
    context = init_distributed(backend=args.backend)
    rank, world = context.rank, context.world_size
    if args.batch_size % world:
        if rank == 0:
            print(f"--batch-size {args.batch_size} is not a multiple of the {world} processes", file=sys.stderr)
        return 2

    # The first process of each machine downloads (and verifies); the others then find verified files
    # and do not go to the network. Machines without a shared disk each get their own copy.
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if local_rank == 0:
        data = download_mnist(args.data_dir, url=args.url, progress=False)
    if context.is_distributed:
        dist.barrier()
    if local_rank != 0:
        data = download_mnist(args.data_dir, url=args.url, progress=False)

    per_rank_batch = args.batch_size // world
    # The tutorial's int32 labels; MnistDataset shards itself by rank under torchrun.
    train_dataset = datapipe(data / "train", per_rank_batch, label_dtype=torch.int32, num_samples=args.num_samples)
    test_dataset = datapipe(data / "test", per_rank_batch, label_dtype=torch.int32)
    network = Network()
    optimizer = torch.optim.SGD(network.parameters(), args.lr)
    model = Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy"}, device=args.device)

    steps = train_dataset.get_dataset_size()
    config = CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=args.epochs)
    # Never into the checkout: the run's folder in the cache, as python -m nbcallback and the notebooks do.
    directory = args.checkpoint_dir or run_dir("ddp_mnist", create=False) / "checkpoint"
    checkpoint = ModelCheckpoint(prefix=args.prefix, directory=str(directory), config=config)
    if rank == 0:
        how = f"DDP over {dist.get_backend()}" if context.is_distributed else "stand-alone"
        print(
            f"Training on {world} process(es) ({how}, {model.device}) for {args.epochs} epoch(s): "
            f"{steps} steps of {per_rank_batch} per rank and epoch (global batch {args.batch_size}), lr {args.lr}",
            flush=True,
        )
    callbacks = [LossMonitor(args.print_every), TimeMonitor(), checkpoint]
    if args.backup_dir:
        # A folder per rank (backup_dir/rank_<r>); on_train_begin loads the backup a crashed attempt left.
        backup = BackupAndRestore(args.backup_dir, save_freq="epoch")
        callbacks[:0] = [backup, ResumeNote(backup, rank)]
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if rank == 0 and restarts:
        print(f"Restart {restarts} of this machine's workers (torchrun --max-restarts)", flush=True)
    started = time.perf_counter()
    model.fit(args.epochs, train_dataset, test_dataset, callbacks=callbacks)
    accuracy = model.eval(test_dataset)["accuracy"]  # over the whole test set: all ranks' shards
    if rank == 0:
        print(f"Final accuracy: {accuracy:.4f} ({time.perf_counter() - started:.1f} s)", flush=True)
        print(
            f"Checkpoints in {checkpoint.directory} on {socket.gethostname()}: "
            f"{', '.join(sorted(os.listdir(checkpoint.directory)))}",
            flush=True,
        )
    if context.is_distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
