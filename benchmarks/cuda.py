"""The tutorial workload on a GPU: ``python -m benchmarks --device cuda`` (or ``python benchmarks/cuda.py``).

One MNIST epoch (938 steps of 64, the tutorial MLP, SGD 0.01) per run. Unlike
the CPU suite, every variant runs in one process, so the GPU, cuBLAS and the
caching allocator stay warm: after one warm-up epoch of each variant, every
round runs each variant once, the order rotating from round to round, and the
ratios are taken within a round (median, min, max). Each epoch is timed from a
``torch.cuda.synchronize()`` before its first step to one after its last.

Training on batches already on the GPU (a ``randperm`` drawn on the device,
batches gathered there), each against its bare loop:

* ``nbcallback``: ``Model.train`` + LossMonitor(300) + TimeMonitor + ModelCheckpoint
  (the tutorial's), vs ``bare`` (target <= 1.03);
* ``nbcallback_bf16``: ``amp_level='O2'`` (bfloat16 autocast), vs ``bare_bf16`` (<= 1.03);
* ``nbcallback_fp16``: ``amp_level='O1'`` (float16 + GradScaler), vs ``bare_fp16``;
  ``nbcallback_fp16_fused``: the same with ``SGD(fused=True)``, whose step takes
  the scaler's ``found_inf`` on the device;
* ``lightning``: Lightning's Trainer on the same batches (no progress bar,
  logger or checkpoint), when installed.

Graph mode (with ``--graph``, or named in ``--only``; each compiles once, in the
warm-up, and its model is then reused from round to round):

* ``nbcallback_graph``: ``Model(..., graph_mode=True)`` (the whole step under
  ``torch.compile``; on CUDA ``mode="reduce-overhead"``, CUDA graphs) with the
  tutorial's callbacks, vs the eager ``bare`` loop: target 5x faster (time ratio <= 0.2);
* ``bare_graph``: the bare loop's step compiled the same way (no callbacks): the
  limit graph mode can approach. The report prints both as "x faster than the eager
  bare loop", and the first step's compile time of each.

Fed from the host:

* ``nbcallback_pipeline``: the tutorial's ``MnistDataset -> map -> batch(64)``
  pipeline (CPU batches) under ``Model.train``; ``nbcallback_pipeline_prefetch``
  the same with ``Model(prefetch=True)``; ``nbcallback_pipeline_pinned`` with
  pinned copies one batch ahead on the training stream (another strategy, for
  comparison); each vs ``bare_host_batches``: a bare loop slicing CPU tensors
  and copying each batch (target <= 0.9).

Counted, per ordinary step (``(count over 2N steps - count over N) / N``, so the
run's fixed costs cancel): device operations (kernels and copies, from
``torch.profiler``) and host synchronisations (``torch.cuda.set_sync_debug_mode
('warn')`` warnings) of the bare loop and of ``Model.train`` with the tutorial's
callbacks, in fp32, bf16, fp16 and fp16 with a fused optimizer.

Usage::

    python -m benchmarks --device cuda --data /path/to/MNIST_Data [--rounds 7] [--json FILE] [--quick] [--graph]

``--device cpu`` runs the same script on the CPU (the tests' smoke run: the
CPU's figures come from the main suite, in fresh processes).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import BATCH_SIZE, REPO, build, ensure_repo_on_path, mnist_tensors, summarize  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"nbcallback": ("bare", 1.03), "nbcallback_bf16": ("bare_bf16", 1.03),
           "nbcallback_pipeline": ("bare_host_batches", 0.9),
           "nbcallback_graph": ("bare", 0.2)}  # graph mode: at least 5x the eager bare loop
#: variant -> the bare loop it is compared with
REFERENCE = {
    "nbcallback": "bare", "lightning": "bare",
    "nbcallback_bf16": "bare_bf16",
    "nbcallback_fp16": "bare_fp16", "nbcallback_fp16_fused": "bare_fp16",
    "nbcallback_pipeline": "bare_host_batches", "nbcallback_pipeline_prefetch": "bare_host_batches",
    "nbcallback_pipeline_pinned": "bare_host_batches",
    "nbcallback_graph": "bare", "bare_graph": "bare",
}
#: Variants that compile (a minute or more on the first epoch): run with --graph or when named in --only.
GRAPH_VARIANTS = ("bare_graph", "nbcallback_graph")
QUICK_STEPS = 60


class DeviceBatches:
    """Batches gathered on the device by a ``randperm`` drawn there (no host work per step)."""

    def __init__(self, images, labels, seed: int, limit: int | None = None) -> None:
        import torch

        self.images, self.labels = images, labels
        self.generator = torch.Generator(device=images.device).manual_seed(seed)
        steps = (len(labels) + BATCH_SIZE - 1) // BATCH_SIZE
        self.steps = steps if limit is None else min(steps, limit)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        import torch

        perm = torch.randperm(len(self.labels), device=self.images.device, generator=self.generator)
        for i in range(0, self.steps * BATCH_SIZE, BATCH_SIZE):
            index = perm[i:i + BATCH_SIZE]
            yield self.images[index], self.labels[index]


class HostBatches(DeviceBatches):
    """The same batches gathered from CPU tensors (what a loop over host data copies each step)."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        import torch

        perm = torch.randperm(len(self.labels), generator=self.generator)
        for i in range(0, self.steps * BATCH_SIZE, BATCH_SIZE):
            index = perm[i:i + BATCH_SIZE]
            yield self.images[index], self.labels[index]


