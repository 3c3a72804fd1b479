"""What one fresh benchmark process measures: ``python -m benchmarks.workloads VARIANT --data DIR --out FILE``.

Every variant pins torch's threads (``--threads``, default 1) right after
``import torch``, prepares its data outside the timed part, and writes one
JSON object to ``--out`` whose ``value`` is the measured figure (seconds unless
``unit`` says otherwise). The driver (:mod:`benchmarks.run`) alternates
variants and computes the ratios.

Training variants time one epoch of the baseline workload (938 steps of 64,
see :mod:`benchmarks._common`) from the first batch to the end of the last
step (bare loop) or around the whole ``fit``/``train`` call (nbcallback), or
between the epoch-begin and epoch-end callbacks (Lightning, Keras), as
``perf-baseline.md`` did. They also record a timestamp per step (one list
append) for the contention-robust 10th-percentile step time, and the test
accuracy after the epoch as a sanity check that every variant did the same work.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    BATCH_SIZE,
    EvalBatches,
    GatherBatches,
    bare_epochs,
    build,
    ensure_repo_on_path,
    make_network,
    eval_accuracy,
    mnist_tensors,
    pin_threads,
    step_stats,
)

VARIANTS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {}
QUICK_STEPS = 60  # training steps per epoch with --quick


def variant(name: str):
    def register(func):
        VARIANTS[name] = func
        return func

    return register


def _steps(args: argparse.Namespace) -> int | None:
    return QUICK_STEPS if args.quick else None


def _train_result(seconds: float, cpu: float, stamps: list[float], network, test, **extra: Any) -> dict[str, Any]:
    result = {"value": seconds, "unit": "s", "cpu_seconds": cpu, "steps": len(stamps)}
    result.update(step_stats(stamps))
    result["test_accuracy"] = eval_accuracy(network, *test)
    result.update(extra)
    return result


# --------------------------------------------------------------------------- training: the references


def _bare_loop(args: argparse.Namespace, autocast: bool = False) -> dict[str, Any]:
    import torch

    x, y = mnist_tensors(args.data, "train")
    test = mnist_tensors(args.data, "test")
    network, loss_fn, optimizer = build(args.seed)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(args.seed))
    steps = _steps(args) or (len(y) + BATCH_SIZE - 1) // BATCH_SIZE
    context = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if autocast else contextlib.nullcontext
    network.train()
    stamps: list[float] = []
    stamp = stamps.append
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(0, steps * BATCH_SIZE, BATCH_SIZE):
        idx = perm[i:i + BATCH_SIZE]
        xb, yb = x[idx], y[idx]
        with context():
            loss = loss_fn(network(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stamp(time.perf_counter())
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return _train_result(seconds, cpu, stamps, network, test, final_loss=float(loss.detach()),
                         first_step_ms=1e3 * (stamps[0] - start))


@variant("bare")
def bare(args: argparse.Namespace) -> dict[str, Any]:
    """The bare PyTorch loop of perf-baseline.md §2 (the reference)."""
    return _bare_loop(args)


@variant("bare_amp")
def bare_amp(args: argparse.Namespace) -> dict[str, Any]:
    """The bare loop under ``torch.autocast('cpu', bfloat16)`` (what amp_level O1/O2 does on a CPU)."""
    return _bare_loop(args, autocast=True)


# --------------------------------------------------------------------------- training: nbcallback


def _stamp_callback():
    from nbcallback.train import Callback

    class Stamp(Callback):
        """Step-end timestamps: the same one list append per step as the bare loop."""

        def __init__(self) -> None:
            self.stamps: list[float] = []
            self.on_train_step_end = self._step_end  # bound once: no extra dispatch layer

        def _step_end(self, run_context) -> None:
            self.stamps.append(time.perf_counter())

    return Stamp()


def _tutorial_callbacks(folder: str) -> list:
    from nbcallback.train import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    return [LossMonitor(300), TimeMonitor(), ModelCheckpoint(prefix="mnist", directory=folder, config=config)]


def _model_train(args: argparse.Namespace, amp_level: str = "O0", extra_callbacks: Callable[[], list] | None = None,
                 tutorial_callbacks: bool = True, dataset: str = "gather", **model_kwargs: Any) -> dict[str, Any]:
    ensure_repo_on_path()
    import torch  # noqa: F401

    from nbcallback.train import Model

    x, y = mnist_tensors(args.data, "train")
    test = mnist_tensors(args.data, "test")
    network, loss_fn, optimizer = build(args.seed)
    extra: dict[str, Any] = {}
    if dataset == "pipeline":
        steps = _steps(args)
        batches = _tutorial_pipeline(args, limit=steps and steps * BATCH_SIZE)
        started = time.perf_counter()
        next(iter(batches))  # decode + transforms happen here, outside the timed epoch
        extra["pipeline_build_s"] = time.perf_counter() - started
    else:
        batches = GatherBatches(x, y, args.seed, limit=_steps(args))
    started = time.perf_counter()
    model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"}, amp_level=amp_level,
                  **model_kwargs)
    extra["model_construction_s"] = time.perf_counter() - started
    stamper = _stamp_callback()
    printed = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="nbcallback-bench-") as folder:
        callbacks = _tutorial_callbacks(folder) if tutorial_callbacks else []
        callbacks += extra_callbacks() if extra_callbacks else []
        callbacks.append(stamper)
        tee = _Tee(sys.stdout, printed)
        with contextlib.redirect_stdout(tee):  # printed lines still reach the real stdout (a pipe/pty)
            start, cpu_start = time.perf_counter(), time.process_time()
            model.train(1, batches, callbacks=callbacks)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        extra["files"] = sorted(os.listdir(folder))
    stamps = stamper.stamps
    if stamps:
        extra["first_step_ms"] = 1e3 * (stamps[0] - start)  # train() entry to the end of step 1
        extra["tail_ms"] = 1e3 * (start + seconds - stamps[-1])  # last step end to train() return
    extra["printed"] = printed.getvalue().splitlines()[:12]
    return _train_result(seconds, cpu, stamps, network, test, **extra)


class _Tee(io.TextIOBase):
    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@variant("nbcallback")
def nbcallback_train(args: argparse.Namespace) -> dict[str, Any]:
    """``Model.train`` with LossMonitor(300) + TimeMonitor + ModelCheckpoint (tutorial settings), same batches as bare."""
    return _model_train(args)


@variant("nbcallback_pipeline")
def nbcallback_pipeline(args: argparse.Namespace) -> dict[str, Any]:
    """The tutorial as written: ``Model.train`` over ``MnistDataset -> map -> batch(64)``."""
    return _model_train(args, dataset="pipeline")


@variant("nbcallback_amp")
def nbcallback_amp(args: argparse.Namespace) -> dict[str, Any]:
    """``Model(..., amp_level='O2')``: bfloat16 autocast on a CPU (O1 is the same on a CPU)."""
    return _model_train(args, amp_level="O2")


@variant("nbcallback_compile")
def nbcallback_compile(args: argparse.Namespace) -> dict[str, Any]:
    """``Model(..., compile=True)`` (torch.compile of the network; compile time is inside the epoch)."""
    return _model_train(args, compile=True)


# --------------------------------------------------------------------------- training: the peers


@variant("lightning")
def lightning(args: argparse.Namespace) -> dict[str, Any]:
    """Lightning 2.x: LightningModule + Trainer(max_epochs=1), no progress bar, DataLoader(TensorDataset, shuffle)."""
    import torch
    import lightning as L
    from torch.utils.data import DataLoader, TensorDataset

    x, y = mnist_tensors(args.data, "train")
    test = mnist_tensors(args.data, "test")
    if args.quick:
        x, y = x[:QUICK_STEPS * BATCH_SIZE], y[:QUICK_STEPS * BATCH_SIZE]
    network, loss_fn, _ = build(args.seed)

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = network

        def forward(self, inputs):
            return self.net(inputs)

        def training_step(self, batch, batch_idx):
            inputs, labels = batch
            loss = loss_fn(self.net(inputs), labels)
            self.log("loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-2)

    marks: dict[str, float] = {}
    stamps: list[float] = []

    class Timer(L.Callback):
        def on_train_epoch_start(self, trainer, pl_module) -> None:
            marks["start"], marks["cpu"] = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            stamps.append(time.perf_counter())

        def on_train_epoch_end(self, trainer, pl_module) -> None:
            marks["end"], marks["cpu_end"] = time.perf_counter(), time.process_time()

    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH_SIZE, shuffle=True,
                        generator=torch.Generator().manual_seed(args.seed))
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, callbacks=[Timer()])
    trainer.fit(Module(), loader)
    pin_threads(args.threads)  # in case Lightning changed it (it does not on a CPU; recorded below)
    return _train_result(marks["end"] - marks["start"], marks["cpu_end"] - marks["cpu"], stamps, network, test,
                         version=L.__version__)


@variant("keras")
def keras_fit(args: argparse.Namespace) -> dict[str, Any]:
    """Keras 3 (KERAS_BACKEND=torch): the same MLP with torch's init law, fit(batch_size=64, shuffle=True, verbose=0)."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import math

    import keras

    pin_threads(args.threads)
    x, y = mnist_tensors(args.data, "train")
    test = mnist_tensors(args.data, "test")
    if args.quick:
        x, y = x[:QUICK_STEPS * BATCH_SIZE], y[:QUICK_STEPS * BATCH_SIZE]
    keras.utils.set_random_seed(args.seed)

    def dense(units: int, fan_in: int, activation: str | None = None):
        bound = 1 / math.sqrt(fan_in)
        return keras.layers.Dense(
            units, activation=activation,
            kernel_initializer=keras.initializers.VarianceScaling(1 / 3, "fan_in", "uniform"),
            bias_initializer=keras.initializers.RandomUniform(-bound, bound),
        )

    model = keras.Sequential([
        keras.Input((28, 28)), keras.layers.Flatten(),
        dense(512, 784, "relu"), dense(512, 512, "relu"), dense(10, 512),
    ])
    model.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    marks: dict[str, float] = {}
    stamps: list[float] = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None) -> None:
            marks["start"], marks["cpu"] = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, batch, logs=None) -> None:
            stamps.append(time.perf_counter())

        def on_epoch_end(self, epoch, logs=None) -> None:
            marks["end"], marks["cpu_end"] = time.perf_counter(), time.process_time()

    model.fit(x.numpy(), y.numpy(), batch_size=BATCH_SIZE, epochs=1, shuffle=True, verbose=0, callbacks=[Timer()])
    xt, yt = test
    logits = model.predict(xt.numpy(), batch_size=BATCH_SIZE, verbose=0)
    accuracy = float((logits.argmax(1) == yt.numpy()).mean())
    result = {"value": marks["end"] - marks["start"], "unit": "s", "cpu_seconds": marks["cpu_end"] - marks["cpu"],
              "steps": len(stamps), "test_accuracy": accuracy, "version": keras.__version__,
              "jit_compile": getattr(model, "jit_compile", None)}
    result.update(step_stats(stamps))
    return result


