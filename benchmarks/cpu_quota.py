"""Training speed when torch runs more threads than the CPUs it may use (docs/teaching.md, "CPU threads").

A Binder pod sees every core of its node but may use one or two CPUs' worth of time (a cgroup CPU quota);
torch starts one thread per core it sees. nbcallback keeps torch's threads to the usable CPUs
(:mod:`nbcallback._cpu`). This measures what that is worth on the tutorials' workload (notebook 1's network,
batches of 64 MNIST-sized images, ``Model.train``): each configuration runs in a fresh interpreter pinned to the
given CPUs (``os.sched_setaffinity``) with the given torch thread count, alternating, and the median of the
repeats is printed. Setting a real cgroup quota needs root, so "1 CPU of time, many threads" is approximated by
pinning the process to one CPU and running several threads there: they share that CPU as they would share a
1-CPU quota (a quota also throttles the whole group for the rest of each 100 ms period once it is spent, which
this does not reproduce, so a real quota is, if anything, slower).

    python -m benchmarks.cpu_quota --steps 150 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = """
import os, sys, time
os.sched_setaffinity(0, {cpus})
import torch
torch.set_num_threads({threads})
from torch import nn
from nbcallback.train import Model
from nbcallback.tutorial import Network
torch.set_num_threads({threads})  # after nbcallback's own limit: the configuration under test
torch.manual_seed(0)
data = [(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))) for _ in range(50)]
network = Network()
model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.01))
model.train(1, data[:5])  # warm-up
started = time.perf_counter()
model.train({steps} // 50, data)
print(time.perf_counter() - started, torch.get_num_threads())
"""


def run(cpus: set[int], threads: int, steps: int) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OMP_NUM_THREADS", None)
    code = WORKLOAD.format(cpus=sorted(cpus), threads=threads, steps=steps)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=900)
    seconds, used = out.stdout.split()
    return float(seconds), int(used)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    every = sorted(os.sched_getaffinity(0))
    one = {every[0]}
    configurations = [("1 CPU, 1 thread (nbcallback's choice)", one, 1)]
    configurations += [(f"1 CPU, {n} threads (torch's default on a {n}-core node)", one, n) for n in (2, 4, 8)]
    configurations += [(f"{len(every)} CPUs, {len(every)} threads (no quota, for reference)", set(every), len(every))]
    times: dict[str, list[float]] = {label: [] for label, _, _ in configurations}
    for _ in range(args.repeats):
        for label, cpus, threads in configurations:
            seconds, used = run(cpus, threads, args.steps)
            assert used == threads, (label, used)
            times[label].append(seconds)
    reference = statistics.median(times[configurations[0][0]])
    rows = [{"configuration": label, "median_s": round(statistics.median(values), 2),
             "runs_s": [round(v, 2) for v in values], "vs_one_thread": round(statistics.median(values) / reference, 2)}
            for label, values in times.items()]
    print(json.dumps({"steps": args.steps, "cpus_seen": len(every), "cpu": _cpu_model(), "rows": rows}, indent=1))


def _cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
