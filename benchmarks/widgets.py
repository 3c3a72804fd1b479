"""Benchmark of nbcallback.widgets against the targets of widgets-anchors.md §5.10.

Measures, on this machine:

1. **Display overhead in a real kernel** -- the tutorial MLP (784-512-512-10,
   batch 64, SGD) on MNIST-shaped tensors, ``model.fit(EPOCHS, 938 steps,
   157 validation steps)``, run in an ipykernel through nbclient, one run per
   cell: ProgressBar / LiveLossPlot (default, forced inline, forced helper
   process) / Dashboard, and a control without callbacks (an A/A test: the
   spread of its ratios is the machine's noise), each run right next to a run without display
   callbacks (in alternating order), so each pair shares the machine's load.  Reported: median wall and CPU time per config, the median of the
   paired ratios to the run without callbacks (wall, process CPU, and the
   training thread's own CPU time, which leaves out time the thread spent
   preempted by other tenants), and the time the callback itself measured on
   the training thread (``display_seconds``: every hook that does work,
   including opening the view and waiting for the final frame), which is the
   least noisy figure on a shared VM.
2. **Front-end traffic** per run: iopub messages per second (average and
   1-second peak) and bytes per second during the live phase, plus the size of
   each run's saved cell and the widget models left in the saved notebook.
3. **Plot frames**: the figure prebuild (done by the helper when a run
   starts), then time and size of live frames (blitted lines only, or with a
   scale-layer redraw) and of the final palette PNG, for 10 epochs x 938 steps
   of data; and the first and final frames of a one-epoch fit.
4. **Hot path**: the cost of ``on_train_step_end`` on a step without a check.

Run:  python benchmarks/widgets.py [--reps 5] [--epochs 1] [--json out.json]

Uses one torch thread everywhere (the machine has 2 shared cores), synthetic
data (seeded; the seed is printed) so it does not need the MNIST download.
The data is in memory and pre-normalised, the strictest case for the ratio:
the tutorial's real input pipeline makes each step slower and the display
share smaller.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: "control" runs without callbacks too, paired with a bare run like the others: the spread of its
#: ratios is what this machine's noise alone gives a paired ratio (an A/A test).
CONFIGS = ("none", "control", "ProgressBar", "LiveLossPlot", "LiveLossPlot+inline", "LiveLossPlot+helper", "Dashboard")

KERNEL_SETUP = """\
import json, time, torch
torch.set_num_threads(1)
from torch import nn
from nbcallback.train import Model
from nbcallback.widgets import ProgressBar, LiveLossPlot, Dashboard
SEED, STEPS, EVAL_STEPS, EPOCHS = {seed}, {steps}, {eval_steps}, {epochs}
g = torch.Generator().manual_seed(SEED)
pool = [(torch.randn(64, 1, 28, 28, generator=g), torch.randint(0, 10, (64,), generator=g)) for _ in range(64)]
train = [pool[i % 64] for i in range(STEPS)]
valid = [pool[i % 64] for i in range(EVAL_STEPS)]
torch.manual_seed(SEED)
net = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 1e-2), metrics={{"accuracy"}})
FACTORIES = {{"none": lambda: [], "control": lambda: [], "ProgressBar": lambda: [ProgressBar()],
             "LiveLossPlot": lambda: [LiveLossPlot()], "Dashboard": lambda: [Dashboard()],
             "LiveLossPlot+inline": lambda: [LiveLossPlot(plot_process=False)],
             "LiveLossPlot+helper": lambda: [LiveLossPlot(plot_process=True)]}}
RESULTS = []
def run(name, rep):
    callbacks = FACTORIES[name]()
    w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
    model.fit(EPOCHS, train, valid, callbacks=callbacks)
    RESULTS.append({{"config": name, "rep": rep, "wall": time.perf_counter() - w0, "cpu": time.process_time() - c0,
                    "thread_cpu": time.thread_time() - t0,
                    "display": callbacks[0].view().display_seconds if callbacks else 0.0,
                    "final": callbacks[0].final_seconds if callbacks else 0.0,
                    "frames": callbacks[0].plot_frames if callbacks else 0}})
