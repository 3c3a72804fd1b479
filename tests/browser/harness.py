"""JupyterLab in headless Chromium, for the browser tests and the README screenshots.

Three pieces, used by ``conftest.py`` and by ``update_readme_screenshots.py``:

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
* :class:`NotebookDriver` drives one notebook through ``window.jupyterapp``
  (the server runs with ``expose_app_in_browser``): it finds cells by a piece
  of their source, runs one cell without waiting, waits for it, and reads what
  the page shows (progress bars, status lines, images).

Nothing here asserts; the tests do.
"""
from __future__ import annotations

import importlib.util
import json
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
NOTEBOOK = REPO / "notebooks" / "4_widgets.ipynb"

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

#: The notebook's name in the server's root (a copy of :data:`NOTEBOOK`).
NOTEBOOK_NAME = "4_widgets.ipynb"
#: The cells the tests drive, found by a piece of their source.
CELLS = {
    "setup": "download_mnist(",
    "progress": "callbacks=[ProgressBar()]",
    "plot": "callbacks=[LiveLossPlot()]",
    "dashboard": "dashboard = Dashboard()",
    "lr_print": "optimizer lr after the run",
    "interrupt": "progress = ProgressBar()",
    "usable": "the kernel is still usable",
}
#: Lines for the test run's terminal summary (artifact folder, measurements).
SUMMARY: list[str] = []
#: Measurements of the test run, written to ``timings.json`` in the artifact folder.
TIMINGS: dict[str, Any] = {}

#: Text the widget manager shows when a view cannot be rendered.
WIDGET_ERRORS = ("Error displaying widget", "model not found")


def missing_requirements() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    reasons = []
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        reasons.append(f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    for module, package in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("ipykernel", "ipykernel"),
                            ("ipywidgets", "ipywidgets")):
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


# ---------------------------------------------------------------------- the notebook


def copy_notebook(source: Path, target: Path) -> None:
    """Copy a notebook without its outputs, so every output on the page comes from this session."""
    for attempt in range(20):  # another process may be rewriting the notebook right now
        try:
            nb = json.loads(source.read_text())
            break
        except json.JSONDecodeError:
            if attempt == 19:
                raise
            time.sleep(0.5)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nb.get("metadata", {}).pop("widgets", None)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


