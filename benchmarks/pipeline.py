"""Benchmark the tutorial's MNIST input pipeline against bare tensor slicing.

Prints two figures:

* **build**: ``datapipe(train, 64)`` plus its first batch (the IDX read and the
  Rescale/Normalize/HWC2CHW/TypeCast passes over all 60,000 images), timed in
  fresh processes so page faults and cold allocations are included; target
  <= 0.2 s.
* **epoch**: one pass over the 938 batches, next to the bare loop
  ``perm = torch.randperm(n); for i in range(0, n, 64): x[perm[i:i+64]], y[perm[i:i+64]]``
  over pre-processed tensors. Runs alternate (bare, ours, ours, bare, ...) and
  the ratio of medians is reported; target <= 1.02.

Usage::

    python benchmarks/pipeline.py --data path/to/MNIST_Data
    python benchmarks/pipeline.py            # downloads to --root (honours $NBCALLBACK_MNIST_URL)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from nbcallback.dataset import Dataset, MnistDataset, download_mnist, transforms, vision  # noqa: E402
from nbcallback.dataset.idx import read_idx  # noqa: E402


def datapipe(path: Path, batch_size: int) -> Dataset:
    """The tutorial's pipeline (labels cast to int64 for torch's losses)."""
    dataset = MnistDataset(path)
    dataset = dataset.map(
        [vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.1307,), std=(0.3081,)), vision.HWC2CHW()],
        "image",
    )
    dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
    return dataset.batch(batch_size)


def build_once(train: Path, batch_size: int) -> float:
    """Seconds for datapipe() plus its first batch, in this (fresh) process."""
    start = time.perf_counter()
    next(iter(datapipe(train, batch_size)))
    return time.perf_counter() - start


def bare_tensors(train: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Pre-processed tensors for the bare loop, made with plain torch ops."""
    images = torch.from_numpy(read_idx(train / "train-images-idx3-ubyte"))
    labels = torch.from_numpy(read_idx(train / "train-labels-idx1-ubyte"))
    x = images.float().div_(255.0).sub_(0.1307).div_(0.3081).unsqueeze(1).contiguous()
    return x, labels.long()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="an MNIST_Data folder (holding train/ and test/)")
    parser.add_argument("--root", type=Path, default=Path("."), help="where to download MNIST if --data is not given")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15, help="epochs timed for each loop")
    parser.add_argument("--build-runs", type=int, default=5, help="fresh processes timing the build")
    parser.add_argument("--build-once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    data = args.data if args.data is not None else download_mnist(args.root, progress=False)
    train = data / "train"
    if args.build_once:
        print(json.dumps({"build_s": build_once(train, args.batch_size)}))
        return

    builds = []
    for _ in range(args.build_runs):
        out = subprocess.run(
            [sys.executable, __file__, "--data", str(data), "--batch-size", str(args.batch_size), "--build-once"],
            check=True, capture_output=True, text=True,
        )
        builds.append(json.loads(out.stdout.strip().splitlines()[-1])["build_s"])

    dataset = datapipe(train, args.batch_size)
    next(iter(dataset))
    x, y = bare_tensors(train)
    n, batch = x.shape[0], args.batch_size

    def bare() -> int:
        perm = torch.randperm(n)
        steps = 0
        for i in range(0, n, batch):
            x[perm[i : i + batch]], y[perm[i : i + batch]]
            steps += 1
        return steps

    def ours() -> int:
        steps = 0
        for _images, _labels in dataset:
            steps += 1
        return steps

    times: dict[str, list[float]] = {"bare": [], "ours": []}
    ratios = []
    for r in range(args.rounds):
        order = (("bare", bare), ("ours", ours)) if r % 2 == 0 else (("ours", ours), ("bare", bare))
        for name, loop in order:
            start = time.perf_counter()
            steps = loop()
            times[name].append(time.perf_counter() - start)
        ratios.append(times["ours"][-1] / times["bare"][-1])
    assert steps == dataset.get_dataset_size()
    bare_s, ours_s = statistics.median(times["bare"]), statistics.median(times["ours"])

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, data {data}")
    print(
        f"build  (datapipe + first batch, 60,000 images, {len(builds)} fresh processes): "
        f"median {statistics.median(builds):.3f} s  [min {min(builds):.3f}, max {max(builds):.3f}]  target <= 0.2 s"
    )
    print(f"epoch  ({steps} batches of {batch}, {args.rounds} alternating runs each):")
    print(f"  bare tensor slicing  median {bare_s * 1e3:7.1f} ms")
    print(f"  nbcallback pipeline  median {ours_s * 1e3:7.1f} ms")
    print(
        f"  ratio pipeline/bare  {ours_s / bare_s:.3f} (medians), {statistics.median(ratios):.3f} (paired)  target <= 1.02"
    )


if __name__ == "__main__":
    main()
