"""JupyterLab in headless Chromium, for the browser tests and the README screenshots.

Four pieces, used by ``conftest.py``, the tests and ``update_readme_screenshots.py``:

* :class:`LabServer` starts JupyterLab on 127.0.0.1 with a temporary config,
  token, settings, workspace and runtime folders (nothing of the user's
  ``~/.jupyter`` is read), and stops it by its PID: kernels shut down through
  the REST API, then SIGTERM, wait, SIGKILL; any kernel process still alive
  after that is killed by its own PID.
* :class:`Browser` / :func:`new_page` start Debian's Chromium through
  Playwright (never ``playwright install``; its processes are checked gone by
  PID at the end) and a page with a route guard: every request
  whose URL is not on the lab's origin is aborted and recorded, and every
  websocket URL is recorded, so a test can assert that nothing left 127.0.0.1.
* :func:`write_notebook` writes the tests' own small notebook (:data:`CELLS`,
  made with nbformat): MNIST from the loopback mirror, the tutorial's MLP, result
  files the cells write (kernel-side facts are read from those, never from the
  page), and a ``Gate`` callback that pauses a run at a chosen step until
  the test releases it, so a live view can be inspected at leisure.
* :class:`NotebookDriver` drives that notebook through ``window.jupyterapp``
  (the server runs with ``expose_app_in_browser``): it runs one cell without
  waiting, waits for it, reads what the dashboard's DOM shows (the class names
  of ``nbcallback/widgets/static/dashboard.js``: ``.nbc-dash``, ``.nbc-bar``,
  ``.nbc-status``, ``.nbc-panel`` ...), probes text changes with the page's
  clock, switches themes, hovers, interrupts.

Nothing here asserts; the tests do.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("NBCALLBACK_CHROMIUM", "/usr/bin/chromium"))

#: Chromium flags: no sandbox (CI runs as root), no GPU, and no traffic of its own
#: (updates, sync, safe browsing, DNS for any host but the loopback address).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-extensions",
    "--metrics-recording-only",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]

#: The tests' notebook, written into the server's temporary root by :func:`write_notebook`.
NOTEBOOK_NAME = "widgets_browser.ipynb"
#: Lines for the test run's terminal summary (artifact folder, measurements).
SUMMARY: list[str] = []
#: Measurements of the test run, written to ``timings.json`` in the artifact folder.
TIMINGS: dict[str, Any] = {}

#: Text the widget manager shows when a view cannot be rendered.
WIDGET_ERRORS = ("Error displaying widget", "model not found")
#: The mime type of a live widget output.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: JupyterLab's theme names.
LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"


def missing_requirements() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    reasons = []
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        reasons.append(f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    for module, package in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("ipykernel", "ipykernel"),
                            ("ipywidgets", "ipywidgets"), ("anywidget", "anywidget"), ("nbformat", "nbformat"),
                            ("tqdm", "tqdm")):
        if importlib.util.find_spec(module) is None:
            reasons.append(f"the Python package {package} is not installed (pip install -e '.[test,browser]')")
    return "; ".join(reasons) or None

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``, from /proc (no psutil)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``."""
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in _children(stack.pop()):
            out.append(child)
            stack.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