"""


def kernel_benchmark(reps: int, epochs: int, steps: int, eval_steps: int, seed: int,
                     configs: tuple[str, ...] = CONFIGS) -> dict:
    import nbformat

    from tests.widgets._kernel import make_notebook, run_notebook, traffic_stats

    order = list(configs)
    cells = [f"for name in {order!r}:\n    run(name, -1)"]  # warm-up: imports, first figure, caches
    # Each display configuration runs right next to its own run without callbacks, in
    # alternating order (A B, then B A), so a pair shares the machine's state of the moment.
    plan = []
    others = order[1:]
    for rep in range(reps):
        for index, name in enumerate(others[rep % len(others):] + others[: rep % len(others)]):
            pair = [("none", f"{name}:{rep}"), (name, f"{name}:{rep}")]
            plan += pair if (rep + index) % 2 == 0 else pair[::-1]
    for name, pair in plan:
        cells.append(f"run({name!r}, {pair!r})")
    cells.append("print('RESULTS=' + json.dumps(RESULTS))")
    nb = make_notebook([KERNEL_SETUP.format(seed=seed, steps=steps, eval_steps=eval_steps, epochs=epochs)] + cells,
                       setup=False)
    with tempfile.TemporaryDirectory() as tmp:
        client, path = run_notebook(nb, Path(tmp), timeout=1800)
        saved = nbformat.read(path, as_version=4)
        saved_bytes = path.stat().st_size
    text = "".join(o.get("text", "") for o in saved.cells[-1].outputs if o.get("output_type") == "stream")
    results = json.loads(text.split("RESULTS=", 1)[1])
    results = [r for r in results if r["rep"] != -1]
    traffic: dict[str, list[dict]] = {name: [] for name in configs}
    for index, (name, _pair) in enumerate(plan):
        cell_index = index + 2  # setup, warm-up
        stats = traffic_stats(client.cell_messages(cell_index))
        stats["saved_cell_bytes"] = len(json.dumps(saved.cells[cell_index]))
        traffic[name].append(stats)
    widget_state = saved.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return {"configs": list(configs), "runs": results, "traffic": traffic, "saved_notebook_bytes": saved_bytes,
            "widget_models_saved": len(widget_state.get("state", {}))}


def _p10_p90(values: list[float]) -> list[float]:
    """The 10th and 90th percentiles: how far single pairs stray (noise, or a real difference)."""
    if len(values) < 2:
        return list(values) * 2
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return [deciles[0], deciles[-1]]


def summarize_kernel(data: dict) -> dict:
    runs = data["runs"]
    configs = data.get("configs", CONFIGS)
    by = {name: [r for r in runs if r["config"] == name] for name in configs}
    base = {r["rep"]: r for r in by["none"]}  # "rep" names the pair: the bare run next to each run
    summary = {}
    for name in configs:
        walls = [r["wall"] for r in by[name]]
        cpus = [r["cpu"] for r in by[name]]
        paired_wall = [r["wall"] / base[r["rep"]]["wall"] for r in by[name] if r["rep"] in base]
        paired_cpu = [r["cpu"] / base[r["rep"]]["cpu"] for r in by[name] if r["rep"] in base]
        paired_thread = [r["thread_cpu"] / base[r["rep"]]["thread_cpu"] for r in by[name] if r["rep"] in base]
        traffic = data["traffic"][name]
        entry = {
            "median_wall_s": statistics.median(walls),
            "median_cpu_s": statistics.median(cpus),
            "ratio_wall_median_of_pairs": statistics.median(paired_wall),
            "ratio_wall_pairs_p10_p90": _p10_p90(paired_wall),
            "ratio_cpu_median_of_pairs": statistics.median(paired_cpu),
            "ratio_training_thread_cpu_median_of_pairs": statistics.median(paired_thread),
            "ratio_training_thread_cpu_pairs_p10_p90": _p10_p90(paired_thread),
            "ratio_wall_of_medians": statistics.median(walls) / statistics.median([r["wall"] for r in by["none"]]),
            "display_seconds_median": statistics.median(r["display"] for r in by[name]),
            "display_share_of_wall_median": statistics.median(r["display"] / r["wall"] for r in by[name]),
            "final_snapshot_seconds_median": statistics.median(r["final"] for r in by[name]),
            "live_plot_frames_median": statistics.median(r["frames"] for r in by[name]),
        }
        if name not in ("none", "control"):
            entry.update(
                {
                    # A run that sent nothing while live (display off) has no live rates.
                    "msgs_per_s_live": statistics.median(t.get("live_rate", 0.0) for t in traffic),
                    "peak_msgs_per_s": max(t.get("live_peak_per_s", 0) for t in traffic),
                    "bytes_per_s_live": statistics.median(t.get("live_bytes_per_s", 0.0) for t in traffic),
                    "max_message_bytes": max(t.get("max_message_bytes", 0) for t in traffic),
                    "messages_per_run": statistics.median(t["count"] for t in traffic),
                    "saved_cell_bytes": max(t["saved_cell_bytes"] for t in traffic),
                }
            )
        summary[name] = entry
    return summary


def _one_epoch_final_frames(seed: int, runs: int = 9) -> dict:
    """The frames of a one-epoch fit as the helper draws them: the figure prebuilt at the start,
    two live frames, then the final frame with the first evaluation point (the metric panel's title,
    a legend entry): the frame a one-epoch run waits for at its end, drawn in full or over the
    training curve drawn ahead when the last evaluation began (``prepare_final``)."""
    from nbcallback.widgets.plot import LossPlot
    from nbcallback.widgets.state import TrainingState

    rng = random.Random(seed)
    firsts, finals, prepared = [], [], []
    for run in range(2 * runs):
        state = TrainingState()
        state.start(0.0, epochs=1, steps_per_epoch=938, has_validation=True, eval_steps=157)
        state.begin_epoch(1, 0.0)
        plot = LossPlot()
        plot.prebuild(state.plot_data())
        for index, step in enumerate((120, 600, 938)):
            done = state.global_step
            state.record_steps(1.0 + index, step, [2.3 * math.exp(-i / 400) + 0.2 * rng.random() for i in range(done, step)])
            started = time.perf_counter()
            plot.render(state.plot_data())
            if index == 0:
                firsts.append(time.perf_counter() - started)
        if run % 2:  # as the helper does when the last evaluation begins
            plot.prepare_final(state.plot_data())
        state.add_eval_row(4.0, {"accuracy": 0.9, "eval_loss": 0.3}, epoch=1, step=938)
        state.end_epoch(1, 4.0, True)
        started = time.perf_counter()
        plot.render(state.plot_data(), final=True)
        (prepared if run % 2 else finals).append(time.perf_counter() - started)
        plot.close()
    return {"first_frame_ms_median": 1000 * statistics.median(firsts),
            "final_frame_ms_median": 1000 * statistics.median(finals),
            "final_frame_after_prepare_final_ms_median": 1000 * statistics.median(prepared)}


def plot_benchmark(seed: int) -> dict:
    """Frame costs over 10 epochs x 938 steps (a frame every 94 steps), after a prebuilt figure."""
    from nbcallback.widgets.plot import LossPlot
    from nbcallback.widgets.state import TrainingState

    rng = random.Random(seed)
    state = TrainingState()
    state.start(0.0, epochs=10, steps_per_epoch=938, has_validation=True, eval_steps=157)
    plot = LossPlot()
    plot.prepare()
    started = time.perf_counter()
    plot.prebuild(state.plot_data())
    prebuild = time.perf_counter() - started
    t, step = 0.0, 0
    blits, scales = [], []
    for epoch in range(1, 11):
        state.begin_epoch(epoch, t)
        for _ in range(0, 938, 94):
            n = min(94, 938 * epoch - step)
            losses = [2.3 * math.exp(-(step + i) / 2500) + 0.25 * rng.random() for i in range(n)]
            step += n
            t += 0.2
            state.record_steps(t, step, losses)
            draws = plot.scale_draws
            started = time.perf_counter()
            frame = plot.render(state.plot_data())
            cost = time.perf_counter() - started
            (scales if plot.scale_draws != draws else blits).append((cost, len(frame)))
        state.add_eval_row(t, {"accuracy": 0.9 + 0.007 * epoch, "eval_loss": 0.35 / epoch}, epoch=epoch, step=step)
        state.end_epoch(epoch, t, True)
    started = time.perf_counter()
    final = plot.render(state.plot_data(), final=True)
    final_cost = time.perf_counter() - started
    full_redraws = plot.full_draws - 1  # after the prebuild
    plot.close()
    frames = blits + scales
    return {
        "prebuild_ms": 1000 * prebuild,
        "frames": len(frames),
        "blit_ms_median": 1000 * statistics.median(c for c, _ in blits),
        "scale_redraws": len(scales),
        "scale_redraw_ms_median": 1000 * statistics.median(c for c, _ in scales),
        "full_redraws_after_prebuild": full_redraws,
        "all_frames_ms_median": 1000 * statistics.median(c for c, _ in frames),
        "frame_ms_max": 1000 * max(c for c, _ in frames),
        "frame_kb_max": max(s for _, s in frames) / 1024,
        "final_png_ms": 1000 * final_cost,
        "final_png_kb": len(final) / 1024,
        "points_per_line_max": 2000,
        "one_epoch_fit": _one_epoch_final_frames(seed),
    }


def hot_path_benchmark(calls: int = 200_000) -> dict:
    import torch

    from nbcallback.train import Callback, RunContext
    from nbcallback.widgets import ProgressBar

    torch.set_num_threads(1)
    bar = ProgressBar(display="off")
    params = {"net_outputs": torch.tensor(0.5)}
    ctx = RunContext(params)
    bar.__enter__()
    bar._cb_params = params
    bar._append = bar._losses.append
    bar._countdown = 10**12  # never reach a check: the pure per-step cost
    noop = Callback()
    results = {}
    for label, func in (("noop", noop.on_train_step_end), ("ProgressBar", bar.on_train_step_end)):
        best = math.inf
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(calls):
                func(ctx)
            best = min(best, (time.perf_counter() - started) / calls)
            if label != "noop":
                bar._losses.clear()
        results[label] = best
    bar._depth = 0
    return {
        "per_step_us": 1e6 * results["ProgressBar"],
        "noop_callback_us": 1e6 * results["noop"],
        "extra_over_noop_us": 1e6 * (results["ProgressBar"] - results["noop"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5, help="alternating rounds per configuration")
    parser.add_argument("--epochs", type=int, default=1, help="epochs per fit run")
    parser.add_argument("--steps", type=int, default=938, help="training steps per epoch (MNIST/64 = 938)")
    parser.add_argument("--eval-steps", type=int, default=157, help="validation steps (10k/64 = 157)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--skip-kernel", action="store_true", help="only the in-process measurements")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help=f"comma-separated kernel configurations, 'none' first (default: {','.join(CONFIGS)})")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"seed={args.seed} reps={args.reps} epochs={args.epochs} steps={args.steps} eval_steps={args.eval_steps}")
    out: dict = {"seed": args.seed}
    out["hot_path"] = hot_path_benchmark()
    print("hot path:", json.dumps(out["hot_path"], indent=1))
    out["plot"] = plot_benchmark(args.seed)
    print("plot:", json.dumps(out["plot"], indent=1))
    if not args.skip_kernel:
        configs = tuple(c.strip() for c in args.configs.split(",") if c.strip())
        unknown = [c for c in configs if c not in CONFIGS]
        if unknown or not configs or configs[0] != "none":
            parser.error(f"--configs: choose from {','.join(CONFIGS)}, starting with 'none' (got {args.configs!r})")
        data = kernel_benchmark(args.reps, args.epochs, args.steps, args.eval_steps, args.seed, configs)
        out["kernel"] = summarize_kernel(data)
        out["saved_notebook_bytes"] = data["saved_notebook_bytes"]
        out["widget_models_saved"] = data["widget_models_saved"]
        out["raw_runs"] = data["runs"]
        print("kernel:", json.dumps(out["kernel"], indent=1))
        print(f"saved notebook: {data['saved_notebook_bytes']} bytes for {len(data['runs'])} runs; "
              f"widget models left: {data['widget_models_saved']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
