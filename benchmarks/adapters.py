"""Benchmark of the Dashboard fed by other loops (issue 46) against tqdm's and livelossplot's adapters for the same
framework, in one notebook kernel (nbclient), on the tutorial's network (784-512-512-10 MLP, batches of 64 of
MNIST-shaped tensors held in memory):

* a plain PyTorch loop: nothing; ``tqdm(loader)``; livelossplot's ``PlotLosses`` as its README uses it (the
  step's ``loss.item()`` summed, ``update`` + ``send`` per epoch); ``with Dashboard(...) as board`` +
  ``board.log(loss=loss)``;
* Lightning: no progress bar; its default ``TQDMProgressBar``; ``LightningDashboard()`` (livelossplot 0.6 has no
  Lightning adapter);
* Keras 3 (torch backend): ``verbose=0``; ``tqdm.keras.TqdmCallback``; livelossplot's ``PlotLossesKeras``;
  ``KerasDashboard()``;
* Hugging Face ``Trainer``: no bar; its tqdm bar; ``TransformersDashboard()`` (livelossplot has no adapter);
* ``Model.train`` with and without ``Dashboard()``: the path the costs must match.

Per run: the wall time, its ratio to the framework's bare run of the same round (the configs of a round in a
rotating order), and for nbcallback's displays the **training thread's share**: the seconds its hooks took on the
training thread while live (``view().display_seconds`` minus the end of run, ``final_seconds``) over the
run's wall time; target <= 0.6 %, as for ``Model`` (benchmarks/widgets.py).  The share is measured by the
display itself; tqdm and livelossplot have no such measure, so only their wall ratios are shown (on a shared
machine the ratios' spread is larger than the display's cost).

Run:  python benchmarks/adapters.py [--reps 2] [--steps 250] [--epochs 2] [--md PATH] [--json PATH]
      (default output: benchmarks/results/adapters.json and adapters.md)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FRAMEWORKS = {
    "plain": ("bare", "tqdm", "livelossplot", "nbcallback"),
    "lightning": ("bare", "tqdm", "nbcallback"),
    "keras": ("bare", "tqdm", "livelossplot", "nbcallback"),
    "transformers": ("bare", "tqdm", "nbcallback"),
    "model": ("bare", "nbcallback"),
}

SETUP = '''\
import os
os.environ["KERAS_BACKEND"] = "torch"
import json, time, warnings
import torch
from torch import nn
torch.set_num_threads(1)
warnings.filterwarnings("ignore")
from nbcallback.tutorial import Network
from nbcallback.widgets import Dashboard
STEPS, EPOCHS = {steps}, {epochs}
generator = torch.Generator().manual_seed(0)
X = torch.randn(STEPS * 64, 1, 28, 28, generator=generator)
Y = torch.randint(0, 10, (STEPS * 64,), generator=generator)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64)
RESULTS = []


def share(board, wall):
    view = board.view()
    return max(0.0, view.display_seconds - board.final_seconds) / wall


def note(framework, config, round_, wall, board=None):
    RESULTS.append(dict(framework=framework, config=config, round=round_, wall=wall,
                        share=share(board, wall) if board is not None else None))


def plain(config, round_):
    torch.manual_seed(0)
    net = Network()
    opt = torch.optim.SGD(net.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    board = None
    started = time.perf_counter()
    if config == "nbcallback":
        with Dashboard(epochs=EPOCHS, steps_per_epoch=len(loader), optimizer=opt) as board:
            for epoch in range(EPOCHS):
                for x, y in loader:
                    loss = loss_fn(net(x), y)
                    opt.zero_grad(); loss.backward(); opt.step()
                    board.log(loss=loss)
    elif config == "livelossplot":
        from livelossplot import PlotLosses
        liveloss = PlotLosses()
        for epoch in range(EPOCHS):
            running = 0.0
            for x, y in loader:
                loss = loss_fn(net(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
                running += loss.item()
            liveloss.update({{"loss": running / len(loader)}})
            liveloss.send()
    else:
        from tqdm.auto import tqdm
        for epoch in range(EPOCHS):
            for x, y in (tqdm(loader) if config == "tqdm" else loader):
                loss = loss_fn(net(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
    note("plain", config, round_, time.perf_counter() - started, board)


def lightning(config, round_):
    import lightning as L
    from nbcallback.integrations import LightningDashboard

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Network()
        def training_step(self, batch, index):
            return nn.functional.cross_entropy(self.net(batch[0]), batch[1])
        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-2)

    torch.manual_seed(0)
    callbacks = [LightningDashboard()] if config == "nbcallback" else []
    trainer = L.Trainer(max_epochs=EPOCHS, callbacks=callbacks, enable_progress_bar=config == "tqdm", logger=False,
                        enable_checkpointing=False, enable_model_summary=False)
    started = time.perf_counter()
    trainer.fit(Module(), loader)
    note("lightning", config, round_, time.perf_counter() - started, callbacks[0].board if callbacks else None)


def keras_(config, round_):
    import keras
    from nbcallback.integrations import KerasDashboard
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((1, 28, 28)), keras.layers.Flatten(), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callbacks = []
    if config == "tqdm":
        from tqdm.keras import TqdmCallback
        callbacks = [TqdmCallback(verbose=0)]
    elif config == "livelossplot":
        from livelossplot import PlotLossesKeras
        callbacks = [PlotLossesKeras()]
    elif config == "nbcallback":
        callbacks = [KerasDashboard()]
    started = time.perf_counter()
    model.fit(X.numpy(), Y.numpy(), epochs=EPOCHS, batch_size=64, callbacks=callbacks, verbose=0)
    note("keras", config, round_, time.perf_counter() - started,
         callbacks[0].board if config == "nbcallback" else None)


def transformers_(config, round_):
    import transformers
    from nbcallback.integrations import TransformersDashboard

    class Rows(torch.utils.data.Dataset):
        def __len__(self): return len(X)
        def __getitem__(self, i): return {{"x": X[i], "labels": Y[i]}}

    class Net(nn.Module):
        def __init__(self):
            super().__init__(); self.net = Network()
        def forward(self, x, labels=None):
            out = self.net(x); return {{"loss": nn.functional.cross_entropy(out, labels), "logits": out}}

    torch.manual_seed(0)
    args = transformers.TrainingArguments("hf-bench", num_train_epochs=EPOCHS, per_device_train_batch_size=64,
                                          logging_steps=50, save_strategy="no", report_to=[], use_cpu=True,
                                          disable_tqdm=config != "tqdm", learning_rate=1e-2, optim="sgd",
                                          lr_scheduler_type="constant", dataloader_num_workers=0)
    callbacks = [TransformersDashboard()] if config == "nbcallback" else []
    trainer = transformers.Trainer(model=Net(), args=args, train_dataset=Rows(), callbacks=callbacks)
    trainer.remove_callback(transformers.trainer_callback.PrinterCallback)
    started = time.perf_counter()
    trainer.train()
    note("transformers", config, round_, time.perf_counter() - started, callbacks[0].board if callbacks else None)


def model(config, round_):
    from nbcallback.tutorial import new_trainer
    trainer = new_trainer()
    data = list(loader)
    board = Dashboard() if config == "nbcallback" else None
    started = time.perf_counter()
    trainer.train(EPOCHS, data, callbacks=[board] if board else None)
    note("model", config, round_, time.perf_counter() - started, board)


RUN = {{"plain": plain, "lightning": lightning, "keras": keras_, "transformers": transformers_, "model": model}}
'''


def build_cells(reps: int) -> list[str]:
    cells = []
    for framework, configs in FRAMEWORKS.items():  # warm-up round: imports, first figures, caches (not kept)
        cells.append("\n".join(f"RUN[{framework!r}]({config!r}, -1)" for config in configs))
    for rep in range(reps):
        for framework, configs in FRAMEWORKS.items():
            shift = rep % len(configs)
            order = configs[shift:] + configs[:shift]
            cells += [f"RUN[{framework!r}]({config!r}, {rep})" for config in order]
    cells.append("print('RESULTS=' + json.dumps([r for r in RESULTS if r['round'] >= 0]))")
    return cells


def summarize(runs: list[dict]) -> dict:
    out: dict = {}
    for framework, configs in FRAMEWORKS.items():
        bare = {r["round"]: r["wall"] for r in runs if r["framework"] == framework and r["config"] == "bare"}
        for config in configs:
            mine = [r for r in runs if r["framework"] == framework and r["config"] == config]
            ratios = [r["wall"] / bare[r["round"]] for r in mine if r["round"] in bare]
            shares = [r["share"] for r in mine if r["share"] is not None]
            out[f"{framework}/{config}"] = {
                "wall_s": statistics.median(r["wall"] for r in mine),
                "ratio_to_bare": statistics.median(ratios) if ratios else None,
                "ratios": ratios,
                "share": statistics.median(shares) if shares else None,
                "share_max": max(shares) if shares else None,
            }
    return out


def table(summary: dict, meta: dict) -> str:
    names = {"bare": "no display", "tqdm": "tqdm", "livelossplot": "livelossplot", "nbcallback": "nbcallback"}
    lines = [
        "# The Dashboard in other loops (`python benchmarks/adapters.py`)",
        "",
        f"{meta['steps']} steps of 64 x {meta['epochs']} epochs of the tutorial MLP per run, in one ipykernel, "
        f"{meta['reps']} rounds (the configs of a round in rotating order, one warm-up round not kept); "
        f"{meta['machine']}, torch {meta['torch']}, 1 thread, {meta['date']}. Load average (1 min) "
        f"{meta['load_start']:.1f} at the start, {meta['load_end']:.1f} at the end.",
        "",
        "| loop | display | wall, median | wall ratio to no display (each round) | training thread's share (<= 0.6 %) |",
        "|---|---|---|---|---|",
    ]
    for key, row in summary.items():
        framework, config = key.split("/")
        ratios = ", ".join(f"{r:.3f}" for r in row["ratios"])
        share = "–" if row["share"] is None else (
            f"{100 * row['share']:.2f} % (max {100 * row['share_max']:.2f} %) "
            + ("ok" if row["share_max"] <= 0.006 else "OVER"))
        ratio = "–" if row["ratio_to_bare"] is None else f"{row['ratio_to_bare']:.3f}"
        lines.append(f"| {framework} | {names[config]} | {row['wall_s']:.2f} s | {ratio} [{ratios}] | {share} |")
    lines += [
        "",
        "The share is what the display's hooks took on the training thread while the run was live, measured by the "
        "display itself (the end of the run, its record, snapshot and PNG, is left out as in "
        "`benchmarks/widgets.py`). tqdm and livelossplot have no such measure: their column is their wall ratio only. "
        "livelossplot's plain-loop "
        "pattern reads `loss.item()` every step (a host synchronisation per step on a GPU); `board.log(loss=loss)` "
        "keeps the tensor and reads the kept losses once per refresh (tests/widgets/test_loop_feed.py counts it). "
        "Keras hands callbacks numbers it has already read itself; Hugging Face's Trainer logs a loss only every "
        "`logging_steps` (50 here).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "adapters.json"))
    parser.add_argument("--md", default=str(REPO / "benchmarks" / "results" / "adapters.md"))
    args = parser.parse_args()

    import nbformat
    import torch

    from tests.widgets._kernel import make_notebook, run_notebook

    load_start = os.getloadavg()[0]
    setup = SETUP.format(steps=args.steps, epochs=args.epochs)
    nb = make_notebook([setup] + build_cells(args.reps), setup=False)
    with tempfile.TemporaryDirectory() as tmp:
        _client, path = run_notebook(nb, Path(tmp), timeout=3600)
        saved = nbformat.read(path, as_version=4)
    text = "".join(o.get("text", "") for o in saved.cells[-1].outputs if o.get("output_type") == "stream")
    runs = json.loads(text.split("RESULTS=", 1)[1])
    meta = {"steps": args.steps, "epochs": args.epochs, "reps": args.reps, "torch": torch.__version__,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
            "date": time.strftime("%Y-%m-%d"), "load_start": load_start, "load_end": os.getloadavg()[0]}
    summary = summarize(runs)
    Path(args.json).write_text(json.dumps({"meta": meta, "runs": runs, "summary": summary}, indent=1) + "\n")
    Path(args.md).write_text(table(summary, meta))
    print(table(summary, meta))


if __name__ == "__main__":
    main()