class LabServer:
    """JupyterLab on 127.0.0.1 with a temporary config and token.

    Args:
        root_dir: the server's root (the notebook copy lives there).
        workdir: a private folder for config, settings, runtime and the log.
        env: extra environment for the server and so for its kernels.
    """

    def __init__(self, root_dir: Path, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.root_dir = Path(root_dir)
        self.workdir = Path(workdir)
        self.extra_env = dict(env or {})
        self.token = secrets.token_hex(16)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "jupyterlab.log"
        self.kernel_pids: set[int] = set()
        self.leftovers: list[int] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page_url(self, notebook: str, reset: bool = True) -> str:
        return f"{self.url}/lab/tree/{notebook}?token={self.token}" + ("&reset" if reset else "")

    # ------------------------------------------------------------------ start

    def _write_config(self) -> Path:
        settings = self.workdir / "settings"
        for plugin, values in {
            # No "fetch news?" toast and no update check over the notebook.
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
            # Every cell stays in the DOM.
            "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        }.items():
            target = settings / f"{plugin}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        config = self.workdir / "jupyter_server_test_config.py"
        lines = {
            "c.ServerApp.ip": "127.0.0.1",
            "c.ServerApp.port": self.port,
            "c.ServerApp.port_retries": 0,
            "c.ServerApp.open_browser": False,
            "c.ServerApp.allow_root": True,
            "c.ServerApp.allow_remote_access": False,
            "c.ServerApp.root_dir": str(self.root_dir),
            "c.ServerApp.terminals_enabled": False,
            "c.IdentityProvider.token": self.token,
            "c.LabApp.expose_app_in_browser": True,
            "c.LabApp.news_url": None,
            "c.LabApp.check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
            "c.LabApp.extension_manager": "readonly",
            "c.LabApp.workspaces_dir": str(self.workdir / "workspaces"),
            "c.LabApp.user_settings_dir": str(settings),
            "c.MappingKernelManager.cull_idle_timeout": 0,
        }
        config.write_text("".join(f"{key} = {value!r}\n" for key, value in lines.items()))
        return config

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("NBCALLBACK_DISPLAY", None)  # the notebook must pick widgets on its own
        for name in ("config", "runtime", "data", "ipython"):
            (self.workdir / name).mkdir(parents=True, exist_ok=True)
        env.update(
            JUPYTER_CONFIG_DIR=str(self.workdir / "config"),
            JUPYTER_RUNTIME_DIR=str(self.workdir / "runtime"),
            JUPYTER_DATA_DIR=str(self.workdir / "data"),
            IPYTHONDIR=str(self.workdir / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            XDG_CACHE_HOME=str(self.workdir / "cache"),  # the runs the kernels remember stay in the test's folder
            OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 180.0) -> "LabServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        config = self._write_config()
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", f"--config={config}"],
            cwd=str(self.root_dir),
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status, _ = self.api("GET", "/api/status", timeout=5)
                if status == 200:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.3)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ REST

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        # No proxy: the request must go straight to 127.0.0.1.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as err:
            return err.code, None

    def kernels(self) -> list[dict[str, Any]]:
        status, kernels = self.api("GET", "/api/kernels")
        return list(kernels or []) if status == 200 else []

    def note_kernel_pids(self) -> set[int]:
        """Remember the PIDs of the server's kernel processes (to check they are gone at the end)."""
        if self.proc is not None and self.proc.poll() is None:
            self.kernel_pids.update(descendants(self.proc.pid))
        return set(self.kernel_pids)

    def shutdown_kernels(self, timeout: float = 60.0) -> None:
        self.note_kernel_pids()
        for kernel in self.kernels():
            self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=timeout)
        deadline = time.monotonic() + timeout
        while self.kernels() and time.monotonic() < deadline:
            time.sleep(0.2)

    # ------------------------------------------------------------------ stop

    def stop(self) -> list[int]:
        """Shut the kernels down, then stop the server by its PID; returns PIDs that had to be killed."""
        proc = self.proc
        if proc is None:
            return []
        if proc.poll() is None:
            try:
                self.shutdown_kernels()
            except OSError:
                pass
            self.note_kernel_pids()
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        killed = []
        for pid in sorted(self.kernel_pids):
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
        self.proc = None
        self.leftovers = killed
        return killed


# ---------------------------------------------------------------------- browser


class RouteGuard:
    """Lets requests to the lab's origin through; aborts and records every other one."""

    def __init__(self, origin: str) -> None:
        self.origin = origin.rstrip("/") + "/"
        self.blocked: list[str] = []
        self.websockets: list[str] = []

    def allowed(self, url: str) -> bool:
        return url.startswith(self.origin) or url.startswith(("data:", "blob:"))

    def __call__(self, route: Any) -> None:
        url = route.request.url
        if self.allowed(url):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def on_websocket(self, ws: Any) -> None:
        self.websockets.append(ws.url)

    def violations(self) -> list[str]:
        origin_ws = "ws://" + self.origin.split("://", 1)[1]
        bad_ws = [url for url in self.websockets if not url.startswith(origin_ws)]
        return self.blocked + bad_ws


def launch_browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)


class Browser:
    """Playwright's driver and Chromium, started here and checked gone by PID at the end.

    ``with Browser() as browser:`` yields a Playwright ``Browser``.  On exit the
    browser is closed and the driver stopped; any process they started that
    is still alive 10 s later is killed by its PID and listed in ``leftovers``.
    """

    def __init__(self) -> None:
        self.pids: set[int] = set()
        self.leftovers: list[int] = []
        self._playwright: Any = None
        self.browser: Any = None

    def __enter__(self) -> Any:
        from playwright.sync_api import sync_playwright

        before = set(descendants(os.getpid()))
        self._playwright = sync_playwright().start()
        try:
            self.browser = launch_browser(self._playwright)
        except BaseException:
            self._playwright.stop()
            raise
        self.pids = set(descendants(os.getpid())) - before
        return self.browser

    def __exit__(self, *exc: object) -> None:
        try:
            if self.browser is not None:
                self.browser.close()
        finally:
            if self._playwright is not None:
                self._playwright.stop()
        wait_until(lambda: not any(alive(pid) for pid in self.pids), timeout=10)
        for pid in sorted(self.pids):
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                    self.leftovers.append(pid)
                except ProcessLookupError:
                    pass


