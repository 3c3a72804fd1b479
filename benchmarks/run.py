"""nbcallback's benchmark suite: every comparison of issue 8, side by side, in fresh processes.

Each comparison is a group of variants (see :mod:`benchmarks.workloads`). For
every round, each variant of the group runs once in a fresh process, the order
rotating from round to round (A B / B A ...), so slow drifts of a shared
machine hit every variant alike. Ratios are taken within a round (the
"paired" ratio) and their median is quoted, with min and max; medians of the
raw figures are given too. Torch runs on ``--threads`` threads (default 1:
the machine this was written on has 2 shared cores, where 2 threads can be
20x slower when another process is busy).

Comparisons (targets from issue 8):

* ``train``: one MNIST epoch (938 x 64). ``bare`` PyTorch loop (the reference)
  vs ``Model.train`` with LossMonitor + TimeMonitor + ModelCheckpoint
  (tutorial settings, same batches; target <= 1.05), the tutorial's
  ``MnistDataset`` pipeline under ``Model.train``, and when installed Lightning
  and Keras (torch backend) on the identical workload.
* ``amp``: bfloat16 autocast on the CPU: bare loop, bare under autocast,
  ``Model(amp_level='O2')``.
* ``pipeline``: an epoch of the MnistDataset -> map -> batch pipeline vs plain
  tensor slicing (<= 1.02); building it (decode + transforms, 60,000 images)
  <= 0.2 s.
* ``widgets``: ``Model.train`` with ProgressBar + LiveLossPlot (display
  ``text`` and ``off``) vs without (<= 1.01).
* ``eval``: evaluating the 10,000 test images, ``Model.eval`` and
  ``Model.fit``'s validation, vs a bare ``torch.no_grad()`` accuracy loop
  (<= 1.1); also vs a bare loop that sums the loss too, the same work as
  nbcallback's eval network (MindSpore's WithEvalCell computes each batch's
  loss; fit reports the mean as eval_loss).
* ``profiler``: ``Model.train`` with the tutorial's callbacks, without and with
  a ``CallbackProfiler`` (<= 1.02).
* ``import``: ``import nbcallback`` (+ .train, .dataset, .widgets) after torch
  (<= 0.15 s; bytecode cached, as after ``pip install``); no matplotlib,
  ipywidgets, IPython or tensorboard.
* ``checkpoint``: saving the tutorial network (<= 30 ms) and how long a save
  stalls a training step (<= 30 ms).
* ``coldstart``: one-time costs (first SGD, first Model, first step), reported.
* ``overhead``: microseconds per step nbcallback adds, callback by callback.

Usage::

    python -m benchmarks --data /tmp/MNIST_Data                # everything, 5 rounds
    python benchmarks/run.py --rounds 7 --only train,eval
    python -m benchmarks --quick --json /tmp/q.json --png /tmp/q.png   # smoke run
    python -m benchmarks --device cuda --data /tmp/MNIST_Data   # on a GPU: benchmarks/cuda.py
    python -m benchmarks --step-overhead --json benchmarks/results/step_overhead.json
        # per-step µs of the loop and each tutorial callback, in one process (benchmarks/train.py)

Without ``--data`` MNIST is downloaded with ``nbcallback.dataset.download_mnist``
into ``benchmarks/.data`` (honouring ``$NBCALLBACK_MNIST_URL``).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import REPO, busy_jiffies, cpu_model, loadavg, summarize  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"

#: name -> variants (first = reference), extra ratio pairs, targets.
COMPARISONS: dict[str, dict[str, Any]] = {
    "train": {
        "variants": ["bare", "nbcallback", "nbcallback_pipeline", "lightning", "keras"],
        "targets": {"nbcallback": 1.05},
        "requires": {"lightning": "lightning", "keras": "keras"},
    },
    "amp": {
        "variants": ["bare", "bare_amp", "nbcallback_amp"],
        "pairs": [("bare_amp", "bare"), ("nbcallback_amp", "bare_amp"), ("nbcallback_amp", "bare")],
        "targets": {"nbcallback_amp/bare_amp": 1.05},
    },
    "pipeline": {
        "variants": ["pipeline_bare", "pipeline"],
        "targets": {"pipeline": 1.02},
        "absolute": {"pipeline.build_s": 0.2},
    },
    "widgets": {
        "variants": ["widgets_none", "widgets_text", "widgets_off"],
        "targets": {"widgets_text": 1.01, "widgets_off": 1.01},
    },
    "eval": {
        # The targets pair each evaluation with the bare accuracy loop, as the issue
        # states them.  Both nbcallback sides also compute the loss of every batch
        # (MindSpore's WithEvalCell does; fit reports its mean as eval_loss), so the
        # pairing with the bare loop that sums the loss too shows the same-work cost.
        "variants": ["eval_bare", "eval_bare_loss", "eval_model", "eval_nbcallback"],
        "pairs": [("eval_model", "eval_bare"), ("eval_nbcallback", "eval_bare"),
                  ("eval_model", "eval_bare_loss"), ("eval_nbcallback", "eval_bare_loss"),
                  ("eval_bare_loss", "eval_bare")],
        "targets": {"eval_model/eval_bare": 1.1, "eval_nbcallback/eval_bare": 1.1},
    },
    "profiler": {
        "variants": ["profiler_off", "profiler_on"],
        "targets": {"profiler_on": 1.02},
    },
    "import": {
        "variants": ["import_torch", "import_nbcallback"],
        "absolute": {"import_nbcallback.nbcallback_s": 0.15},
        "pycache": True,
    },
    "checkpoint": {
        "variants": ["checkpoint"],
        "absolute": {"checkpoint.value": 30.0, "checkpoint.stall_max_ms": 30.0},
    },
    "coldstart": {"variants": ["coldstart"], "max_rounds": 3},
    "overhead": {"variants": ["overhead"], "max_rounds": 3},
}

LABELS = {
    "bare": "bare PyTorch loop",
    "nbcallback": "nbcallback Model.train (+LossMonitor, TimeMonitor, ModelCheckpoint)",
    "nbcallback_pipeline": "nbcallback, tutorial MnistDataset pipeline",
    "lightning": "Lightning (no progress bar)",
    "keras": "Keras 3, torch backend (verbose=0)",
    "bare_amp": "bare loop, bf16 autocast",
    "nbcallback_amp": "nbcallback amp_level='O2' (bf16 autocast)",
    "pipeline_bare": "plain tensor slicing, 1 epoch",
    "pipeline": "MnistDataset -> map -> batch, 1 epoch",
    "widgets_none": "Model.train, no widget",
    "widgets_text": "+ ProgressBar + LiveLossPlot (text)",
    "widgets_off": "+ ProgressBar + LiveLossPlot (off)",
    "eval_bare": "bare no_grad loop (accuracy), 10k test images",
    "eval_bare_loss": "bare no_grad loop (accuracy + loss)",
    "eval_model": "Model.eval (accuracy), 10k test images",
    "eval_nbcallback": "Model.fit evaluation (accuracy + eval_loss)",
    "profiler_off": "Model.train + LossMonitor, TimeMonitor, ModelCheckpoint",
    "profiler_on": "the same + CallbackProfiler",
    "import_torch": "import torch",
    "import_nbcallback": "import torch + nbcallback(.train/.dataset/.widgets)",
    "checkpoint": "save_checkpoint(train_network)",
    "coldstart": "one-time costs before train()",
    "overhead": "per-step overhead, all three callbacks",
}


# --------------------------------------------------------------------------- running one variant


def _child_env(threads: int, pycache: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("KERAS_BACKEND", "torch")
    env.pop("NBCALLBACK_DISPLAY", None)
    if threads > 0:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    if pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run_variant(name: str, args: argparse.Namespace, seed: int, pycache: str | None = None) -> dict[str, Any]:
    """Run one variant in a fresh process; its result plus the machine's load around it."""
    with tempfile.NamedTemporaryFile(prefix=f"nbcallback-bench-{name}-", suffix=".json", delete=False) as handle:
        out = handle.name
    command = [sys.executable, "-m", "benchmarks.workloads", name, "--data", str(args.data), "--threads",
               str(args.threads), "--seed", str(seed), "--out", out] + (["--quick"] if args.quick else [])
    load_before, jiffies_before = loadavg(), busy_jiffies()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=REPO, env=_child_env(args.threads, pycache), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"variant {name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        result = json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    jiffies_after = busy_jiffies()
    child_cpu = (usage_after.ru_utime - usage_before.ru_utime) + (usage_after.ru_stime - usage_before.ru_stime)
    result["process_wall_s"] = wall
    result["load_before"] = load_before
    if jiffies_before and jiffies_after:
        busy = (jiffies_after[0] - jiffies_before[0]) / os.sysconf("SC_CLK_TCK")
        # Other processes' CPU use during this run, in cores (0 = quiet machine).
        result["foreign_cpu_cores"] = round(max(busy - child_cpu, 0.0) / wall, 2)
    return result