class PinnedAhead:
    """Another prefetch strategy, for comparison: pinned copies one batch ahead on the training stream itself.

    No side stream and no events: the copy is queued behind the running step
    (no overlap on the GPU), but from pinned memory it never makes the host wait.
    """

    def __init__(self, batches: Any, device: Any) -> None:
        self.batches, self.device = batches, device

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Any]:
        def move(batch: Any) -> Any:
            return tuple(item.pin_memory().to(self.device, non_blocking=True) for item in batch)

        iterator = iter(self.batches)
        pending = move(next(iterator))
        for batch in iterator:
            ready, pending = pending, move(batch)
            yield ready
        yield pending


class Bench:
    """The data and the variants of one benchmark run."""

    def __init__(self, data: str, steps: int | None, seed: int, device: str,
                 graph_options: dict[str, Any] | None = None) -> None:
        import torch

        self.device = torch.device(device)
        self.graph_options = graph_options  # torch.compile options of the graph variants (None: graph mode's own)
        self.compile_seconds: dict[str, float] = {}
        self.data, self.steps, self.seed = data, steps, seed
        x, y = mnist_tensors(data, "train")
        self.host = (x.unsqueeze(1).contiguous(), y)
        self.gpu = (self.host[0].to(self.device), y.to(self.device))
        self.folder = tempfile.mkdtemp(prefix="nbcallback-cuda-bench-")

    # ---------------------------------------------------------------- the bare loops

    def bare(self, amp: str = "fp32", batches: Any = None, fused: bool = False) -> Callable[[int | None], float]:
        import torch

        def run(steps: int | None) -> float:
            network, loss_fn, optimizer = self._build(fused)
            source = batches(steps) if batches else DeviceBatches(*self.gpu, self.seed, steps)
            device = self.device
            scaler = torch.amp.GradScaler(device.type) if amp == "fp16" else None
            dtype = torch.bfloat16 if amp == "bf16" else torch.float16
            autocast = (lambda: torch.autocast(device.type, dtype=dtype)) if amp != "fp32" else contextlib.nullcontext
            network.train()
            self.synchronize()
            start = time.perf_counter()
            for images, labels in source:
                images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
                with autocast():
                    loss = loss_fn(network(images), labels)
                optimizer.zero_grad(set_to_none=True)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
            self.synchronize()
            return time.perf_counter() - start

        return run

    # ---------------------------------------------------------------- nbcallback

    def model(self, amp_level: str = "O0", pipeline: bool = False, fused: bool = False,
              prefetch: bool = False, pinned_ahead: bool = False) -> Callable[[int | None], float]:
        ensure_repo_on_path()
        from benchmarks.workloads import _tutorial_callbacks, _tutorial_pipeline
        from nbcallback.train import Model

        def run(steps: int | None) -> float:
            network, loss_fn, optimizer = self._build(fused)
            if pipeline:
                args = argparse.Namespace(data=self.data)
                source = _tutorial_pipeline(args, limit=steps and steps * BATCH_SIZE)
                next(iter(source))  # decode + transforms outside the timed epoch
                if pinned_ahead:
                    source = PinnedAhead(source, self.device)
            else:
                source = DeviceBatches(*self.gpu, self.seed, steps)
            model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"}, amp_level=amp_level,
                          device=self.device, prefetch=prefetch)
            with tempfile.TemporaryDirectory(dir=self.folder) as folder, contextlib.redirect_stdout(io.StringIO()):
                self.synchronize()
                start = time.perf_counter()
                model.train(1, source, callbacks=_tutorial_callbacks(folder))
                self.synchronize()
                return time.perf_counter() - start

        return run

    # ---------------------------------------------------------------- graph mode

    def bare_graph(self) -> Callable[[int | None], float]:
        """The bare loop with its step compiled as graph mode compiles it; built and compiled once."""
        import torch

        ensure_repo_on_path()
        from nbcallback.train.graph import compile_options, uses_cuda_graphs

        options = compile_options(self.device, self.graph_options)
        cuda_graphs = uses_cuda_graphs(self.device, options)
        network, loss_fn, optimizer = self._build(False)

        def step(images: Any, labels: Any) -> Any:
            loss = loss_fn(network(images), labels)
            loss.backward()
            optimizer.step()
            return loss.detach()

        compiled = torch.compile(step, **options)

        def run(steps: int | None) -> float:
            device = self.device
            network.train()
            self.synchronize()
            start = time.perf_counter()
            first = "bare_graph" not in self.compile_seconds
            for images, labels in DeviceBatches(*self.gpu, self.seed, steps):
                images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
                optimizer.zero_grad(set_to_none=True)
                if cuda_graphs:
                    torch.compiler.cudagraph_mark_step_begin()
                compiled(images, labels)
                if first:
                    self.synchronize()
                    self.compile_seconds["bare_graph"] = time.perf_counter() - start
                    first = False
            self.synchronize()
            return time.perf_counter() - start

        return run

    def graph_model(self) -> Callable[[int | None], float]:
        """``Model.train`` in graph mode with the tutorial's callbacks; one Model, so one compilation."""
        ensure_repo_on_path()
        from benchmarks.workloads import _tutorial_callbacks
        from nbcallback.train import Model

        network, loss_fn, optimizer = self._build(False)
        model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"}, device=self.device,
                      graph_mode=self.graph_options or True)

        def run(steps: int | None) -> float:
            source = DeviceBatches(*self.gpu, self.seed, steps)
            with tempfile.TemporaryDirectory(dir=self.folder) as folder, contextlib.redirect_stdout(io.StringIO()):
                self.synchronize()
                start = time.perf_counter()
                model.train(1, source, callbacks=_tutorial_callbacks(folder))
                self.synchronize()
                elapsed = time.perf_counter() - start
            captured = model._graph.captured
            if captured is None or captured.compile_seconds is None:
                raise SystemExit("benchmarks: nbcallback_graph trained eagerly (graph mode fell back; see the "
                                 "GraphModeWarning above), so it measures nothing of graph mode")
            self.compile_seconds.setdefault("nbcallback_graph", captured.compile_seconds)
            return elapsed

        return run

    def lightning(self) -> Callable[[int | None], float]:
        import lightning as L
        import torch

        bench = self

        def run(steps: int | None) -> float:
            network, loss_fn, _ = bench._build(False)
            marks: dict[str, float] = {}

            class Module(L.LightningModule):
                def __init__(self) -> None:
                    super().__init__()
                    self.net = network

                def training_step(self, batch, batch_idx):
                    images, labels = batch
                    loss = loss_fn(self.net(images), labels)
                    self.log("loss", loss, prog_bar=True)
                    return loss

                def configure_optimizers(self):
                    return torch.optim.SGD(self.parameters(), lr=1e-2)

            class Timer(L.Callback):
                def on_train_epoch_start(self, trainer, pl_module) -> None:
                    bench.synchronize()
                    marks["start"] = time.perf_counter()

                def on_train_epoch_end(self, trainer, pl_module) -> None:
                    bench.synchronize()
                    marks["end"] = time.perf_counter()

            accelerator = "gpu" if bench.device.type == "cuda" else "cpu"
            trainer = L.Trainer(max_epochs=1, accelerator=accelerator, devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, callbacks=[Timer()])
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                trainer.fit(Module(), DeviceBatches(*bench.gpu, bench.seed, steps))
            return marks["end"] - marks["start"]

        return run

    def synchronize(self) -> None:
        """Wait for the device's queued work (the edges of every timed epoch)."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _build(self, fused: bool):
        import torch

        network, loss_fn, _ = build(self.seed)
        network.to(self.device)
        optimizer = torch.optim.SGD(network.parameters(), lr=1e-2, fused=fused or None)
        return network, loss_fn, optimizer

    def variants(self, with_lightning: bool) -> dict[str, Callable[[int | None], float]]:
        host = lambda steps: HostBatches(*self.host, self.seed, steps)  # noqa: E731
        found = {
            "bare": self.bare(), "nbcallback": self.model(),
            "bare_bf16": self.bare("bf16"), "nbcallback_bf16": self.model("O2"),
            "bare_fp16": self.bare("fp16"), "nbcallback_fp16": self.model("O1"),
            "nbcallback_fp16_fused": self.model("O1", fused=True),
            "bare_host_batches": self.bare(batches=host), "nbcallback_pipeline": self.model(pipeline=True),
            "nbcallback_pipeline_prefetch": self.model(pipeline=True, prefetch=True),
        }
        if self.device.type == "cuda":  # pinned memory needs CUDA
            found["nbcallback_pipeline_pinned"] = self.model(pipeline=True, pinned_ahead=True)
        if with_lightning:
            found["lightning"] = self.lightning()
        return found

    def graph_variants(self) -> dict[str, Callable[[int | None], float]]:
        """The compiling variants (built lazily: building one compiles nothing until its first run)."""
        return {"bare_graph": self.bare_graph(), "nbcallback_graph": self.graph_model()}


# --------------------------------------------------------------------------- per-step counts


def device_ops(run: Callable[[int | None], float], steps: int) -> int:
    """Kernels and copies the GPU ran during ``run(steps)`` (torch.profiler)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run(steps)
    return sum(1 for event in prof.events() if event.device_type == DeviceType.CUDA)