def new_page(browser: Any, lab: LabServer, viewport: tuple[int, int] = (1280, 1400)) -> tuple[Any, Any, RouteGuard]:
    """A fresh context and page whose requests may only go to ``lab``; returns (context, page, guard)."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, service_workers="block")
    guard = RouteGuard(lab.url)
    context.route("**/*", guard)
    page = context.new_page()
    page.on("websocket", guard.on_websocket)
    return context, page, guard


# ---------------------------------------------------------------------- the tests' notebook

#: The cells of the tests' notebook, ``{name: source}``; each source starts with ``# nbtest: <name>``,
#: which is how :class:`NotebookDriver` finds it.  Kernel-side facts go to ``result-<name>.json``.
CELLS: dict[str, str] = {
    "setup": '''\
import json
import time
from pathlib import Path

import torch
from torch import nn
from tqdm.notebook import tqdm

from nbcallback.dataset import MnistDataset, download_mnist, transforms, vision
from nbcallback.train import Callback, LearningRateScheduler, Model
from nbcallback.widgets import Dashboard, LiveCallback, LiveLossPlot, ProgressBar

torch.set_num_threads(1)
path = download_mnist(progress=False)  # from the loopback mirror ($NBCALLBACK_MNIST_URL) into $NBCALLBACK_DATA


def datapipe(path, batch_size, num_samples=None, shuffle=None):
    image_transforms = [vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.1307,), std=(0.3081,)), vision.HWC2CHW()]
    dataset = MnistDataset(path, num_samples=num_samples, shuffle=shuffle)
    dataset = dataset.map(image_transforms, "image")
    dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
    return dataset.batch(batch_size)


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.layers = nn.Sequential(nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.layers(self.flatten(x))


def new_trainer(lr=1e-2, seed=0):
    global optimizer
    torch.manual_seed(seed)
    network = Network()
    optimizer = torch.optim.SGD(network.parameters(), lr)
    return Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"})


def report(name, callback=None, **facts):
    """What the kernel knows about the run, for the test (the page may still show older outputs)."""
    if callback is not None:
        view = callback.view()
        facts.update(status=view.status, status_text=view.status_text, steps_done=view.steps_done,
                     total_steps=view.total_steps, epochs_done=view.epochs_done,
                     lr_changes=[list(change) for change in view.lr_changes])
    if "optimizer" in globals():
        facts["lr"] = optimizer.param_groups[0]["lr"]
    Path(f"result-{name}.json").write_text(json.dumps(facts))


class Gate(Callback):
    """Pause training, once, after global step ``at`` until the file ``release-<name>`` exists: at the first step
    from ``at`` on at which every live view of the run has refreshed during this epoch's training (they refresh
    a third of a second apart, so a pause right after a validation would leave them showing it).  The file
    ``paused-<name>`` holds the time and the step of the pause."""

    def __init__(self, name, at):
        super().__init__()
        self.at, self.release, self.paused = at, Path(f"release-{name}"), Path(f"paused-{name}")
        self.done = False

    def on_train_begin(self, run_context):
        self.release.unlink(missing_ok=True)
        self.paused.unlink(missing_ok=True)
        self.done = False

    def on_train_step_end(self, run_context):
        args = run_context.original_args()
        if self.done or args.cur_step_num < self.at:
            return
        epoch_start = (args.cur_epoch_num - 1) * args.batch_num
        views = [cb.view() for cb in args.list_callback if isinstance(cb, LiveCallback)]
        if all(v.phase == "train" and v.steps_done > epoch_start for v in views):
            self.done = True
            self.paused.write_text(f"{time.time()} {args.cur_step_num}")
            while not self.release.exists():
                time.sleep(0.05)


class TqdmBar(Callback):
    """tqdm.notebook's bar over the same training (the cadence comparison)."""

    def on_train_epoch_begin(self, run_context):
        self.bar = tqdm(total=run_context.original_args().batch_num, desc="train")

    def on_train_step_end(self, run_context):
        self.bar.update(1)

    def on_train_epoch_end(self, run_context):
        self.bar.close()


full_train = datapipe(path / "train", 64)  # 938 steps: the cadence runs
train_slice = datapipe(path / "train", 64, num_samples=12000)  # 188 steps per epoch
test_slice = datapipe(path / "test", 64, num_samples=2000, shuffle=False)
report("setup", steps=full_train.get_dataset_size(), slice_steps=train_slice.get_dataset_size())
print("steps per epoch:", full_train.get_dataset_size(), "| slice:", train_slice.get_dataset_size())
''',
    "cadence_nbc": '''\
trainer = new_trainer()
bar = ProgressBar()
started = time.perf_counter()
trainer.fit(1, full_train, callbacks=[bar])
report("cadence_nbc", bar, seconds=time.perf_counter() - started)
''',
    "cadence_tqdm": '''\
trainer = new_trainer()
started = time.perf_counter()
trainer.fit(1, full_train, callbacks=[TqdmBar()])
report("cadence_tqdm", seconds=time.perf_counter() - started)
''',
    "stop_lr": '''\
dashboard = Dashboard()
trainer = new_trainer()
try:
    trainer.fit(20, train_slice, test_slice, callbacks=[dashboard])
finally:
    report("stop_lr", dashboard)
''',
    "lightning": '''\
import lightning as L
from nbcallback.integrations import LightningDashboard


class Small(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = Network()

    def training_step(self, batch, index):
        time.sleep(0.004)  # a few seconds per epoch, so the Stop click lands mid-run
        return nn.functional.cross_entropy(self.net(batch[0]), batch[1])

    def validation_step(self, batch, index):
        self.log("val_loss", nn.functional.cross_entropy(self.net(batch[0]), batch[1]))

    def configure_optimizers(self):
        global optimizer
        optimizer = torch.optim.SGD(self.parameters(), lr=1e-2)
        return optimizer


generator = torch.Generator().manual_seed(0)
images = torch.randn(64 * 200, 1, 28, 28, generator=generator)
labels = (images.flatten(1)[:, :2].sum(1) > 0).long()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=64)
lightning_dash = LightningDashboard()
lightning_trainer = L.Trainer(max_epochs=20, callbacks=[lightning_dash], enable_progress_bar=False, logger=False,
                              enable_checkpointing=False, enable_model_summary=False, limit_val_batches=20)
try:
    lightning_trainer.fit(Small(), loader, loader)
finally:
    report("lightning", lightning_dash.board, should_stop=lightning_trainer.should_stop,
           global_step=lightning_trainer.global_step)
''',
    "interrupt": '''\
progress = ProgressBar()
trainer = new_trainer()
try:
    trainer.fit(20, train_slice, test_slice, callbacks=[progress])
finally:
    report("interrupt", progress)
''',
    "usable": '''\
accuracy = trainer.eval(test_slice)["accuracy"]
report("usable", accuracy=accuracy)
print("the kernel is still usable; accuracy of the model as it is now:", accuracy)
''',
    "gated_dashboard": '''\