def _available(comparison: dict[str, Any]) -> list[str]:
    requires = comparison.get("requires", {})
    return [v for v in comparison["variants"]
            if v not in requires or importlib.util.find_spec(requires[v]) is not None]


def _pycache_warmup(variants: list[str], args: argparse.Namespace, pycache: str) -> None:
    for name in variants:  # compile every module once, as `pip install` does
        run_variant(name, args, args.seed, pycache)


# --------------------------------------------------------------------------- statistics


def _value(result: dict[str, Any], field: str = "value") -> float | None:
    value = result.get(field)
    return float(value) if isinstance(value, (int, float)) else None


def analyse(name: str, comparison: dict[str, Any], runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    variants = list(runs)
    reference = variants[0]
    summaries = {v: summarize([r["value"] for r in runs[v]]) for v in variants}
    for v in variants:
        summaries[v]["unit"] = runs[v][0].get("unit", "s")
        for field in ("cpu_seconds", "step_p10_ms", "test_accuracy", "build_s", "nbcallback_s", "stall_max_ms",
                      "stall_median_ms", "async_call_ms", "index_select_s", "model_eval_s", "foreign_cpu_cores",
                      "first_step_ms", "tail_ms", "pipeline_build_s"):
            values = [r[field] for r in runs[v] if isinstance(r.get(field), (int, float))]
            if values:
                summaries[v][field] = summarize(values)
    pairs = comparison.get("pairs") or [(v, reference) for v in variants[1:]]
    ratios: dict[str, Any] = {}
    for subject, ref in pairs:
        if subject not in runs or ref not in runs:
            continue
        key = subject if ref == reference and not comparison.get("pairs") else f"{subject}/{ref}"
        entry: dict[str, Any] = {"subject": subject, "reference": ref}
        for field, label in (("value", "ratio"), ("cpu_seconds", "cpu_ratio"), ("step_p10_ms", "p10_ratio")):
            paired = [a[field] / b[field] for a, b in zip(runs[subject], runs[ref])
                      if isinstance(a.get(field), (int, float)) and isinstance(b.get(field), (int, float)) and b[field]]
            if paired:
                entry[label] = summarize(paired)
                entry[label + "_of_medians"] = (statistics.median(r[field] for r in runs[subject])
                                                / statistics.median(r[field] for r in runs[ref]))
        target = comparison.get("targets", {}).get(key)
        if target is not None and "ratio" in entry:
            entry["target"] = target
            entry["meets_target"] = entry["ratio"]["median"] <= target
        ratios[key] = entry
    absolute = {}
    for spec, target in comparison.get("absolute", {}).items():
        variant_name, field = spec.split(".", 1)
        values = [r[field] for r in runs.get(variant_name, []) if isinstance(r.get(field), (int, float))]
        if values:
            absolute[spec] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                              "target": target, "meets_target": statistics.median(values) <= target}
    return {"reference": reference, "variants": summaries, "ratios": ratios, "absolute": absolute,
            "runs": runs}


