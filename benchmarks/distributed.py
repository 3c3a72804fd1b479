"""What distribution costs and whether a killed worker comes back: ``python -m benchmarks.distributed``.

Two measurements, each on 127.0.0.1 with gloo and torch's own launcher (``python -m torch.distributed.run``):

``restart [--runs 20] [--baseline 0] [--rdzv c10d|static]``
    Kill-and-restart runs of ``tests/ddp/restart_worker.py``: 2 ranks, ``--max-restarts=1``, rank 1
    SIGKILLs itself at epoch 2, step 5; ``BackupAndRestore`` resumes. A run passes when the job exits 0,
    both ranks of the restarted attempt resumed at the start of epoch 2 and ended with weights bitwise
    equal to an uninterrupted run of the same job. ``--baseline N`` first runs N kill-runs that join with
    torch's plain ``init_process_group`` (no fresh store namespace), for comparison.
    Writes ``benchmarks/results/ddp_restart.json`` and ``.md``.

``overhead [--latency-ms 0,1,5,20] [--steps 300]``
    What nbcallback adds per training step with 2 ranks: the collectives it issues per step (counted)
    and the time of a step with and without the stop vote, with a latency injected into every
    collective of nbcallback's (a blocking one returns that much later, an asynchronous one completes that
    much later, as over a slow network). Writes
    ``benchmarks/results/ddp_overhead.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
RESTART_WORKER = REPO / "tests" / "ddp" / "restart_worker.py"
KILL = ("2", "5")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def job_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", GLOO_SOCKET_IFNAME="lo", MASTER_ADDR="127.0.0.1")
    return env


def launch(script: Path, args: list[str], nproc: int = 2, rdzv: str = "c10d", max_restarts: int = 1,
           timeout: float = 300) -> tuple[int, str, float]:
    """One ``torch.distributed.run`` job on 127.0.0.1: (exit code, stdout + stderr, seconds)."""
    port = free_port()
    if rdzv == "c10d":
        where = ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}"]
    else:
        where = ["--master-addr=127.0.0.1", f"--master-port={port}"]
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}", *where,
               f"--max-restarts={max_restarts}", "--monitor-interval=0.5", str(script), *args]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=str(REPO), env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return 124, out, time.monotonic() - started
    return proc.returncode, out, time.monotonic() - started


def weights_equal(a: Path, b: Path) -> bool:
    import torch

    if not (a.is_file() and b.is_file()):
        return False
    left, right = torch.load(a), torch.load(b)
    return left.keys() == right.keys() and all(torch.equal(left[k], right[k]) for k in left)


def failure_kind(output: str) -> str:
    if "Timeout (0:04:00)!" in output and "_new_process_group_helper" in output:
        return "hang in init_process_group (_new_process_group_helper), ended by the worker's 240 s watchdog"
    if "connectFullMesh failed" in output:
        return "Gloo connectFullMesh failed (" + ("Connection refused" if "Connection refused" in output else "other") + ")"
    if "DistributedError" in output:
        return "DistributedError"
    return "other"


def restart(args: argparse.Namespace) -> dict[str, Any]:
    import torch  # noqa: F401  (fail early when missing)

    root = Path(tempfile.mkdtemp(prefix="ddp_restart_"))
    reference = root / "reference"
    reference.mkdir()
    code, out, seconds = launch(RESTART_WORKER, [str(reference)], rdzv=args.rdzv, max_restarts=0)
    if code != 0:
        raise SystemExit(f"the uninterrupted reference run failed ({code}):\n{out[-3000:]}")
    print(f"reference: {seconds:.1f} s", flush=True)
    runs: list[dict[str, Any]] = []
    plan = [("torch init_process_group", ["--plain-init"])] * args.baseline + [("init_distributed", [])] * args.runs
    for index, (how, extra) in enumerate(plan):
        out_dir = root / f"run{index}"
        out_dir.mkdir()
        code, out, seconds = launch(RESTART_WORKER, [str(out_dir), "--kill", *KILL, *extra], rdzv=args.rdzv)
        attempts = {p.name: json.loads(p.read_text()) for p in out_dir.glob("attempt1_rank*.json")}
        resumed = sorted(tuple(a["first"]) for a in attempts.values())
        equal = all(weights_equal(reference / f"weights{r}.pt", out_dir / f"weights{r}.pt") for r in (0, 1))
        line = re.findall(r"^attempt 1: resumed from the backup at .*$", out, re.M)
        ok = code == 0 and equal and resumed == [(2, 1, 17), (2, 1, 17)]
        run = {"init": how, "exit": code, "seconds": round(seconds, 1), "bitwise_equal": equal,
               "resumed_at": [list(r) for r in resumed], "printed": line[0] if line else None, "passed": ok}
        if not ok:
            run["failure"] = failure_kind(out)
            (RESULTS / "ddp_restart_failures").mkdir(parents=True, exist_ok=True)
            (RESULTS / "ddp_restart_failures" / f"run{index}.log").write_text(out[-20000:])
        runs.append(run)
        print(f"run {index + 1}/{len(plan)} [{how}]: {'pass' if ok else 'FAIL ' + run['failure']} ({seconds:.1f} s)", flush=True)
    summary: dict[str, Any] = {}
    for how in dict.fromkeys(run["init"] for run in runs):
        mine = [run for run in runs if run["init"] == how]
        summary[how] = {"runs": len(mine), "passed": sum(run["passed"] for run in mine),
                        "failures": sorted({run.get("failure", "") for run in mine} - {""})}
    return {"rdzv": args.rdzv, "kill": {"rank": 1, "epoch": int(KILL[0]), "step": int(KILL[1])},
            "torch": __import__("torch").__version__, "cpus": os.cpu_count(), "summary": summary, "runs": runs}


def write_restart(result: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ddp_restart.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# Kill-and-restart runs (`python -m benchmarks.distributed restart`)",
        "",
        f"torch {result['torch']}, {result['cpus']} CPUs, gloo on 127.0.0.1, "
        + (f"`--rdzv-backend={result['rdzv']}`" if result["rdzv"] == "c10d" else "static rendezvous")
        + f", `--max-restarts=1`; rank 1 SIGKILLs itself at epoch {result['kill']['epoch']}, step "
        f"{result['kill']['step']}; `BackupAndRestore` resumes at the start of epoch 2. A run passes when the job "
        "exits 0, both restarted ranks began at epoch 2, step 1 (global step 17) and ended with weights bitwise "
        "equal to an uninterrupted run.",
        "",
        "| how the ranks join | runs | passed | failures |",
        "|---|---|---|---|",
    ]
    for how, row in result["summary"].items():
        counts = {f: sum(r.get("failure") == f for r in result["runs"] if r["init"] == how) for f in row["failures"]}
        failures = ", ".join(f"{n} x {f}" for f, n in counts.items()) or "-"
        lines.append(f"| {how} | {row['runs']} | {row['passed']} | {failures} |")
    lines += ["", "Logs of the failed runs: `ddp_restart_failures/run<#-1>.log`.", "", "| # | join | exit | s | resumed at (epoch, step, global) | bitwise equal |", "|---|---|---|---|---|---|"]
    for index, run in enumerate(result["runs"], start=1):
        lines.append(f"| {index} | {run['init']} | {run['exit']} | {run['seconds']} | {run['resumed_at']} | {run['bitwise_equal']} |")
    (RESULTS / "ddp_restart.md").write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- per-step overhead


def overhead_worker() -> None:
    """Run inside each rank (``python -m benchmarks.distributed _overhead OUT LAT_MS STEPS``)."""
    import torch
    import torch.distributed as dist
    from torch import nn

    from nbcallback.train import Model
    from nbcallback.train import distributed as nd

    out, latencies, steps = Path(sys.argv[2]), [float(v) for v in sys.argv[3].split(",")], int(sys.argv[4])
    torch.set_num_threads(1)
    context = nd.init_distributed(backend="gloo")
    rank = context.rank
    data = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(steps)]
    plain_all_reduce = dist.all_reduce
    calls: list[str] = []
    delay = {"s": 0.0}

    def slow_all_reduce(*a: Any, **k: Any) -> Any:
        """A network ``delay`` away: a blocking call returns that much later, an asynchronous one completes then."""
        calls.append("async" if k.get("async_op") else "blocking")
        work = plain_all_reduce(*a, **k)
        if not delay["s"]:
            return work
        if k.get("async_op"):
            return _LateWork(work, time.perf_counter() + delay["s"])
        time.sleep(delay["s"])
        return work

    def run(vote: bool) -> float:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.01))
        if not vote:  # the same loop without the stop vote: what a step costs without it
            model._parallel = _NoVote(model._parallel)
        dist.barrier()
        started = time.perf_counter()
        model.train(1, data)
        dist.barrier()
        return (time.perf_counter() - started) / steps * 1e6

    results = []
    dist.all_reduce = slow_all_reduce
    try:
        for latency in latencies:
            delay["s"] = latency / 1000
            row: dict[str, Any] = {"latency_ms": latency}
            for vote in (False, True) * 5:
                calls.clear()
                value = run(vote)
                key = "with_vote_us" if vote else "without_vote_us"
                row[key] = min(row.get(key, value), value)
                if vote:
                    row["calls_per_step"] = {"async": calls.count("async") / steps, "blocking": calls.count("blocking") / steps}
            results.append(row)
    finally:
        dist.all_reduce = plain_all_reduce
    if rank == 0:
        out.write_text(json.dumps(results))
    dist.destroy_process_group()


class _LateWork:
    """An asynchronous collective's handle whose ``wait()`` returns no earlier than ``ready_at``."""

    def __init__(self, work: Any, ready_at: float) -> None:
        self._work, self._ready_at = work, ready_at

    def wait(self, *args: Any) -> Any:
        result = self._work.wait(*args)
        left = self._ready_at - time.perf_counter()
        if left > 0:
            time.sleep(left)
        return result