# --------------------------------------------------------------------------- input pipeline


def _tutorial_pipeline(args: argparse.Namespace, limit: int | None = None):
    ensure_repo_on_path()
    import torch

    from nbcallback.dataset import MnistDataset, transforms, vision

    dataset = MnistDataset(str(Path(args.data) / "train"), num_samples=limit)
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.1307,), std=(0.3081,)),
                           vision.HWC2CHW()], "image")
    dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
    return dataset.batch(BATCH_SIZE)


def _epochs(args: argparse.Namespace) -> int:
    return 3 if args.quick else 15


@variant("pipeline_bare")
def pipeline_bare(args: argparse.Namespace) -> dict[str, Any]:
    """One epoch of plain tensor slicing: ``idx = perm[i:i+64]; x[idx], y[idx]`` over normalised tensors.

    Median of ``15`` epochs in this process. ``index_select_s``: the same with
    ``torch.index_select`` (what the pipeline uses), timed alternately.
    """
    import torch

    x, y = mnist_tensors(args.data, "train")
    x = x.unsqueeze(1).contiguous()  # (N, 1, 28, 28), the pipeline's HWC2CHW layout
    n = len(y)

    def indexing() -> None:
        perm = torch.randperm(n)
        for i in range(0, n, BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            x[idx], y[idx]

    def index_select() -> None:
        perm = torch.randperm(n)
        for i in range(0, n, BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            torch.index_select(x, 0, idx), torch.index_select(y, 0, idx)

    times: dict[str, list[float]] = {"indexing": [], "index_select": []}
    for _ in range(_epochs(args)):
        for name, loop in (("indexing", indexing), ("index_select", index_select)):
            started = time.perf_counter()
            loop()
            times[name].append(time.perf_counter() - started)
    return {"value": statistics.median(times["indexing"]), "unit": "s",
            "index_select_s": statistics.median(times["index_select"]), "epochs": times}


@variant("pipeline")
def pipeline(args: argparse.Namespace) -> dict[str, Any]:
    """The tutorial pipeline ``MnistDataset -> map(Rescale, Normalize, HWC2CHW) -> map(TypeCast) -> batch(64)``.

    ``build_s``: creating it plus its first batch (IDX read, decode, the column
    transforms over all 60,000 images), first thing in this fresh process after
    the imports. ``value``: median epoch of 938 batches over ``15`` epochs.
    """
    ensure_repo_on_path()
    import torch  # noqa: F401

    import nbcallback.dataset  # noqa: F401  (imports are not part of the build)

    started = time.perf_counter()
    dataset = _tutorial_pipeline(args)
    next(iter(dataset))
    build_s = time.perf_counter() - started
    times = []
    steps = 0
    for _ in range(_epochs(args)):
        started = time.perf_counter()
        steps = 0
        for _images, _labels in dataset:
            steps += 1
        times.append(time.perf_counter() - started)
    return {"value": statistics.median(times), "unit": "s", "build_s": build_s, "steps": steps, "epochs": times}


# --------------------------------------------------------------------------- widgets


def _widget_callbacks(mode: str) -> Callable[[], list]:
    def make() -> list:
        from nbcallback.widgets import LiveLossPlot, ProgressBar

        return [ProgressBar(display=mode), LiveLossPlot(display=mode)]

    return make


@variant("widgets_none")
def widgets_none(args: argparse.Namespace) -> dict[str, Any]:
    """``Model.train`` (no callbacks besides the step timestamps): the reference of the widget comparison."""
    return _model_train(args, tutorial_callbacks=False)


@variant("widgets_text")
def widgets_text(args: argparse.Namespace) -> dict[str, Any]:
    """The same with ``ProgressBar(display='text')`` + ``LiveLossPlot(display='text')`` (log lines on a pipe)."""
    return _model_train(args, tutorial_callbacks=False, extra_callbacks=_widget_callbacks("text"))


@variant("widgets_off")
def widgets_off(args: argparse.Namespace) -> dict[str, Any]:
    """The same with ``ProgressBar(display='off')`` + ``LiveLossPlot(display='off')`` (state kept, nothing drawn)."""
    return _model_train(args, tutorial_callbacks=False, extra_callbacks=_widget_callbacks("off"))


# --------------------------------------------------------------------------- CallbackProfiler


@variant("profiler_off")
def profiler_off(args: argparse.Namespace) -> dict[str, Any]:
    """``Model.train`` with the tutorial's three callbacks: the reference of the profiler comparison."""
    return _model_train(args)


@variant("profiler_on")
def profiler_on(args: argparse.Namespace) -> dict[str, Any]:
    """The same with a ``CallbackProfiler`` in the list (its table is kept in the result)."""
    profilers: list = []

    def make() -> list:
        from nbcallback.train import CallbackProfiler

        profilers.append(CallbackProfiler())
        return profilers[-1:]

    result = _model_train(args, extra_callbacks=make)
    result["profile"] = str(profilers[0]).splitlines()
    return result


# --------------------------------------------------------------------------- evaluation


def _eval_repeats(args: argparse.Namespace) -> int:
    return 3 if args.quick else 7


@variant("eval_bare")
def eval_bare(args: argparse.Namespace) -> dict[str, Any]:
    return _eval_bare(args, with_loss=False)


@variant("eval_bare_loss")
def eval_bare_loss(args: argparse.Namespace) -> dict[str, Any]:
    """The same bare loop also computing the mean test loss (what ``Model.fit`` reports as ``eval_loss``)."""
    return _eval_bare(args, with_loss=True)


def _timed_eval_passes(args: argparse.Namespace, make_evaluate: Callable[..., Callable[[Any], dict[str, Any]]]
                       ) -> dict[str, Any]:
    """Per repeat: 2 plain training steps, then one timed ``evaluate(batches)``.

    ``make_evaluate(network, loss_fn, optimizer)`` builds ``evaluate`` once,
    outside the timed passes.

    The training steps are there so every side evaluates in the same state
    (same data loaded, same weights touched by SGD), as ``eval_nbcallback``
    does inside ``Model.fit``.  Median of 7 passes; the last pass's results
    are returned with it.
    """
    x, y = mnist_tensors(args.data, "train")
    images, labels = mnist_tensors(args.data, "test")
    network, loss_fn, optimizer = build(args.seed)
    train = GatherBatches(x, y, args.seed, limit=2)
    batches = EvalBatches(images, labels)
    evaluate = make_evaluate(network, loss_fn, optimizer)
    times, results = [], {}
    for _ in range(_eval_repeats(args)):
        bare_epochs(network, loss_fn, optimizer, train, 1)
        started = time.perf_counter()
        results = evaluate(batches)
        times.append(time.perf_counter() - started)
    return {"value": statistics.median(times), "unit": "s", "passes": times, **results}


def _eval_bare(args: argparse.Namespace, with_loss: bool) -> dict[str, Any]:
    """The bare loop: accuracy (and the mean loss) over the 10,000 test images.

    Batches of 64 under ``torch.no_grad()`` with ``network.eval()``, timed by
    :func:`_timed_eval_passes`.
    """
    import torch

    def make_evaluate(network, loss_fn, _optimizer):
        def evaluate(batches) -> dict[str, Any]:
            network.eval()
            correct = torch.zeros((), dtype=torch.int64)
            total_loss = torch.zeros(())
            with torch.no_grad():
                if with_loss:
                    for xb, yb in batches:
                        logits = network(xb)
                        total_loss += loss_fn(logits, yb)
                        correct += (logits.argmax(1) == yb).sum()
                else:
                    for xb, yb in batches:
                        correct += (network(xb).argmax(1) == yb).sum()
            return {"accuracy": float(correct) / len(batches.labels),
                    "eval_loss": float(total_loss) / len(batches) if with_loss else None}

        return evaluate

    return _timed_eval_passes(args, make_evaluate)


@variant("eval_nbcallback")
def eval_nbcallback(args: argparse.Namespace) -> dict[str, Any]:
    """``Model.fit`` validating every epoch: the time from the last training step to ``on_train_epoch_end``.

    That span is exactly fit's evaluation of the 10,000 test images (metrics
    ``{'accuracy'}`` plus the mean ``eval_loss`` fit reports). Two training
    steps per epoch, 7 epochs, median. ``model_eval_s``: ``Model.eval`` alone.
    """
    ensure_repo_on_path()
    from nbcallback.train import Callback, Model

    x, y = mnist_tensors(args.data, "train")
    images, labels = mnist_tensors(args.data, "test")
    network, loss_fn, optimizer = build(args.seed)
    model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})
    spans: list[float] = []

    class EvalSpan(Callback):
        def on_train_step_end(self, run_context) -> None:
            self.last = time.perf_counter()

        def on_train_epoch_end(self, run_context) -> None:
            spans.append(time.perf_counter() - self.last)

    repeats = _eval_repeats(args)
    model.fit(repeats, GatherBatches(x, y, args.seed, limit=2), EvalBatches(images, labels), callbacks=[EvalSpan()])
    eval_times = []
    result = {}
    for _ in range(repeats):
        started = time.perf_counter()
        result = model.eval(EvalBatches(images, labels))
        eval_times.append(time.perf_counter() - started)
    return {"value": statistics.median(spans), "unit": "s", "passes": spans,
            "model_eval_s": statistics.median(eval_times), "accuracy": result.get("accuracy")}