_JS_HELPERS = r"""
() => {
  if (window.__nbt) return true;
  const nbt = window.__nbt = {runs: {}, log: {}, marks: {}};
  nbt.panel = () => window.jupyterapp.shell.currentWidget;
  nbt.cell = (i) => nbt.panel().content.widgets[i];
  nbt.outputNode = (i) => nbt.cell(i).node.querySelector('.jp-Cell-outputArea') || nbt.cell(i).node;
  // What one output area shows: bars, status line, images, live or static.
  nbt.read = (i, name) => {
    const node = nbt.outputNode(i);
    const bars = [...node.querySelectorAll('progress')].map(p => {
      const row = p.parentElement;
      const label = row && row.firstElementChild ? row.firstElementChild.textContent.trim() : '';
      return {label, value: p.value, max: p.max, text: row ? row.textContent.replace(/\s+/g, ' ').trim() : ''};
    });
    const imgs = [...node.querySelectorAll('img')].map(img => ({
      src: img.getAttribute('src') || '', width: img.naturalWidth, height: img.naturalHeight,
      widget: !!img.closest('.jupyter-widgets'), cls: img.className}));
    const spans = [...node.querySelectorAll('span')].filter(s => /^[✔■✖]|^running|^starting|^evaluating/.test(s.textContent.trim()));
    const status = spans.length ? spans[0] : null;
    return {
      live: !!node.querySelector('.jupyter-widgets:not(.jp-OutputArea-output)') || !!node.querySelector('.widget-html, .widget-image'),
      bars, imgs,
      status: status ? status.textContent.trim() : null,
      statusLine: status && status.parentElement ? status.parentElement.textContent.replace(/\s+/g, ' ').trim() : null,
      statusColor: status ? getComputedStyle(status).color : null,
      text: node.innerText,
      t: performance.now(),
      done: name && nbt.runs[name] ? nbt.runs[name].done : null,
    };
  };
  // The colour a CSS colour expression has on this page (for "the finished style").
  nbt.color = (expr) => {
    const probe = document.createElement('span');
    probe.style.color = expr;
    document.body.appendChild(probe);
    const c = getComputedStyle(probe).color;
    probe.remove();
    return c;
  };
  nbt.sha = async (src) => {
    const r = await fetch(src);
    const d = await crypto.subtle.digest('SHA-256', await r.arrayBuffer());
    return [...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join('');
  };
  // Watch an output area: every change is logged with the page's clock.
  nbt.watch = (i, name) => {
    const node = nbt.outputNode(i);
    const entries = nbt.log[name] = [];
    const record = () => {
      const text = node.innerText.slice(0, 2000);
      if (!entries.length || entries[entries.length - 1].text !== text) entries.push({t: performance.now(), text});
    };
    record();
    const obs = new MutationObserver(record);
    obs.observe(node, {subtree: true, childList: true, characterData: true, attributes: true});
    nbt.marks[name + ':observer'] = obs;
    return true;
  };
  nbt.unwatch = (name) => { const o = nbt.marks[name + ':observer']; if (o) o.disconnect(); return true; };
  // Widget errors in what the kernel produced (outputs), not in the markdown that talks about them.
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
        cells: ``{name: a piece of the cell's source}`` for the cells the caller drives.
        guard: the page's route guard (kept for the caller's checks).
    """

    def __init__(self, page: Any, lab: LabServer, name: str, cells: dict[str, str],
                 guard: RouteGuard | None = None) -> None:
        self.page = page
        self.guard = guard
        self.lab = lab
        self.name = name
        self.markers = dict(cells)
        self.index: dict[str, int] = {}
        #: Cells whose run finished without an error, in this kernel.
        self.ran: set[str] = set()
        #: Training steps per epoch, as the setup cell printed them.
        self.steps_per_epoch = 0
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
        self._locate_cells()
        self.ran = set()  # a (re)opened page may have a new kernel

    def _locate_cells(self) -> None:
        found = self.page.evaluate(
            """(markers) => {
                const out = {};
                const cells = window.jupyterapp.shell.currentWidget.content.widgets;
                for (const [name, marker] of Object.entries(markers)) {
                    const i = cells.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(marker));
                    if (i >= 0) { out[name] = i; cells[i].node.setAttribute('data-nbtest', name); }
                }
                return out;
            }""",
            self.markers,
        )
        missing = sorted(set(self.markers) - set(found))
        if missing:
            raise LookupError(f"cells not found in {self.name}: {missing} (markers {self.markers})")
        self.index = found

    def kernel_supports_subshells(self) -> bool:
        return bool(self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.supportsSubshells"
        ))

    # ------------------------------------------------------------------ running cells

    def start(self, cell: str) -> None:
        """Run one cell without waiting for it (``notebook:run-cell`` on that cell only)."""
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

    # ------------------------------------------------------------------ reading the page

    def read(self, cell: str) -> dict[str, Any]:
        """What the cell's output shows now (bars, status line and its colour, images, text, page time)."""
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

    def watch(self, cell: str) -> None:
        """Log every change of the cell's output with the page's clock (see :meth:`timeline`)."""
        self.page.evaluate("([i, name]) => window.__nbt.watch(i, name)", [self.index[cell], cell])

    def timeline(self, cell: str) -> list[dict[str, Any]]:
        """``[{t, text}]``: the output's text after each change since :meth:`watch` (page clock, ms)."""
        return self.page.evaluate("(name) => window.__nbt.log[name] || []", cell)

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

    def image_digest(self, src: str) -> str | None:
        try:
            return self.page.evaluate("(src) => window.__nbt.sha(src)", src)
        except Exception:  # a blob URL revoked by a newer frame in between
            return None

    def widget_errors(self) -> list[str]:
        found = list(self.page.evaluate("() => window.__nbt ? window.__nbt.errors() : []"))
        found += [line for line in self.console if any(e in line for e in WIDGET_ERRORS)]
        return found

    def color(self, expression: str) -> str:
        return self.page.evaluate("(e) => window.__nbt.color(e)", expression)

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
    out["imgs"] = [{**img, "src": img["src"][:40]} for img in out.get("imgs", [])]
    return out


# ---------------------------------------------------------------------- parsing what the page shows

_EPOCH = re.compile(r"epoch (\d+)/(\d+)")


def steps_shown(reading: dict[str, Any], steps_per_epoch: int) -> int | None:
    """The training steps a live ProgressBar/Dashboard says are done (during fit's validation
    of epoch ``e``: all of epoch ``e``'s steps); None when no epoch is shown yet."""
    bars = reading.get("bars") or []
    match = _EPOCH.search(bars[0]["label"]) if bars else None
    if len(bars) < 2 or not match:
        return None
    epoch = int(match.group(1))
    if bars[1]["label"] == "train":
        return (epoch - 1) * steps_per_epoch + int(bars[1]["value"])
    if bars[1]["label"] == "eval":
        return epoch * steps_per_epoch
    return None


def run_progress(reading: dict[str, Any]) -> float | None:
    """How far a live ProgressBar/Dashboard says the run is, in % of its training.

    ``(epochs done + share of the current epoch's training steps) / epochs``,
    read from the two ``<progress>`` elements (the epoch bar, then the phase
    bar: ``train`` steps, or ``eval`` once the epoch's training is done).  It
    only grows while the run goes on; None when no bars are shown yet.
    """
    bars = reading.get("bars") or []
    if len(bars) < 2 or not _EPOCH.search(bars[0]["label"]) or not bars[0]["max"]:
        return None
    epoch_bar, phase_bar = bars[0], bars[1]
    if phase_bar["label"] == "train":
        share = phase_bar["value"] / phase_bar["max"] if phase_bar["max"] else 0.0
    elif phase_bar["label"] == "eval":
        share = 1.0
    else:
        return None
    return 100.0 * (epoch_bar["value"] + share) / epoch_bar["max"]


def plot_images(reading: dict[str, Any], widget: bool) -> list[dict[str, Any]]:
    """The plot images of an output (live widget images, or the snapshot's data-URI image), 1x1 placeholder excluded."""
    return [img for img in reading.get("imgs", []) if img["widget"] == widget and img["width"] > 100]


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