# --------------------------------------------------------------------------- output


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s" if value >= 0.01 else f"{value * 1e3:.2f} ms"
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "us/step":
        return f"{value:.1f} us/step"
    return f"{value:.4g} {unit}"


def table(report: dict[str, Any]) -> str:
    lines = ["| comparison | variant | median | min | max | x reference (paired median [min-max]) | target |",
             "|---|---|---|---|---|---|---|"]
    for name, comp in report["comparisons"].items():
        for variant_name, summary in comp["variants"].items():
            unit = summary["unit"]
            ratio_text, target_text = "", ""
            for key, entry in comp["ratios"].items():
                if entry["subject"] != variant_name:
                    continue
                r = entry.get("ratio")
                if r is None:
                    continue
                text = f"{r['median']:.3f} [{r['min']:.3f}-{r['max']:.3f}]"
                if entry["reference"] != comp["reference"] or comp.get("pairs"):
                    text += f" vs {entry['reference']}"
                if "p10_ratio" in entry:
                    text += f"; p10 step {entry['p10_ratio']['median']:.3f}"
                ratio_text = (ratio_text + "; " if ratio_text else "") + text
                if "target" in entry:
                    target_text = f"<= {entry['target']} {'ok' if entry['meets_target'] else 'MISSED'}"
            if variant_name == comp["reference"] and len(comp["variants"]) > 1:
                ratio_text = "1 (reference)"
            label = LABELS.get(variant_name, variant_name)
            lines.append(f"| {name} | {label} | {_fmt(summary['median'], unit)} | {_fmt(summary['min'], unit)} | "
                         f"{_fmt(summary['max'], unit)} | {ratio_text} | {target_text} |")
        for spec, entry in comp["absolute"].items():
            unit = "ms" if spec.startswith("checkpoint") else "s"
            lines.append(f"| {name} | {spec} | {_fmt(entry['median'], unit)} | {_fmt(entry['min'], unit)} | "
                         f"{_fmt(entry['max'], unit)} | | <= {_fmt(entry['target'], unit)} "
                         f"{'ok' if entry['meets_target'] else 'MISSED'} |")
    return "\n".join(lines)