dashboard = Dashboard()
trainer = new_trainer()
halve = LearningRateScheduler(lambda lr, step: lr * 0.5 if step % 100 == 0 else lr)
try:
    trainer.fit(3, train_slice, test_slice, callbacks=[dashboard, halve, Gate("gated_dashboard", at=300)])
finally:
    report("gated_dashboard", dashboard)
''',
    "gated_combined": '''\
progress, plot = ProgressBar(), LiveLossPlot()
trainer = new_trainer()
try:
    trainer.fit(2, train_slice, test_slice, callbacks=[progress, plot, Gate("gated_combined", at=250)])
finally:
    report("gated_combined", progress)
''',
    "stalled_epoch": '''\
class LateFirstBatch(Callback):
    """Hold the first step of epoch ``epoch`` before it starts (its batch is late, as when a loader restarts its
    workers) until the file ``release-<name>`` exists; ``paused-<name>`` holds the time and the global step."""

    def __init__(self, name, epoch):
        super().__init__()
        self.epoch, self.release, self.paused = epoch, Path(f"release-{name}"), Path(f"paused-{name}")
        self.release.unlink(missing_ok=True)
        self.paused.unlink(missing_ok=True)
        self.hold = False

    def on_train_epoch_begin(self, run_context):
        self.hold = run_context.original_args().cur_epoch_num == self.epoch

    def on_train_step_begin(self, run_context):
        if self.hold:
            self.hold = False
            self.paused.write_text(f"{time.time()} {run_context.original_args().cur_step_num}")
            while not self.release.exists():
                time.sleep(0.05)


progress = ProgressBar()
trainer = new_trainer()
try:
    trainer.fit(2, train_slice, test_slice, callbacks=[progress, LateFirstBatch("stalled_epoch", 2)])
finally:
    report("stalled_epoch", progress)
''',
    "readme_progress": '''\
trainer = new_trainer()
trainer.fit(3, train_slice, test_slice, callbacks=[ProgressBar()])
''',
    "readme_dashboard": '''\
dashboard = Dashboard()
trainer = new_trainer()
try:
    trainer.fit(6, train_slice, test_slice, callbacks=[dashboard, Gate("readme_dashboard", at=660)])
finally:
    report("readme_dashboard", dashboard)
''',    "time_panel": '''\
from nbcallback.train import CallbackProfiler, LossMonitor


class SlowCallback(Callback):
    """A callback that costs 4 ms a step (the one the bar should single out)."""

    def on_train_step_end(self, run_context):
        time.sleep(0.004)


profiler = CallbackProfiler()
dashboard = Dashboard()
trainer = new_trainer()
try:
    trainer.fit(8, train_slice, test_slice, callbacks=[profiler, LossMonitor(1000), SlowCallback(), dashboard])
finally:
    bar = dashboard.view().time
    report("time_panel", dashboard, segments=[[s.key, s.label, s.share] for s in bar.segments] if bar else None,
           wall_s=profiler.wall_s)
''',
    "hook_trace": '''\
from nbcallback.train import HookTrace, LossMonitor


class StopEarly(Callback):
    def on_train_step_end(self, run_context):
        args = run_context.original_args()
        if args.cur_epoch_num == 2 and args.cur_step_num >= args.batch_num + 3:
            run_context.request_stop()


trace = HookTrace()
trainer = new_trainer()
trainer.fit(2, datapipe(path / "train", 64, num_samples=640), datapipe(path / "test", 64, num_samples=128, shuffle=False),
            callbacks=[trace, LossMonitor(10), StopEarly()])
report("hook_trace", hooks=len(trace.hooks))
trace
''',
    "compare": '''\
import io

for lr in (0.1, 0.002):  # two runs to compare with (each remembered when it ends), shown as text
    new_trainer(lr).fit(2, train_slice, test_slice,
                        callbacks=[Dashboard(display="text", file=io.StringIO()), Gate("compare-none", at=10**9)])
dashboard = Dashboard(compare=2)  # the last two runs of this notebook, faint under this one
trainer = new_trainer(0.02)
try:
    trainer.fit(2, train_slice, test_slice, callbacks=[dashboard, Gate("compare", at=250)])
finally:
    runs = dashboard.overlay.runs if dashboard.overlay is not None else ()
    Path("compare-final.png").write_bytes(dashboard.last_png or b"")
    report("compare", dashboard, labels=[run.label for run in runs], hovers=[run.hover for run in runs],
           colors=[run.color for run in runs])