def host_syncs(run: Callable[[int | None], float], steps: int) -> int:
    """Synchronising calls (``torch.cuda.set_sync_debug_mode('warn')``) during ``run(steps)``."""
    import torch

    if not torch.cuda.is_available():
        run(steps)
        return 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run(steps)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum(1 for warning in caught if "synchroniz" in str(warning.message).lower())


def per_step(count: Callable[[Callable[[int | None], float], int], int], run: Callable[[int | None], float],
             steps: int) -> float:
    """``count`` per ordinary step: the difference between ``2 * steps`` and ``steps`` steps, divided by ``steps``."""
    return (count(run, 2 * steps) - count(run, steps)) / steps


# --------------------------------------------------------------------------- driver


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import importlib.util

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("benchmarks --device cuda: no CUDA device is available here (torch.cuda.is_available() "
                         "is False). Run it on a machine with an NVIDIA GPU, or run the CPU suite without --device.")
    steps = QUICK_STEPS if args.quick else None
    graph_options = {"backend": args.graph_backend} if args.graph_backend else None
    bench = Bench(args.data, steps, args.seed, args.device, graph_options)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    with_lightning = not args.no_peers and importlib.util.find_spec("lightning") is not None
    variants = bench.variants(with_lightning)
    wanted = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else list(variants)
    if args.graph:
        wanted += [name for name in GRAPH_VARIANTS if name not in wanted]
    known = sorted(set(variants) | set(GRAPH_VARIANTS))
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise SystemExit(f"benchmarks --device: unknown variant(s) {unknown}; choose from {known}")
    if any(name in GRAPH_VARIANTS for name in wanted):
        graph_variants = bench.graph_variants()
        variants.update({name: graph_variants[name] for name in GRAPH_VARIANTS if name in wanted})
    variants = {name: variants[name] for name in wanted}
    names = list(variants)
    print(f"{device_name}: warm-up of {len(names)} variants", flush=True)
    for name in names:
        variants[name](steps)
    times: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in REFERENCE if name in variants and REFERENCE[name] in variants}
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        order = names[shift:] + names[:shift]
        this_round = {name: variants[name](steps) for name in order}
        for name, seconds in this_round.items():
            times[name].append(seconds)
        for name in ratios:
            ratios[name].append(this_round[name] / this_round[REFERENCE[name]])
        print(f"round {round_index + 1}/{args.rounds}: " + ", ".join(
            f"{name} {this_round[name] * 1e3:.0f} ms" for name in names), flush=True)

    count_steps = 20 if args.quick else 100
    counted = {
        "bare": bench.bare(), "nbcallback": bench.model(),
        "bare_bf16": bench.bare("bf16"), "nbcallback_bf16": bench.model("O2"),
        "bare_fp16": bench.bare("fp16"), "nbcallback_fp16": bench.model("O1"),
        "bare_fp16_fused": bench.bare("fp16", fused=True), "nbcallback_fp16_fused": bench.model("O1", fused=True),
    }
    counts = {} if args.no_counts else {
        name: {"device_ops": per_step(device_ops, run, count_steps), "host_syncs": per_step(host_syncs, run, count_steps)}
        for name, run in counted.items()
    }
    return {
        "meta": {
            "date": datetime.date.today().isoformat(), "device": device_name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "lightning": _version("lightning") if with_lightning else None,
            "rounds": args.rounds, "steps_per_epoch": len(DeviceBatches(*bench.gpu, 0, steps)),
            "bf16": args.device != "cuda" or torch.cuda.is_bf16_supported(), "count_steps": count_steps,
            "graph_options": graph_options, "compile_seconds": bench.compile_seconds,
        },
        "seconds": {name: summarize(values) for name, values in times.items()},
        "ratios": {name: dict(summarize(values), reference=REFERENCE[name]) for name, values in ratios.items()},
        "targets": {name: {"reference": ref, "target": target, "met": statistics.median(ratios[name]) <= target}
                    for name, (ref, target) in TARGETS.items()
                    if name in ratios and (name not in GRAPH_VARIANTS or args.device == "cuda")},  # a GPU target
        "per_step": counts,
    }


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [f"{meta['device']}, torch {meta['torch']} (CUDA {meta['cuda']}), {meta['rounds']} rounds, "
             f"{meta['steps_per_epoch']} steps per epoch", "",
             "| what | epoch, median [min-max] | x its bare loop, paired median [min-max] | target |",
             "|---|---|---|---|"]
    for name, seconds in result["seconds"].items():
        ratio = result["ratios"].get(name)
        target = result["targets"].get(name)
        cell = (f"{ratio['median']:.3f} [{ratio['min']:.3f}-{ratio['max']:.3f}] vs {ratio['reference']}"
                if ratio else "reference" if name.startswith("bare") else "")
        goal = f"<= {target['target']} {'met' if target['met'] else 'MISSED'}" if target else ""
        lines.append(f"| {name} | {seconds['median'] * 1e3:.0f} ms [{seconds['min'] * 1e3:.0f}-"
                     f"{seconds['max'] * 1e3:.0f}] | {cell} | {goal} |")
    graph = [name for name in GRAPH_VARIANTS if name in result["ratios"]]
    if graph:
        lines.append("")
    for name in graph:
        ratio = result["ratios"][name]
        compiled = meta.get("compile_seconds", {}).get(name)
        lines.append(f"graph mode: {name} trains at {1 / ratio['median']:.2f}x the eager bare loop's speed "
                     f"(paired median; {1 / ratio['max']:.2f}-{1 / ratio['min']:.2f}x)"
                     + (f", first step {compiled:.1f} s (compilation)" if compiled is not None else "")
                     + (" - target >= 5x" if name in result["targets"] else ""))
    if result["per_step"]:
        lines += ["", "| per ordinary step | device operations | host syncs |", "|---|---|---|"]
    for name, count in result["per_step"].items():
        lines.append(f"| {name} | {count['device_ops']:.2f} | {count['host_syncs']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="cuda (default); cpu: a smoke run of this script")
    parser.add_argument("--data", required=True, help="an MNIST_Data folder (train/ and test/ IDX files)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds, each running every variant once (default 7)")
    parser.add_argument("--seed", type=int, default=0, help="model initialisation and shuffling seed")
    parser.add_argument("--quick", action="store_true", help=f"smoke mode: {QUICK_STEPS} steps per epoch, 1 round")
    parser.add_argument("--no-peers", action="store_true", help="leave Lightning out even when installed")
    parser.add_argument("--only", help="comma-separated variants to run (default: all)")
    parser.add_argument("--no-counts", action="store_true", help="skip the per-step operation and sync counts")
    parser.add_argument("--graph", action="store_true",
                        help=f"add the graph-mode variants ({', '.join(GRAPH_VARIANTS)}): each compiles once")
    parser.add_argument("--graph-backend",
                        help="torch.compile backend of the graph variants (default: graph mode's own: inductor, "
                             "with CUDA graphs on CUDA); 'aot_eager' for a quick CPU smoke run")
    parser.add_argument("--json", help="write the results here (default: benchmarks/results/cuda.json; '-' for none)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
    result = measure(args)
    text = report(result)
    print("\n" + text)
    json_path = None if args.json == "-" else Path(args.json) if args.json else RESULTS / "cuda.json"
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=2) + "\n")
        json_path.with_suffix(".md").write_text(text + "\n")
        print(f"\nwrote {json_path} and {json_path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