def details(report: dict[str, Any]) -> str:
    out = []
    comps = report["comparisons"]
    if "coldstart" in comps:
        runs = comps["coldstart"]["runs"]["coldstart"]
        keys = [k for k in runs[0] if k.endswith("_s") or k == "first_sgd_imported_dynamo"]
        out.append("One-time costs (median of fresh processes):")
        for key in keys:
            out.append(f"  {key:32s} {statistics.median(r[key] for r in runs):.4f}")
    if "overhead" in comps:
        runs = comps["overhead"]["runs"]["overhead"]
        out.append(f"Per-step overhead over a bare loop (tiny model; bare step "
                   f"{statistics.median(r['bare_us_per_step'] for r in runs):.0f} us), median of processes:")
        for key in runs[0]["over_bare_us_per_step"]:
            calls = runs[0].get("python_calls_per_step", {})
            extra = f"   ({calls[key]:.1f} Python calls/step)" if key in calls else ""
            out.append(f"  {key:40s} {statistics.median(r['over_bare_us_per_step'][key] for r in runs):7.1f} us/step"
                       + extra)
    if "train" in comps:
        for v, summary in comps["train"]["variants"].items():
            acc = summary.get("test_accuracy")
            if acc:
                out.append(f"test accuracy after the epoch, {v}: median {acc['median']:.4f} "
                           f"[{acc['min']:.4f}-{acc['max']:.4f}]")
    return "\n".join(out)


