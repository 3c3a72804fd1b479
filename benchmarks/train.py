"""Overhead of ``Model.train`` with the tutorial's callbacks versus a bare PyTorch loop.

Both sides train the tutorial's MLP for one MNIST epoch (938 steps of 64) on the
same pre-normalised tensors, batched the same way (a ``torch.randperm`` per
epoch, batches gathered by index), from the same seeded model/optimizer
initialisation. The ``Model`` side runs with ``LossMonitor(300)``,
``TimeMonitor()`` and ``ModelCheckpoint`` with the tutorial's
``CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)``, so
its time includes the printed lines and the final checkpoint file.

Every measurement runs in a fresh subprocess, bare and Model alternating
(ABBA order, so slow drifts of the machine hit both sides alike), with
``torch.set_num_threads(--threads)``. The result is the ratio of the median
epoch times; the target is <= 1.05. Also reported: the same ratio in process
CPU time, and the ratio of the 10th-percentile step times (both sides record a
timestamp per step with one list append; on the ``Model`` side from a tiny
callback), which are far less sensitive to other load on a shared machine.

Usage::

    python benchmarks/train.py                       # download_mnist (honours $NBCALLBACK_MNIST_URL)
    python benchmarks/train.py --data MNIST_Data --rounds 7 --json results.json
    python -m benchmarks --step-overhead             # the per-step overhead case below (no MNIST needed)

The per-step overhead case (``--step-overhead``, :func:`step_overhead`) isolates
what the loop and each tutorial callback add to one step: a model so small that
the torch work is a few tens of microseconds, so the host work of ``Model.train``
shows as it does on a GPU (where the tutorial's MLP is bound by Python and kernel
launches). Everything runs in one process, the variants alternating round by round.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
if str(REPO) not in sys.path:  # this checkout's nbcallback, also when another copy is installed
    sys.path.insert(0, str(REPO))

from benchmarks._common import bare_epochs, build  # noqa: E402  (the bare loop; the network, loss and optimizer)

BATCH_SIZE = 64
TARGET = 1.05


# --------------------------------------------------------------------------- shared by both sides


class GatherBatches:
    """Batches of ``(images[idx], labels[idx])`` for a fresh ``randperm`` each epoch."""

    def __init__(self, images, labels, batch_size: int = BATCH_SIZE) -> None:
        self.images, self.labels, self.batch_size = images, labels, batch_size

    def __len__(self) -> int:
        return (len(self.labels) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        import torch

        order = torch.randperm(len(self.labels))
        for start in range(0, len(order), self.batch_size):
            index = order[start:start + self.batch_size]
            yield self.images[index], self.labels[index]


def child(kind: str, tensors: str, threads: int, seed: int, epochs: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    data = torch.load(tensors, weights_only=True)
    batches = GatherBatches(data["images"], data["labels"])
    network, loss_fn, optimizer = build(seed)
    printed = io.StringIO()
    if kind == "bare":
        stamps: list[float] = []
        start, cpu_start = time.perf_counter(), time.process_time()
        loss = bare_epochs(network, loss_fn, optimizer, batches, epochs, stamps.append)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        final_loss = float(loss)
    else:
        from nbcallback.train import Callback, CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor

        class Stamp(Callback):
            """Step-end timestamps, the same list append the bare loop does (for the per-step statistics)."""

            def __init__(self) -> None:
                self.stamps: list[float] = []

            def on_train_step_end(self, run_context) -> None:
                self.stamps.append(time.perf_counter())

        stamper = Stamp()

        model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})
        with tempfile.TemporaryDirectory(prefix="nbcallback-bench-") as folder:
            config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
            callbacks = [LossMonitor(300), TimeMonitor(),
                         ModelCheckpoint(prefix="mnist", directory=folder, config=config), stamper]
            with contextlib.redirect_stdout(printed):
                start, cpu_start = time.perf_counter(), time.process_time()
                model.train(epochs, batches, callbacks=callbacks)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            files = sorted(os.listdir(folder))
        final_loss = None
        stamps = stamper.stamps
        if files != ["mnist-1_938.ckpt", "mnist-graph.meta"] and epochs == 1:
            raise SystemExit(f"unexpected checkpoint files: {files}")
    steps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    return {"kind": kind, "seconds": seconds / epochs, "cpu_seconds": cpu / epochs, "final_loss": final_loss,
            "step_p10": steps[len(steps) // 10], "step_median": statistics.median(steps),
            "printed": printed.getvalue().splitlines()}


# --------------------------------------------------------------------------- per-step overhead

OVERHEAD_STEPS = 900  # per epoch: the tutorial's save_checkpoint_steps=1875 falls in neither timed epoch
OVERHEAD_BATCH = 8


class TimedEpochs:
    """A list of batches that notes, per epoch, the wall and thread CPU time from the first batch to the end.

    The clocks start when the epoch's iteration begins and stop when it is exhausted,
    so what a run does once (``on_train_begin``, the final checkpoint) is not counted;
    every batch costs both sides the same generator step.
    """

    def __init__(self, batches: list) -> None:
        self.batches = batches
        self.spans: list[tuple[float, float]] = []

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        wall, cpu = time.perf_counter(), time.thread_time()
        yield from self.batches
        self.spans.append((time.perf_counter() - wall, time.thread_time() - cpu))


def overhead_variants(folder: str) -> dict:
    """name -> a factory of the callbacks list (``None``: the bare loop)."""
    from nbcallback.train import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    def checkpoint():
        config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
        return ModelCheckpoint(prefix="o", directory=folder, config=config)

    return {
        "bare loop": None,
        "Model.train, no callbacks": lambda: [],
        "+ LossMonitor(300)": lambda: [LossMonitor(300)],
        "+ TimeMonitor()": lambda: [TimeMonitor()],
        "+ ModelCheckpoint": lambda: [checkpoint()],
        "+ all three": lambda: [LossMonitor(300), TimeMonitor(), checkpoint()],
    }


def step_overhead(rounds: int = 30, steps: int = OVERHEAD_STEPS, threads: int = 1, seed: int = 0) -> dict:
    """Per-step wall and CPU time of a bare loop and of ``Model.train`` with the tutorial's callbacks.

    A ``Linear(4, 2)`` on batches of 8 pre-built tensors, ``CrossEntropyLoss``,
    SGD. Each variant trains 2 epochs of ``steps`` steps; the second epoch is
    timed (the first warms up: lazy imports, the checkpoint's graph file). Per
    round every variant runs once, the order rotating; the figures are medians
    over rounds of the per-round values, the ratios and differences to the bare
    loop are paired within a round. Also counted, deterministically: Python
    function calls per step (``sys.setprofile``), which no other load on the
    machine can disturb.
    """
    import gc

    import torch
    from torch import nn

    from nbcallback.train import Model

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    xs, ys = torch.randn(steps, OVERHEAD_BATCH, 4), torch.randint(0, 2, (steps, OVERHEAD_BATCH))
    batches = TimedEpochs([(xs[i], ys[i]) for i in range(steps)])
    network = nn.Linear(4, 2)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(network.parameters(), lr=1e-3)
    model = Model(network, loss_fn, optimizer, metrics={"accuracy"})
    sink = io.StringIO()

    def run(make, epochs: int = 2) -> None:
        with contextlib.redirect_stdout(sink):
            if make is None:
                bare_epochs(network, loss_fn, optimizer, batches, epochs)
            else:
                model.train(epochs, batches, callbacks=make())
        sink.seek(0)
        sink.truncate()

    with tempfile.TemporaryDirectory(prefix="nbcallback-bench-overhead-") as folder:
        variants = overhead_variants(folder)
        names = list(variants)
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for make in variants.values():  # warm-up
            run(make)
        for r in range(rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                gc.collect()
                run(variants[name])
                seconds, cpu_seconds = batches.spans[-1]
                wall[name].append(1e6 * seconds / steps)
                cpu[name].append(1e6 * cpu_seconds / steps)
        calls: dict[str, float] = {}
        for name, make in variants.items():
            counts = []
            for epochs in (1, 2):
                counter = [0]

                def profile(frame, event, arg, counter=counter) -> None:
                    if event in ("call", "c_call"):
                        counter[0] += 1

                sys.setprofile(profile)
                try:
                    run(make, epochs)
                finally:
                    sys.setprofile(None)
                counts.append(counter[0])
            calls[name] = (counts[1] - counts[0]) / steps  # one more epoch: its steps and epoch hooks

    results = {}
    for name in names:
        pairs_wall = [a / b for a, b in zip(wall[name], wall["bare loop"])]
        pairs_cpu = [a / b for a, b in zip(cpu[name], cpu["bare loop"])]
        results[name] = {
            "wall_us": statistics.median(wall[name]), "cpu_us": statistics.median(cpu[name]),
            "wall_over_bare_us": statistics.median(a - b for a, b in zip(wall[name], wall["bare loop"])),
            "cpu_over_bare_us": statistics.median(a - b for a, b in zip(cpu[name], cpu["bare loop"])),
            "wall_ratio": statistics.median(pairs_wall), "cpu_ratio": statistics.median(pairs_cpu),
            "cpu_ratio_range": [min(pairs_cpu), max(pairs_cpu)],
            "python_calls_per_step": calls[name],
            "wall_us_runs": wall[name], "cpu_us_runs": cpu[name],
        }
    return {"rounds": rounds, "steps_per_epoch": steps, "batch": OVERHEAD_BATCH, "threads": threads,
            "variants": results}


def overhead_table(report: dict) -> str:
    lines = ["| variant | wall µs/step | CPU µs/step | CPU µs over bare | × bare (CPU) [min–max] | × bare (wall) "
             "| Python calls/step |", "|---|---|---|---|---|---|---|"]
    for name, v in report["variants"].items():
        low, high = v["cpu_ratio_range"]
        lines.append(f"| {name} | {v['wall_us']:.1f} | {v['cpu_us']:.1f} | {v['cpu_over_bare_us']:+.1f} | "
                     f"{v['cpu_ratio']:.3f} [{low:.3f}–{high:.3f}] | {v['wall_ratio']:.3f} | "
                     f"{v['python_calls_per_step']:.1f} |")
    return "\n".join(lines)


def overhead_main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks --step-overhead [--rounds N] [--json PATH] [--note TEXT]``."""
    import datetime

    from benchmarks._common import cpu_model, loadavg

    parser = argparse.ArgumentParser(prog="python -m benchmarks --step-overhead",
                                     description="Per-step overhead of Model.train and the tutorial callbacks.")
    parser.add_argument("--step-overhead", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=30, help="rounds, every variant once per round (default 30)")
    parser.add_argument("--steps", type=int, default=OVERHEAD_STEPS, help="steps per epoch (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", help="write the report here (and the table next to it, .md)")
    parser.add_argument("--note", default="", help="a line stored with the results (e.g. what else ran)")
    args = parser.parse_args(argv)
    import torch

    meta = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu": cpu_model(), "cpus": os.cpu_count(), "torch": torch.__version__,
            "python": platform.python_version(), "loadavg_start": loadavg(), "note": args.note}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    meta["commit"] = commit.stdout.strip()
    report = step_overhead(args.rounds, args.steps, args.threads)
    meta["loadavg_end"] = loadavg()
    report["meta"] = meta
    text = overhead_table(report)
    header = (f"Per-step overhead, {report['steps_per_epoch']}-step epochs of a Linear(4, 2) on batches of "
              f"{report['batch']}, {args.threads} torch thread, {args.rounds} alternating rounds (medians; "
              f"ratios and differences paired within a round). {meta['cpu']}, {meta['cpus']} CPUs, torch "
              f"{meta['torch']}, commit {meta['commit']}; load average {meta['loadavg_start']} -> "
              f"{meta['loadavg_end']}.")
    print(header)
    print()
    print(text)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1))
        path.with_suffix(".md").write_text(header + (f"\n\n{args.note}" if args.note else "") + "\n\n" + text + "\n")
        print(f"JSON: {path}")
    return 0