class _NoVote:
    """A ParallelContext whose stop vote is the stand-alone one (no collective)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stop_vote(self) -> Any:
        from nbcallback.train.distributed import StopVote

        return StopVote(False)


def overhead(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = Path(tempfile.mkdtemp(prefix="ddp_overhead_")) / "result.json"
    code, text, _ = launch(Path(__file__), ["_overhead", str(out), args.latency_ms, str(args.steps)], max_restarts=0)
    if code != 0:
        raise SystemExit(f"the overhead job failed ({code}):\n{text[-3000:]}")
    return json.loads(out.read_text())


def write_overhead(rows: list[dict[str, Any]], steps: int) -> None:
    import torch

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ddp_overhead.json").write_text(json.dumps({"torch": torch.__version__, "cpus": os.cpu_count(), "steps": steps, "rows": rows}, indent=1) + "\n")
    lines = [
        "# What distribution adds per step (`python -m benchmarks.distributed overhead`)",
        "",
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, 2 gloo ranks on 127.0.0.1, a 64-64-10 MLP, batch 32, "
        f"{steps} steps; the best of five runs each, alternated. The latency is added to each `all_reduce` nbcallback issues (a blocking "
        "one returns that much later, an asynchronous one completes that much later); DDP's own gradient all-reduce "
        "is not delayed.",
        "",
        "| injected latency | nbcallback collectives per step | step without the stop vote | step with it | added per step |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        calls = row["calls_per_step"]
        lines.append(
            f"| {row['latency_ms']:g} ms | {calls['async']:.2f} async, {calls['blocking']:.3f} blocking | "
            f"{row['without_vote_us']:.0f} µs | {row['with_vote_us']:.0f} µs | {row['with_vote_us'] - row['without_vote_us']:.0f} µs |"
        )
    (RESULTS / "ddp_overhead.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_overhead"]:
        sys.path.insert(0, str(REPO))
        overhead_worker()
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.distributed", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("restart", help="kill-and-restart runs")
    one.add_argument("--runs", type=int, default=20)
    one.add_argument("--baseline", type=int, default=0, help="kill-runs with torch's plain init_process_group first")
    one.add_argument("--rdzv", choices=("c10d", "static"), default="c10d")
    two = sub.add_parser("overhead", help="per-step cost with an injected latency")
    two.add_argument("--latency-ms", default="0,1,5,20")
    two.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if args.what == "restart":
        result = restart(args)
        write_restart(result)
        print(json.dumps(result["summary"]))
        return 0 if all(row["passed"] == row["runs"] for how, row in result["summary"].items() if how == "init_distributed") else 1
    rows = overhead(args)
    write_overhead(rows, args.steps)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