def draw(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comps = report["comparisons"]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1.3, 1.2, 0.8]})
    # (a) epoch times
    ax = axes[0]
    bars = []
    for comp_name, names in (("train", ["bare", "nbcallback", "nbcallback_pipeline", "lightning", "keras"]),
                             ("amp", ["bare_amp", "nbcallback_amp"])):
        comp = comps.get(comp_name)
        if comp:
            for v in names:
                if v in comp["variants"]:
                    s = comp["variants"][v]
                    bars.append((v.replace("nbcallback", "nbc").replace("_pipeline", "\npipeline"), s))
    if bars:
        xs = range(len(bars))
        medians = [s["median"] for _, s in bars]
        err = [[m - s["min"] for m, (_, s) in zip(medians, bars)], [s["max"] - m for m, (_, s) in zip(medians, bars)]]
        colors = ["#777777" if "bare" in n else "#1f77b4" if "nbc" in n else "#ff7f0e" for n, _ in bars]
        ax.bar(xs, medians, yerr=err, color=colors, capsize=3)
        ax.set_xticks(list(xs), [n.replace("_", "\n") for n, _ in bars], fontsize=7)
        ax.set_ylabel("s per epoch (938 steps)", fontsize=8)
        ax.set_title("MNIST epoch, median [min-max]", fontsize=9)
        for x, m in zip(xs, medians):
            ax.text(x, m, f"{m:.2f}", ha="center", va="bottom", fontsize=7)
    # (b) ratios against targets
    ax = axes[1]
    items = []
    for comp_name, key, label in (("train", "nbcallback", "train"), ("amp", "nbcallback_amp/bare_amp", "amp"),
                                  ("pipeline", "pipeline", "pipeline"), ("widgets", "widgets_text", "widgets\ntext"),
                                  ("widgets", "widgets_off", "widgets\noff"),
                                  ("eval", "eval_model/eval_bare", "Model\n.eval"),
                                  ("eval", "eval_nbcallback/eval_bare", "fit\nvalidation")):
        entry = comps.get(comp_name, {}).get("ratios", {}).get(key)
        if entry and "ratio" in entry:
            items.append((label, entry["ratio"], entry.get("target")))
    if items:
        xs = range(len(items))
        ax.bar(xs, [r["median"] for _, r, _ in items],
               yerr=[[r["median"] - r["min"] for _, r, _ in items], [r["max"] - r["median"] for _, r, _ in items]],
               color=["#2ca02c" if t is None or r["median"] <= t else "#d62728" for _, r, t in items], capsize=3)
        for x, (_, r, t) in zip(xs, items):
            if t:
                ax.plot([x - 0.4, x + 0.4], [t, t], color="black", lw=1)
            ax.text(x, r["median"], f"{r['median']:.3f}", ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="#999999", lw=0.8, ls=":")
        ax.set_xticks(list(xs), [label for label, _, _ in items], fontsize=7)
        ax.set_title("x reference (paired median); line = target", fontsize=9)
    # (c) absolute budgets
    ax = axes[2]
    items = []
    for comp_name, spec, label in (("pipeline", "pipeline.build_s", "build"),
                                   ("import", "import_nbcallback.nbcallback_s", "import"),
                                   ("checkpoint", "checkpoint.value", "ckpt save"),
                                   ("checkpoint", "checkpoint.stall_max_ms", "ckpt stall")):
        entry = comps.get(comp_name, {}).get("absolute", {}).get(spec)
        if entry:
            items.append((label, entry["median"] / entry["target"]))
    if items:
        xs = range(len(items))
        ax.bar(xs, [v for _, v in items], color=["#2ca02c" if v <= 1 else "#d62728" for _, v in items])
        ax.axhline(1.0, color="black", lw=1)
        ax.set_xticks(list(xs), [label for label, _ in items], fontsize=7)
        ax.set_title("share of the budget (1 = target)", fontsize=9)
        for x, (_, v) in zip(xs, items):
            ax.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    meta = report["meta"]
    fig.suptitle(f"nbcallback benchmarks: {meta['cpu']} ({meta['cpus']} CPUs), torch {meta['torch']}, "
                 f"{meta['threads']} thread(s), {meta['rounds']} rounds", fontsize=9)
    for ax in axes:
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


# --------------------------------------------------------------------------- main