''',
}


def write_notebook(target: Path, names: list[str] | None = None) -> Path:
    """Write the tests' notebook (``names``: the cells to include, in :data:`CELLS` order; all by default)."""
    import nbformat

    chosen = [name for name in CELLS if names is None or name in names]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Written by `tests/browser/harness.py` for the browser tests.")]
    nb.cells += [nbformat.v4.new_code_cell(f"# nbtest: {name}\n{CELLS[name]}") for name in chosen]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.validate(nb)
    target.write_text(nbformat.writes(nb))
    return target


class CpuHog:
    """A busy Python loop in its own process, pinned to the last CPU (the "other core"); killed by its PID.

    ``with CpuHog() as hog:`` ... ``hog.busy_share()``: the CPU time it got per second of wall time.
    """

    CODE = ("import os\n"
            "cpus = sorted(os.sched_getaffinity(0))\n"
            "os.sched_setaffinity(0, {cpus[-1]}) if len(cpus) > 1 else None\n"
            "while True:\n    pass\n")

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.cpu_seconds = 0.0
        self.wall_seconds = 0.0

    def _cpu(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def __enter__(self) -> "CpuHog":
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE], stdin=subprocess.DEVNULL)
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        try:
            self.cpu_seconds = self._cpu()
        except (OSError, IndexError, ValueError):
            pass
        self.wall_seconds = time.monotonic() - self.started
        self.proc.kill()
        self.proc.wait(timeout=30)

    def busy_share(self) -> float:
        return self.cpu_seconds / self.wall_seconds if self.wall_seconds else 0.0


_JS_HELPERS = r"""
() => {
  if (window.__nbt) return true;
  const nbt = window.__nbt = {runs: {}, log: {}, marks: {}};
  nbt.panel = () => window.jupyterapp.shell.currentWidget;
  nbt.cell = (i) => nbt.panel().content.widgets[i];
  nbt.outputNode = (i) => nbt.cell(i).node.querySelector('.jp-Cell-outputArea') || nbt.cell(i).node;
  const txt = (el) => el ? el.textContent.replace(/\s+/g, ' ').trim() : null;
  nbt.visible = (el) => {
    if (!el || !el.getClientRects().length) return false;
    const cs = getComputedStyle(el);
    return cs.visibility !== 'hidden' && cs.display !== 'none' && parseFloat(cs.opacity || '1') > 0;
  };
  // What one output area shows: the live dashboard(s) (.nbc-dash) or the static snapshot (.nbc-snapshot).
  nbt.read = (i, name) => {
    const node = nbt.outputNode(i);
    const bars = [...node.querySelectorAll('.nbc-bar')].map(b => {
      const fill = b.querySelector('.nbc-bar-fill');
      return {kind: b.dataset.kind, label: txt(b.querySelector('.nbc-bar-label')),
              text: txt(b.querySelector('.nbc-bar-text')), width: fill ? parseFloat(fill.style.width) : null};
    });
    const kernel = nbt.panel().sessionContext.session && nbt.panel().sessionContext.session.kernel;
    return {
      live: node.querySelectorAll('.nbc-dash').length,
      bars,
      statuses: [...node.querySelectorAll('.nbc-status')].map(s => ({state: s.dataset.state || null, text: txt(s), visible: nbt.visible(s)})),
      notes: [...node.querySelectorAll('.nbc-note')].map(txt),
      panels: [...node.querySelectorAll('.nbc-panel')].map(p => p.dataset.title),
      controls: !!node.querySelector('.nbc-controls'),
      tips: [...node.querySelectorAll('.nbc-tip')].filter(nbt.visible).map(txt),
      snapshots: [...node.querySelectorAll('.nbc-snapshot')].map(txt),
      imgs: [...node.querySelectorAll('img')].map(img => ({
        src: (img.getAttribute('src') || '').slice(0, 40), width: img.naturalWidth, height: img.naturalHeight,
        live: !!img.closest('.nbc-dash')})),
      text: node.innerText,
      t: performance.now(),
      done: name && nbt.runs[name] ? nbt.runs[name].done : null,
      kernel: kernel ? kernel.status : null,
    };
  };
  // Log (page clock) every change of the text of the last element matching `selector` in an output
  // area (null: the whole area), and when `endSelector` first appears after that (the final snapshot).
  nbt.probe = (name, i, selector, endSelector) => {
    const node = nbt.outputNode(i);
    const entries = nbt.log[name] = [];
    let last = null, ended = false;
    const check = () => {
      const found = selector ? node.querySelectorAll(selector) : [node];
      const text = found.length ? txt(found[found.length - 1]) : null;
      const t = performance.now();
      if (text !== null && text !== last) { last = text; entries.push({t, text}); }
      if (!ended && entries.length && endSelector && node.querySelector(endSelector)) {
        ended = true; entries.push({t, text: null, end: true});
      }
    };
    check();
    const obs = new MutationObserver(check);
    obs.observe(node, {subtree: true, childList: true, characterData: true, attributes: true});
    nbt.marks[name + ':observer'] = obs;
    return true;
  };
  nbt.unprobe = (name) => { const o = nbt.marks[name + ':observer']; if (o) o.disconnect(); return true; };
  // Colours: WCAG contrast of an SVG text's computed fill over what lies under it.
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map(k => top[k] * top[3] + bottom[k] * (1 - top[3])).concat([1]);
  nbt.backgroundOf = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  nbt.contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  nbt.svgText = (i, title) => {
    const panel = nbt.outputNode(i).querySelector(`.nbc-panel[data-title="${title}"]`);
    if (!panel) return null;
    const bg = nbt.backgroundOf(panel);
    return [...panel.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t => {
      const cs = getComputedStyle(t);
      const c = parse(cs.fill) || parse(cs.color) || [0, 0, 0, 1];
      c[3] *= parseFloat(cs.fillOpacity || '1') * parseFloat(cs.opacity || '1');
      const seen = over(c, bg);
      const ctm = t.getScreenCTM();  // user units -> CSS px on the page (the viewBox's scale)
      const size = parseFloat(cs.fontSize) * (ctm ? Math.hypot(ctm.a, ctm.b) : 1);
      return {text: t.textContent.trim().slice(0, 40), fill: cs.fill, seen: seen.slice(0, 3).map(Math.round),
              background: bg.slice(0, 3).map(Math.round), size, ratio: nbt.contrast(seen, bg)};
    });
  };
  // The colour a CSS colour expression has on this page.
  nbt.color = (expr) => {
    const probe = document.createElement('span');
    probe.style.color = expr;
    document.body.appendChild(probe);
    const c = getComputedStyle(probe).color;
    probe.remove();
    return c;
  };
  // Widget errors in what the kernel produced (outputs).
  nbt.errors = () => {
    const found = [];
    for (const area of document.querySelectorAll('.jp-OutputArea')) {
      const text = area.innerText;
      for (const s of ["Error displaying widget", "model not found"]) if (text.includes(s)) found.push(s + ' in: ' + text.slice(0, 200));
    }
    return found;
  };
  // Views the widget manager never rendered (no model and no error yet).
  nbt.loading = () => [...document.querySelectorAll('.jp-OutputArea')].filter(a => a.innerText.includes('Loading widget...')).length;
  return true;
}
"""


class NotebookDriver:
    """Drive the open notebook through ``window.jupyterapp``.

    Args:
        page: a Playwright page on the lab.
        lab: the server.
        name: the notebook's path under the server's root.
        cells: the names of the cells the caller drives (each source starts with ``# nbtest: <name>``).
        guard: the page's route guard (kept for the caller's checks).
    """

    def __init__(self, page: Any, lab: LabServer, name: str, cells: list[str] | None = None,
                 guard: RouteGuard | None = None) -> None:
        self.page = page
        self.guard = guard
        self.lab = lab
        self.name = name
        self.cell_names = list(cells if cells is not None else CELLS)
        self.index: dict[str, int] = {}
        #: Cells whose run finished without an error, in this kernel.
        self.ran: set[str] = set()
        self.console: list[str] = []
        self.page_errors: list[str] = []
        page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))

    # ------------------------------------------------------------------ opening

    def open(self, reset: bool = True, timeout: float = 180.0) -> None:
        self.page.goto(self.lab.page_url(self.name, reset=reset), timeout=timeout * 1000)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Wait for the notebook and an idle kernel whose kernel_info is in (subshell support known)."""
        page = self.page
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=timeout * 1000)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout * 1000)
        page.wait_for_function(
            """(name) => {
                const w = window.jupyterapp.shell.currentWidget;
                if (!w || !w.context || w.context.path !== name || !w.context.isReady) return false;
                const k = w.sessionContext.session && w.sessionContext.session.kernel;
                return !!k && k.status === 'idle' && k.connectionStatus === 'connected';
            }""",
            arg=self.name,
            timeout=timeout * 1000,
            polling=200,
        )
        page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.info; }")
        page.evaluate(_JS_HELPERS)
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # the notebook gets the page's width
        self._locate_cells()
        self.ran = set()  # a (re)opened page may have a new kernel

    def _locate_cells(self) -> None:
        found = self.page.evaluate(
            """(names) => {
                const out = {};
                const cells = window.jupyterapp.shell.currentWidget.content.widgets;
                for (const name of names) {
                    const i = cells.findIndex(c => c.model.type === 'code'
                        && c.model.sharedModel.getSource().split('\\n')[0].trim() === '# nbtest: ' + name);
                    if (i >= 0) { out[name] = i; cells[i].node.setAttribute('data-nbtest', name); }
                }
                return out;
            }""",
            self.cell_names,
        )
        missing = sorted(set(self.cell_names) - set(found))
        if missing:
            raise LookupError(f"cells not found in {self.name}: {missing}")
        self.index = found

    def kernel_supports_subshells(self) -> bool:
        return bool(self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.supportsSubshells"
        ))

    # ------------------------------------------------------------------ kernel-side files

    def path(self, kind: str, cell: str) -> Path:
        """``result-<cell>.json`` (written by the cell), ``paused-<cell>`` / ``release-<cell>`` (its Gate)."""
        return self.lab.root_dir / (f"result-{cell}.json" if kind == "result" else f"{kind}-{cell}")

    def forget(self, cell: str) -> None:
        for kind in ("result", "paused", "release"):
            self.path(kind, cell).unlink(missing_ok=True)

    def result(self, cell: str, timeout: float = 30.0) -> dict[str, Any]:
        """What the cell's kernel wrote about its run (``report(...)`` in the notebook)."""
        target = self.path("result", cell)
        if not wait_until(target.exists, timeout):
            raise TimeoutError(f"the cell {cell!r} wrote no {target.name} within {timeout:.0f} s")
        return json.loads(target.read_text())

    def wait_paused(self, cell: str, timeout: float = 300.0) -> None:
        """Wait until the cell's Gate paused the run (or raise if the cell ended first)."""
        paused = self.path("paused", cell)
        deadline = time.monotonic() + timeout
        while not paused.exists():
            if self.page.evaluate("(n) => !!(window.__nbt.runs[n] && window.__nbt.runs[n].done)", cell):
                raise RuntimeError(f"the cell {cell!r} ended before its Gate paused it: {self.wait(cell)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cell {cell!r} did not reach its Gate within {timeout:.0f} s")
            time.sleep(0.1)

    def paused_at(self, cell: str) -> int:
        """The global step after which the cell's Gate paused the run."""
        return int(self.path("paused", cell).read_text().split()[1])

    def release(self, cell: str) -> None:
        self.path("release", cell).write_text("go")

    # ------------------------------------------------------------------ running cells

    def start(self, cell: str) -> None:
        """Run one cell without waiting for it (``notebook:run-cell`` on that cell only)."""
        self.forget(cell)
        self.page.evaluate(
            """([i, name]) => {
                const nbt = window.__nbt, panel = nbt.panel(), nb = panel.content;
                nb.activeCellIndex = i;
                nb.deselectAll();
                nbt.runs[name] = {done: false};
                window.jupyterapp.commands.execute('notebook:run-cell').then(
                    ok => { nbt.runs[name] = {done: true, ok, t: performance.now()}; },
                    err => { nbt.runs[name] = {done: true, ok: false, error: String(err), t: performance.now()}; });
                return true;
            }""",
            [self.index[cell], cell],
        )

    def wait(self, cell: str, timeout: float = 300.0) -> dict[str, Any]:
        """Wait until the cell's run finished; returns its execution count, errors and text."""
        self.page.wait_for_function(
            "(name) => window.__nbt.runs[name] && window.__nbt.runs[name].done",
            arg=cell, timeout=timeout * 1000, polling=200,
        )
        result = self.page.evaluate(
            """([i, name]) => {
                const c = window.__nbt.cell(i);
                const outputs = c.model.outputs.toJSON();
                return {
                    run: window.__nbt.runs[name],
                    execution_count: c.model.executionCount,
                    errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
                    stderr: outputs.filter(o => o.output_type === 'stream' && o.name === 'stderr').map(o => o.text).join(''),
                    text: window.__nbt.outputNode(i).innerText,
                };
            }""",
            [self.index[cell], cell],
        )
        if result["run"].get("ok") and not result["errors"]:
            self.ran.add(cell)
        return result

    def run(self, cell: str, timeout: float = 300.0) -> dict[str, Any]:
        self.start(cell)
        return self.wait(cell, timeout)

    def ensure(self, cell: str, timeout: float = 600.0) -> None:
        """Run ``cell`` unless it already ran in this kernel (a cell that later ones depend on)."""
        if cell not in self.ran:
            result = self.run(cell, timeout)
            if result["errors"]:
                raise RuntimeError(f"cell {cell!r} failed: {result['errors']}\n{result['text']}")

    def interrupt(self) -> None:
        """The kernel's interrupt, as the toolbar button does it (``notebook:interrupt-kernel``)."""
        self.page.evaluate("async () => { await window.jupyterapp.commands.execute('notebook:interrupt-kernel'); }")

    def clear_outputs(self, cell: str) -> None:
        self.page.evaluate("(i) => { window.__nbt.cell(i).model.outputs.clear(); }", self.index[cell])

    # ------------------------------------------------------------------ reading the page

    def read(self, cell: str) -> dict[str, Any]:
        """What the cell's output shows now (see ``nbt.read`` in :data:`_JS_HELPERS`)."""
        return self.page.evaluate("([i, name]) => window.__nbt.read(i, name)", [self.index[cell], cell])

    def poll(self, cell: str, predicate: Callable[[dict[str, Any]], bool], timeout: float, interval: float = 0.05,
             what: str = "", while_running: bool = False) -> dict[str, Any]:
        """Read the cell's output until ``predicate`` holds.

        Raises:
            TimeoutError: not within ``timeout``, or (``while_running``) the
                cell's run ended first; the message holds the last reading.
        """
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while True:
            last = self.read(cell)
            if predicate(last):
                return last
            if while_running and last.get("done"):
                raise TimeoutError(f"cell {cell!r} finished before {what or 'the condition'} was seen; "
                                   f"last reading: {json.dumps(_short(last))}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what or 'condition'} not seen in cell {cell!r} within {timeout:.0f} s; "
                                   f"last reading: {json.dumps(_short(last))}")
            time.sleep(interval)

    def probe(self, cell: str, selector: str | None, end_selector: str | None = None, name: str | None = None) -> str:
        """Log every change of the text of ``selector`` in the cell's output (page clock, see :meth:`probe_log`)."""
        name = name or cell
        self.page.evaluate("([n, i, s, e]) => window.__nbt.probe(n, i, s, e)", [name, self.index[cell], selector, end_selector])
        return name

    def probe_log(self, name: str, stop: bool = True) -> list[dict[str, Any]]:
        """``[{t, text}]`` since :meth:`probe` (ms, page clock); ``{t, end: True}`` when the end selector appeared."""
        if stop:
            self.page.evaluate("(n) => window.__nbt.unprobe(n)", name)
        return list(self.page.evaluate("(n) => window.__nbt.log[n] || []", name))

    def watch(self, cell: str) -> str:
        """Log every change of the cell's whole output text (see :meth:`probe_log`)."""
        return self.probe(cell, None, None, name=cell + ":text")

    def now(self) -> float:
        """The page's clock (``performance.now()``, ms)."""
        return float(self.page.evaluate("() => performance.now()"))

    def mark_clicks(self, selector: str, name: str) -> None:
        """Record (page clock) the first click on an element matching ``selector`` as mark ``name``."""
        self.page.evaluate(
            """([selector, name]) => {
                const nbt = window.__nbt;
                nbt.marks[name] = null;
                document.addEventListener('click', (e) => {
                    if (nbt.marks[name] === null && e.target.closest && e.target.closest(selector)) nbt.marks[name] = performance.now();
                }, {capture: true});
            }""",
            [selector, name],
        )

    def mark(self, name: str) -> float | None:
        return self.page.evaluate("(name) => window.__nbt.marks[name]", name)

    def output(self, cell: str) -> Any:
        """A Playwright locator of the cell's output area."""
        return self.page.locator(f'[data-nbtest="{cell}"] .jp-Cell-outputArea')

    def widget_errors(self) -> list[str]:
        found = list(self.page.evaluate("() => window.__nbt ? window.__nbt.errors() : []"))
        found += [line for line in self.console if any(e in line for e in WIDGET_ERRORS)]
        return found

    def color(self, expression: str) -> str:
        return self.page.evaluate("(e) => window.__nbt.color(e)", expression)

    def svg_text(self, cell: str, title: str) -> list[dict[str, Any]] | None:
        """Every text of the panel ``title``: computed fill, font size as drawn (CSS px), background under it,
        WCAG contrast."""
        return self.page.evaluate("([i, t]) => window.__nbt.svgText(i, t)", [self.index[cell], title])

    def hover(self, locator: Any, fx: float = 0.35, fy: float = 0.55) -> None:
        """Move the mouse onto ``locator`` at the fraction (fx, fy) of its box, in small steps, as a hand would."""
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        if box is None:
            raise RuntimeError("the element to hover has no box (not rendered)")
        self.page.mouse.move(box["x"] + 2, box["y"] + 2)
        self.page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy, steps=10)

    # ------------------------------------------------------------------ themes

    def theme(self) -> str:
        return str(self.page.evaluate("() => document.body.dataset.jpThemeName || ''"))

    def set_theme(self, name: str, timeout: float = 30.0) -> None:
        """``apputils:change-theme``, then wait until the theme's stylesheet is in (its layout colour applies)."""
        self.page.evaluate(
            "async (n) => { await window.jupyterapp.commands.execute('apputils:change-theme', {theme: n}); }", name)
        light = "true" if "Light" in name else "false"
        self.page.wait_for_function(
            """([n, light]) => document.body.dataset.jpThemeName === n && document.body.dataset.jpThemeLight === light""",
            arg=[name, light], timeout=timeout * 1000, polling=100)
        self.page.wait_for_timeout(300)  # one more frame for views that redraw on the theme change

    def theme_shots(self, cell: str, shots: dict[str, Path], panel: str = "loss") -> dict[str, Any]:
        """Screenshot the cell's output in each theme of ``shots`` (``{theme: path}``, in order), with the
        texts of the panel ``panel`` (:meth:`svg_text`; None without a live panel); ends in the Light theme."""
        seen: dict[str, Any] = {}
        try:
            for theme, path in shots.items():
                self.set_theme(theme)
                seen[theme] = {"texts": self.svg_text(cell, panel), "shot": self.screenshot(cell, path)}
        finally:
            if self.theme() != LIGHT:
                self.set_theme(LIGHT)
        return seen

    # ------------------------------------------------------------------ notebook actions

    def save(self, timeout: float = 60.0) -> None:
        self.page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
        self.page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=timeout * 1000
        )

    def shutdown_kernel(self, timeout: float = 60.0) -> None:
        self.lab.note_kernel_pids()
        self.page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); }")
        deadline = time.monotonic() + timeout
        while self.lab.kernels() and time.monotonic() < deadline:
            time.sleep(0.2)

    def screenshot(self, cell: str | None, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if cell is None:
            self.page.screenshot(path=str(path))
        else:
            target = self.output(cell)
            target.scroll_into_view_if_needed()
            target.screenshot(path=str(path))
        return path


def _short(reading: dict[str, Any]) -> dict[str, Any]:
    out = dict(reading)
    out["text"] = (out.get("text") or "")[:400]
    return out


# ---------------------------------------------------------------------- what the page shows, as numbers

_COUNT = re.compile(r"(\d+)\s*/\s*(\d+)")


def bar_steps(reading: dict[str, Any], kind: str = "train") -> tuple[int, int] | None:
    """``(done, total)`` of the first live bar of ``kind`` ("312/938" in its text), or None."""
    for bar in reading.get("bars") or []:
        if bar["kind"] == kind:
            match = _COUNT.search(bar["text"] or "")
            if match:
                return int(match.group(1)), int(match.group(2))
    return None


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def cadence(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The gaps between visible progress updates while steps advance.

    ``entries`` come from :meth:`NotebookDriver.probe` on a bar's text
    ("312/938 ..."): the window opens at the first update that shows a
    finished step and closes at the one that shows the last step (or, when
    the live view is replaced before showing it, when the final snapshot
    appears).  Gaps are in seconds.
    """
    points: list[tuple[float, int, int]] = []
    end_t = None
    for entry in entries:
        if entry.get("end"):
            end_t = float(entry["t"])
            break
        match = _COUNT.search(entry.get("text") or "")
        if match:
            points.append((float(entry["t"]), int(match.group(1)), int(match.group(2))))
    first = next((k for k, p in enumerate(points) if p[1] >= 1), None)
    if first is None:
        return {"updates": 0, "gaps_s": [], "span_s": 0.0, "max_gap_s": None, "p95_gap_s": None,
                "median_gap_s": None, "steps_shown": [p[1] for p in points]}
    times: list[float] = []
    shown: list[int] = []
    for t, step, total in points[first:]:
        times.append(t)
        shown.append(step)
        if step >= total:
            break
    else:
        if end_t is not None:
            times.append(end_t)
    gaps = [(b - a) / 1000.0 for a, b in zip(times, times[1:])]
    return {
        "updates": len(times),
        "span_s": round((times[-1] - times[0]) / 1000.0, 3),
        "max_gap_s": round(max(gaps), 3) if gaps else None,
        "p95_gap_s": round(percentile(gaps, 0.95), 3) if gaps else None,
        "median_gap_s": round(percentile(gaps, 0.5), 3) if gaps else None,
        "mean_gap_s": round(sum(gaps) / len(gaps), 3) if gaps else None,
        "gaps_s": [round(g, 3) for g in gaps],
        "first_step_shown": shown[0],
        "last_step_shown": shown[-1],
        "closed_by_snapshot": len(times) > len(shown),
    }


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