@variant("eval_model")
def eval_model(args: argparse.Namespace) -> dict[str, Any]:
    """``Model.eval`` (metrics ``{'accuracy'}``) of the 10,000 test images: the same work as ``eval_bare``."""
    ensure_repo_on_path()
    from nbcallback.train import Model

    def make_evaluate(network, loss_fn, optimizer):
        model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})
        return lambda batches: {"accuracy": model.eval(batches)["accuracy"]}

    return _timed_eval_passes(args, make_evaluate)


# --------------------------------------------------------------------------- imports

_HEAVY = ("matplotlib", "ipywidgets", "IPython", "tensorboard", "torch.utils.tensorboard", "PIL", "torch._dynamo",
          "lightning", "keras", "pandas", "scipy")


@variant("import_torch")
def import_torch(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds to ``import torch`` (the reference of the import comparison)."""
    started = time.perf_counter()
    import torch  # noqa: F401

    return {"value": time.perf_counter() - started, "unit": "s"}


@variant("import_nbcallback")
def import_nbcallback(args: argparse.Namespace) -> dict[str, Any]:
    """``import torch`` then what the tutorial imports: ``nbcallback``, ``nbcallback.train``, ``nbcallback.dataset``.

    ``value``: the total; ``nbcallback_s``: the part after torch. ``heavy``:
    optional heavy modules that got imported (must be none of matplotlib,
    ipywidgets, IPython, tensorboard).
    """
    ensure_repo_on_path()
    started = time.perf_counter()
    import torch  # noqa: F401

    after_torch = time.perf_counter()
    import nbcallback  # noqa: F401

    after_top = time.perf_counter()
    import nbcallback.dataset  # noqa: F401
    import nbcallback.train  # noqa: F401
    import nbcallback.widgets  # noqa: F401

    done = time.perf_counter()
    return {"value": done - started, "unit": "s", "torch_s": after_torch - started, "nbcallback_s": done - after_torch,
            "nbcallback_top_s": after_top - after_torch,
            "heavy": [name for name in _HEAVY if name in sys.modules]}


# --------------------------------------------------------------------------- checkpoints


@variant("checkpoint")
def checkpoint(args: argparse.Namespace) -> dict[str, Any]:
    """``save_checkpoint(cb_params.train_network)`` of the tutorial network (2.1 MB, fsync'd, atomic rename).

    ``value``: median of 15 synchronous saves (ms). ``async_call_ms``: what an
    ``async_save=True`` call blocks the caller for (the snapshot). ``stall_*``:
    ``Model.train`` with ``ModelCheckpoint(save_checkpoint_steps=50)``: the
    duration of each saving step minus the median step, i.e. how long a save
    stalls the training loop.
    """
    ensure_repo_on_path()
    from nbcallback.train import CheckpointConfig, Model, ModelCheckpoint, save_checkpoint
    from nbcallback.train.serialization import wait_for_async_saves

    x, y = mnist_tensors(args.data, "train")
    network, loss_fn, optimizer = build(args.seed)
    model = Model(network, loss_fn=loss_fn, optimizer=optimizer)
    model.train(1, GatherBatches(x, y, args.seed, limit=2))
    repeats = 5 if args.quick else 15
    with tempfile.TemporaryDirectory(prefix="nbcallback-bench-ckpt-") as folder:
        path = os.path.join(folder, "mnist-1_938.ckpt")
        save_checkpoint(model.train_network, path)  # warm-up (first torch.save in the process)
        size = os.path.getsize(path)
        sync_ms = []
        for _ in range(repeats):
            started = time.perf_counter()
            save_checkpoint(model.train_network, path)
            sync_ms.append(1e3 * (time.perf_counter() - started))
        async_ms, async_total_ms = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            save_checkpoint(model.train_network, path, async_save=True)
            async_ms.append(1e3 * (time.perf_counter() - started))
            wait_for_async_saves()
            async_total_ms.append(1e3 * (time.perf_counter() - started))
        stamper = _stamp_callback()
        every = 50
        steps = 300 if not args.quick else 120
        config = CheckpointConfig(save_checkpoint_steps=every, keep_checkpoint_max=3)
        model.train(1, GatherBatches(x, y, args.seed, limit=steps),
                    callbacks=[ModelCheckpoint(prefix="stall", directory=folder, config=config), stamper])
        durations = [b - a for a, b in zip(stamper.stamps, stamper.stamps[1:])]
        # durations[k] is step k+2 (1-based); step s saves when s % every == 0 (the first step also writes the graph)
        saving = [durations[s - 2] for s in range(every, steps + 1, every) if s - 2 < len(durations)]
        plain = statistics.median(durations)
        stalls = [1e3 * (d - plain) for d in saving]
    return {"value": statistics.median(sync_ms), "unit": "ms", "sync_ms": sync_ms, "max_ms": max(sync_ms),
            "file_bytes": size, "async_call_ms": statistics.median(async_ms),
            "async_total_ms": statistics.median(async_total_ms), "stall_median_ms": statistics.median(stalls),
            "stall_max_ms": max(stalls), "step_median_ms": 1e3 * plain}


# --------------------------------------------------------------------------- one-time costs


@variant("coldstart")
def coldstart(args: argparse.Namespace) -> dict[str, Any]:
    """First-call costs, each measured once in this fresh process, in the order a notebook meets them.

    ``value`` is the sum of the one-time costs that are paid *before*
    ``Model.train`` starts; the first training step and the graph file are
    reported separately (they are inside the first timed epoch, for the bare
    loop as well as for nbcallback).
    """
    costs: dict[str, float] = {}
    started = time.perf_counter()
    import torch

    costs["import_torch_s"] = time.perf_counter() - started
    pin_threads(args.threads)
    ensure_repo_on_path()
    started = time.perf_counter()
    from nbcallback.train import Model

    costs["import_nbcallback_train_s"] = time.perf_counter() - started
    x, y = mnist_tensors(args.data, "train")
    torch.manual_seed(args.seed)
    network, loss_fn = make_network(), torch.nn.CrossEntropyLoss()
    started = time.perf_counter()
    dynamo_before = "torch._dynamo" in sys.modules
    optimizer = torch.optim.SGD(network.parameters(), lr=1e-2)
    costs["first_sgd_construction_s"] = time.perf_counter() - started
    costs["first_sgd_imported_dynamo"] = float(not dynamo_before and "torch._dynamo" in sys.modules)
    started = time.perf_counter()
    torch.optim.SGD(network.parameters(), lr=1e-2)
    costs["second_sgd_construction_s"] = time.perf_counter() - started
    started = time.perf_counter()
    model = Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})
    costs["first_model_construction_s"] = time.perf_counter() - started
    started = time.perf_counter()
    Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})
    costs["second_model_construction_s"] = time.perf_counter() - started
    stamper = _stamp_callback()
    steps = 40
    with tempfile.TemporaryDirectory(prefix="nbcallback-bench-cold-") as folder, \
            contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        model.train(1, GatherBatches(x, y, args.seed, limit=steps), callbacks=_tutorial_callbacks(folder) + [stamper])
    stamps = stamper.stamps
    steady = statistics.median(b - a for a, b in zip(stamps[5:], stamps[6:]))
    costs["first_train_step_s"] = stamps[0] - start
    costs["first_train_step_extra_s"] = stamps[0] - start - steady
    costs["second_train_step_s"] = stamps[1] - stamps[0]
    costs["steady_step_s"] = steady
    # The same first-step cost for a bare loop on a fresh network, for comparison.
    network2, loss_fn2, optimizer2 = build(args.seed + 1)
    times = []
    for i in range(0, 6 * BATCH_SIZE, BATCH_SIZE):
        started = time.perf_counter()
        loss = loss_fn2(network2(x[i:i + BATCH_SIZE]), y[i:i + BATCH_SIZE])
        optimizer2.zero_grad()
        loss.backward()
        optimizer2.step()
        times.append(time.perf_counter() - started)
    costs["bare_first_step_extra_s"] = times[0] - statistics.median(times[2:])
    # The graph file ModelCheckpoint writes at the first step (a one-time cost inside the epoch).
    from nbcallback.train.checkpoint import describe_network
    from nbcallback.train.serialization import atomic_write

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        text = json.dumps(describe_network(network), indent=1)
        atomic_write(Path(folder) / "mnist-graph.meta", lambda handle: handle.write(text.encode()))
        costs["graph_meta_write_s"] = time.perf_counter() - started
    costs["value"] = (costs["import_nbcallback_train_s"] + costs["first_sgd_construction_s"]
                      + costs["first_model_construction_s"])
    costs["unit"] = "s"  # type: ignore[assignment]
    return costs


# --------------------------------------------------------------------------- per-step framework overhead


@variant("overhead")
def overhead(args: argparse.Namespace) -> dict[str, Any]:
    """What nbcallback adds per step, isolated: a 4->2 linear model so the torch work is tiny.

    Bare loop vs ``Model.train`` with no callbacks, with each tutorial callback
    alone, all three, and the widget callbacks (display off): 938-step epochs
    alternating in this process, minimum over the repeats (the least disturbed
    epoch), reported in microseconds per step above the bare loop.
    """
    ensure_repo_on_path()
    import torch
    from torch import nn

    from benchmarks.train import overhead_variants
    from nbcallback.train import CallbackProfiler, Model

    steps = 938
    torch.manual_seed(args.seed)
    xs, ys = torch.randn(steps, 4), torch.randint(0, 2, (steps,))
    batches = [(xs[i:i + 1], ys[i:i + 1]) for i in range(steps)]
    network = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(network.parameters(), 1e-2)
    model = Model(network, loss_fn, optimizer, metrics={"accuracy"})
    folder = tempfile.mkdtemp(prefix="nbcallback-bench-overhead-")

    def bare_epoch() -> None:
        bare_epochs(network, loss_fn, optimizer, batches, 1)

    # The per-step benchmark's variants (one epoch: its checkpoint is not due), and the profiler and the widgets.
    configs: dict[str, Callable[[], list] | None] = overhead_variants(folder)
    all_three = configs["+ all three"]
    assert all_three is not None
    configs["+ all three + CallbackProfiler"] = lambda: [CallbackProfiler(), *all_three()]
    configs["+ ProgressBar + LiveLossPlot (off)"] = _widget_callbacks("off")
    times: dict[str, list[float]] = {name: [] for name in configs}
    repeats = 3 if args.quick else 15
    sink = io.StringIO()
    for _ in range(repeats):
        for name, make in configs.items():
            started = time.perf_counter()
            if make is None:
                bare_epoch()
            else:
                with contextlib.redirect_stdout(sink):
                    model.train(1, batches, callbacks=make())
            times[name].append(time.perf_counter() - started)
            sink.seek(0)
            sink.truncate()
    base = min(times["bare loop"])
    per_step = {name: 1e6 * (min(values) - base) / steps for name, values in times.items()}
    # Deterministic view of the same thing: Python-level calls (functions + builtins) per step.
    calls: dict[str, float] = {}
    for name, make in configs.items():
        counter = [0]

        def profile(frame, event, arg, counter=counter) -> None:
            if event in ("call", "c_call"):
                counter[0] += 1

        with contextlib.redirect_stdout(sink):
            sys.setprofile(profile)
            try:
                if make is None:
                    bare_epoch()
                else:
                    model.train(1, batches, callbacks=make())
            finally:
                sys.setprofile(None)
        calls[name] = counter[0] / steps
    return {"value": per_step["+ all three"], "unit": "us/step", "bare_us_per_step": 1e6 * base / steps,
            "over_bare_us_per_step": per_step, "python_calls_per_step": calls}


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("--data", required=True, help="the MNIST_Data folder (train/, test/)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few steps/epochs only (smoke test)")
    parser.add_argument("--out", help="write the result JSON here (default: print it)")
    args = parser.parse_args(argv)
    if not args.variant.startswith("import") and args.variant != "coldstart":
        import torch

        pin_threads(args.threads)
    result = VARIANTS[args.variant](args)
    if "torch" in sys.modules:
        import torch

        result.setdefault("threads", torch.get_num_threads())
    result["variant"] = args.variant
    text = json.dumps(result)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