def _data_dir(args: argparse.Namespace) -> Path:
    if args.data:
        data = Path(args.data)
        if (data / "MNIST_Data").is_dir():
            data = data / "MNIST_Data"
        if not (data / "train").is_dir():
            raise SystemExit(f"--data {data}: expected an MNIST_Data folder holding train/ and test/")
        return data.resolve()
    sys.path.insert(0, str(REPO))
    from nbcallback.dataset import download_mnist
    from nbcallback.dataset.download import DownloadError

    try:
        return Path(download_mnist(REPO / "benchmarks" / ".data", progress=False)).resolve()
    except DownloadError as exc:  # no network: say so and how to point at a copy, without a traceback
        raise SystemExit(f"{exc}\nOr give the benchmarks a copy you have: python -m benchmarks --data PATH/MNIST_Data")


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if any(arg == "--device" or arg.startswith("--device=") for arg in arguments):
        from benchmarks.cuda import main as device_main  # the GPU suite: one process, see benchmarks/cuda.py

        return device_main(arguments)
    if "--step-overhead" in arguments:
        from benchmarks.train import overhead_main  # one process, alternating rounds: see benchmarks/train.py

        return overhead_main(arguments)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Comparisons: " + ", ".join(COMPARISONS))
    parser.add_argument("--data", help="an MNIST_Data folder (default: download_mnist into benchmarks/.data)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per comparison; each runs every variant once "
                        "in a fresh process (default 5; 1 with --quick)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1; 0 = torch's default)")
    parser.add_argument("--only", help="comma-separated comparisons to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="smoke mode: few steps/epochs, 1 round")
    parser.add_argument("--json", help="write the full report here (default: benchmarks/results/latest.json; "
                        "'-' for none)")
    parser.add_argument("--png", help="write the bar chart here (default: benchmarks/results/latest.png; '-' for none)")
    parser.add_argument("--no-peers", action="store_true", help="leave Lightning and Keras out even when installed")
    parser.add_argument("--seed", type=int, default=0, help="first seed; round r uses seed + r")
    parser.add_argument("--step-overhead", action="store_true",
                        help="instead: per-step overhead of the loop and each tutorial callback, in one process "
                             "(see --step-overhead --help)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per process")
    parser.add_argument("--merge", action="store_true",
                        help="with --only: replace just those comparisons in the existing JSON report (the others "
                             "and their metadata stay; the update is recorded under meta.updates)")
    args = parser.parse_args(argv)
    if args.quick and "--rounds" not in " ".join(argv if argv is not None else sys.argv[1:]):
        args.rounds = 1
    names = list(COMPARISONS) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in COMPARISONS]
    if unknown:
        parser.error(f"unknown comparison(s) {unknown}; choose from {list(COMPARISONS)}")
    args.data = _data_dir(args)
    json_path = None if args.json == "-" else Path(args.json) if args.json else RESULTS / "latest.json"
    png_path = None if args.png == "-" else Path(args.png) if args.png else RESULTS / "latest.png"

    import torch

    meta = {
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cpu": cpu_model(), "cpus": os.cpu_count(), "platform": platform.platform(),
        "python": platform.python_version(), "torch": torch.__version__, "threads": args.threads,
        "rounds": args.rounds, "quick": args.quick, "loadavg_start": loadavg(),
        "peers": {m: _version(m) for m in ("lightning", "keras")},
    }
    print(f"nbcallback benchmarks: {meta['cpu']}, {meta['cpus']} CPUs, torch {meta['torch']}, "
          f"{args.threads} thread(s), {args.rounds} round(s); load average {meta['loadavg_start']}", flush=True)
    comparisons: dict[str, Any] = {}
    pycache_dir = tempfile.mkdtemp(prefix="nbcallback-bench-pycache-")
    try:
        for name in names:
            comparison = COMPARISONS[name]
            variants = _available(comparison)
            if args.no_peers:
                variants = [v for v in variants if v not in comparison.get("requires", {})]
            missing = sorted(set(comparison["variants"]) - set(variants))
            if missing:
                print(f"[{name}] not installed, skipped: {', '.join(missing)}", flush=True)
            pycache = pycache_dir if comparison.get("pycache") else None
            if pycache:
                _pycache_warmup(variants, args, pycache)
            rounds = min(args.rounds, comparison.get("max_rounds", args.rounds))
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            for r in range(rounds):
                shift = r % len(variants)
                order = variants[shift:] + variants[:shift]
                for v in order:
                    result = run_variant(v, args, args.seed + r, pycache)
                    runs[v].append(result)
                    unit = result.get("unit", "s")
                    print(f"[{name}] round {r + 1}/{rounds} {v:20s} {_fmt(result['value'], unit):>14s}  "
                          f"(load {result['load_before'][:1]}, foreign cpu {result.get('foreign_cpu_cores')})",
                          flush=True)
            comparisons[name] = analyse(name, comparison, runs)
    finally:
        shutil.rmtree(pycache_dir, ignore_errors=True)
    meta["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    meta["loadavg_end"] = loadavg()
    report = {"meta": meta, "comparisons": comparisons}
    if args.merge and json_path and json_path.exists():
        previous = json.loads(json_path.read_text())
        update = {k: meta[k] for k in ("started", "finished", "command", "rounds", "loadavg_start", "loadavg_end")}
        update["comparisons"] = sorted(comparisons)
        previous["meta"].setdefault("updates", []).append(update)
        previous["comparisons"].update(comparisons)
        report = previous
    print()
    print(table(report))
    print()
    print(details(report))
    print(f"\nload average at start {meta['loadavg_start']}, at end {meta['loadavg_end']} "
          f"(1/5/15 min; {meta['cpus']} CPUs)")
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=1))
        print(f"JSON: {json_path}")
    if png_path:
        png_path.parent.mkdir(parents=True, exist_ok=True)
        draw(report, png_path)
        print(f"PNG:  {png_path}")
    return 0


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - informational only
        return "installed"


if __name__ == "__main__":
    raise SystemExit(main())