# --------------------------------------------------------------------------- parent


def prepare_tensors(data: str | None, path: Path) -> Path:
    import torch

    from nbcallback.dataset import MnistDataset, download_mnist, transforms, vision

    root = Path(data) if data else download_mnist(REPO / "benchmarks" / ".data", progress=False)
    dataset = MnistDataset(str(root / "train"), shuffle=False)
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.1307,), std=(0.3081,)),
                           vision.HWC2CHW()], "image")
    dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
    images, labels = next(iter(dataset.batch(dataset.get_dataset_size())))
    torch.save({"images": images.contiguous(), "labels": labels.contiguous()}, path)
    return path


def run_child(kind: str, tensors: Path, args: argparse.Namespace, seed: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, str(HERE), "--child", kind, "--tensors", str(tensors), "--threads", str(args.threads),
               "--seed", str(seed), "--epochs", str(args.epochs)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="an MNIST_Data folder (default: download_mnist into benchmarks/.data)")
    parser.add_argument("--rounds", type=int, default=5, help="bare/Model pairs (default: 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default: 1)")
    parser.add_argument("--epochs", type=int, default=1, help="epochs per run (default: 1)")
    parser.add_argument("--seed", type=int, default=0, help="model initialisation / shuffling seed")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--child", choices=("bare", "model"), help=argparse.SUPPRESS)
    parser.add_argument("--tensors", help=argparse.SUPPRESS)
    parser.add_argument("--step-overhead", action="store_true",
                        help="the per-step overhead case instead (see python -m benchmarks --step-overhead --help)")
    if "--step-overhead" in (sys.argv[1:] if argv is None else argv):
        return overhead_main(argv)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child, args.tensors, args.threads, args.seed, args.epochs)))
        return 0

    with tempfile.TemporaryDirectory(prefix="nbcallback-bench-data-") as folder:
        tensors = prepare_tensors(args.data, Path(folder) / "mnist_train.pt")
        results: dict[str, list[float]] = {"bare": [], "model": []}
        cpu_results: dict[str, list[float]] = {"bare": [], "model": []}
        step_p10: dict[str, list[float]] = {"bare": [], "model": []}
        pair_ratios = []
        printed: list[str] = []
        for round_index in range(args.rounds):
            order = ("bare", "model") if round_index % 2 == 0 else ("model", "bare")
            times, cpu_times = {}, {}
            for kind in order:
                out = run_child(kind, tensors, args, args.seed)
                times[kind], cpu_times[kind] = out["seconds"], out["cpu_seconds"]
                results[kind].append(out["seconds"])
                cpu_results[kind].append(out["cpu_seconds"])
                step_p10[kind].append(out["step_p10"])
                if kind == "model" and not printed:
                    printed = out["printed"]
            pair_ratios.append(times["model"] / times["bare"])
            print(f"round {round_index + 1}/{args.rounds}: bare {times['bare']:.3f} s "
                  f"(cpu {cpu_times['bare']:.3f}), Model.train {times['model']:.3f} s (cpu {cpu_times['model']:.3f}), "
                  f"ratio {pair_ratios[-1]:.3f} (cpu {cpu_times['model'] / cpu_times['bare']:.3f})", flush=True)

    bare, model = summarize(results["bare"]), summarize(results["model"])
    ratio = model["median"] / bare["median"]
    cpu_bare, cpu_model = summarize(cpu_results["bare"]), summarize(cpu_results["model"])
    cpu_ratio = cpu_model["median"] / cpu_bare["median"]
    # The fastest tenth of the steps of each run is what a step costs when nothing else
    # competes for the core: a contention-robust view of the per-step overhead.
    p10_bare, p10_model = summarize(step_p10["bare"]), summarize(step_p10["model"])
    p10_ratio = p10_model["median"] / p10_bare["median"]
    print()
    print("What Model.train printed (first run):")
    for line in printed:
        print("    " + line)
    print()
    print(f"epoch time, {args.threads} thread(s), {args.rounds} rounds (median / min / max):")
    print(f"  bare PyTorch loop : {bare['median']:.3f} / {bare['min']:.3f} / {bare['max']:.3f} s")
    print(f"  Model.train       : {model['median']:.3f} / {model['min']:.3f} / {model['max']:.3f} s")
    print(f"  ratio of medians  : {ratio:.3f}  (per-round ratios: median {statistics.median(pair_ratios):.3f}, "
          f"min {min(pair_ratios):.3f}, max {max(pair_ratios):.3f}; target <= {TARGET})")
    print("process CPU time (less sensitive to other load on the machine), median / min / max:")
    print(f"  bare PyTorch loop : {cpu_bare['median']:.3f} / {cpu_bare['min']:.3f} / {cpu_bare['max']:.3f} s")
    print(f"  Model.train       : {cpu_model['median']:.3f} / {cpu_model['min']:.3f} / {cpu_model['max']:.3f} s")
    print(f"  ratio of medians  : {cpu_ratio:.3f}")
    print("per-step time, 10th percentile of each run's steps (contention-robust), median over runs:")
    print(f"  bare {p10_bare['median'] * 1e3:.3f} ms, Model.train {p10_model['median'] * 1e3:.3f} ms, "
          f"ratio {p10_ratio:.3f}")
    if args.json:
        import torch

        Path(args.json).write_text(json.dumps({
            "bare": bare, "model": model, "ratio": ratio, "pair_ratios": pair_ratios, "target": TARGET,
            "cpu": {"bare": cpu_bare, "model": cpu_model, "ratio": cpu_ratio},
            "step_p10": {"bare": p10_bare, "model": p10_model, "ratio": p10_ratio},
            "threads": args.threads, "rounds": args.rounds, "epochs": args.epochs, "torch": torch.__version__,
            "python": platform.python_version(), "machine": platform.machine(), "printed": printed,
        }, indent=2))
    verdict = "within" if ratio <= TARGET else "above"
    print(f"\nMedian epoch-time ratio {ratio:.3f} is {verdict} the target {TARGET}. On a busy machine the wall "
          "times are dominated by other load: compare with the CPU-time and per-step ratios above.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
