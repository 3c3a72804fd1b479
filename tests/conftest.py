"""Fixtures shared by every test suite.

* Torch runs on one thread: on a shared 2-core machine the default of one
  thread per core can slow an epoch twenty-fold when the other core is busy.
* MNIST comes from a loopback mirror of ``../shared/data/MNIST_Data.zip``
  through :func:`nbcallback.dataset.download_mnist`, the real download path.
* Tests marked ``slow`` are skipped unless asked for (``-m slow`` or ``NBCALLBACK_SLOW=1``).
* ``$XDG_CACHE_HOME`` points at a temporary folder for the whole session (also
  for subprocesses and kernels), so whatever a test writes to the default
  places (``~/.cache/nbcallback``: MNIST, the runs' checkpoints) lands there,
  never in the checkout or the user's cache.
* Parallel runs (pytest-xdist; pyproject's ``addopts`` asks for ``-n auto --dist loadgroup``): the tests that
  share a session-wide build run on one worker (:data:`GROUPS`), the others with their module's tests, the
  longest groups start first (:data:`FIRST`, then the modules that start processes, :data:`HEAVY`), ``auto``
  counts the CPUs this process may use (its affinity and its cgroup's quota), and what the suites print at the
  end (reliability seeds, browser notes, replay timings) is sent from the workers and printed once. ``-n 0`` runs
  everything in one process.
* The ten notebooks run once: when the Binder replay (which runs every notebook under nbval, the same options,
  through ``binder/start``) is part of the run, the main suite's own nbval items of those notebooks are
  deselected; without it (``-m "not binder"``, ``pytest notebooks``) they run here as usual, and so does a
  notebook named on the command line (``pytest tests notebooks/1_callback_tutorial.ipynb``).
* ``-m quick``: the quick loop (docs/development.md): the unit tests of every package, without the tests that
  start processes or kernels, train on full MNIST or drive a browser (:data:`QUICK_FOLDERS`, :data:`NOT_QUICK`,
  :data:`NOT_QUICK_TESTS`).
"""
from __future__ import annotations

import inspect
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.support.mirror import LoopbackServer, mnist_zip

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

_SESSION_CACHE: dict[str, str | None] = {}
REPO = Path(__file__).resolve().parents[1]

#: Marker (or folder under tests/) -> xdist group: the tests of a group run on one worker, so a session-wide
#: build (the Binder replay's virtual environment and notebook run, tests/binder/replay.py; JupyterLab and
#: Chromium, tests/browser) is made once, not once per worker. The first marker an item carries wins; a test
#: marked ``xdist_group`` keeps its own (the Colab replay: tests/classroom/test_colab.py); every other test is
#: grouped with its module, so a module-scoped fixture (a training run, a fork, a DDP job) is built once.
GROUPS: dict[str, str] = {"binder": "binder-replay", "browser": "browser"}
#: The groups that take longest (minutes, one after another), scheduled first so none starts near the end.
FIRST: tuple[str, ...] = ("binder-replay", "colab-replay", "browser")
#: Then the modules whose tests start processes (torchrun jobs, fault injection, ``python -m nbcallback``, assign.py):
#: tens of seconds to minutes each, so they go before the many short unit-test modules, which fill the end of the
#: run on whichever worker is free first instead of one long module running alone at the end (a marker, or a
#: folder under tests/ whose conftest adds the marker later).
HEAVY: tuple[str, ...] = ("ddp", "reliability", "cli")
#: The Binder replay's test that runs every notebook (tests/binder/test_binder_replay.py).
NOTEBOOK_REPLAY = "tests/binder/test_binder_replay.py::test_replay_every_notebook_through_binder_start"
#: The quick loop, ``python -m pytest -m quick`` (docs/development.md): the folders under tests/ of every package
#: (train, dataset, callbacks, widgets, the ported MindSpore tests and tutorials, the layout and step-call checks) ...
QUICK_FOLDERS: tuple[str, ...] = ("train", "dataset", "callbacks", "widgets", "mindspore", "mindspore_docs", "perf",
                                  "test_layout.py")
#: ... without the tests that train on full MNIST for minutes, drive a browser, replay a classroom, start torchrun
#: jobs, inject faults or run ``python -m nbcallback`` in subprocesses (their markers) ...
NOT_QUICK: tuple[str, ...] = ("slow", "browser", "binder", "ddp", "reliability", "cli")
#: ... nor these modules and tests (under tests/): the MindSpore tutorials' and nbcallback's tutorial run on full
#: MNIST, notebook kernels, fresh interpreters (import checks, scripts, kills) and the benchmark scripts, each tens
#: of seconds to minutes. The full suite runs them.
NOT_QUICK_TESTS: tuple[str, ...] = (
    "train/test_tutorial.py",
    "train/test_callback_mechanism.py::test_no_import_cycle_whatever_module_comes_first",
    "train/test_serialization.py::test_interpreter_exit_waits_for_queued_async_saves",
    "dataset/test_ds_callbacks.py::test_the_dataset_package_imports_train_only_for_waited_ds_callback",
    "callbacks/test_backup_and_restore.py::test_sigkill_mid_epoch_then_resume_is_bitwise_identical",
    "callbacks/test_on_request_exit.py::test_sigterm_to_a_training_process_saves_and_exits_cleanly",
    "widgets/test_kernel.py",
    "widgets/test_plot_without_cjk_font.py",
    "widgets/test_marimo.py::test_export_runs_the_example_and_keeps_the_final_snapshot",
    "widgets/test_script_and_plot.py::test_plain_script_prints_readable_text",
    "widgets/test_callbacks.py::test_import_is_light",
    "mindspore_docs/test_callback_r1_9.py",
    "mindspore_docs/test_custom_debugging_info_r1_1.py",
    "mindspore_docs/test_model_r1_9.py",
    "mindspore_docs/test_quick_start_r1_1.py",
    "mindspore_docs/test_quick_start_r1_2.py",
    "perf/test_benchmarks.py",
    "perf/test_imports.py",
)
#: What this process's hooks want printed at the end (a worker sends it to the controller); see below.
_SUMMARY: dict[str, list[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    _SESSION_CACHE["previous"] = os.environ.get("XDG_CACHE_HOME")
    _SESSION_CACHE["folder"] = tempfile.mkdtemp(prefix="nbcallback-tests-cache-")
    os.environ["XDG_CACHE_HOME"] = _SESSION_CACHE["folder"]


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = _SESSION_CACHE.pop("folder", None)
    if folder is None:
        return
    previous = _SESSION_CACHE.pop("previous", None)
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous
    shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (many epochs of full MNIST: minutes each) run only when asked for.

    Asked for: ``pytest -m slow`` (any ``-m`` expression naming ``slow``) or ``NBCALLBACK_SLOW=1``.
    """
    if "slow" in (config.getoption("-m") or "") or os.environ.get("NBCALLBACK_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="many epochs of full MNIST: use -m slow or NBCALLBACK_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


def is_quick(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the quick loop (:data:`QUICK_FOLDERS`, :data:`NOT_QUICK`, :data:`NOT_QUICK_TESTS`)."""
    try:
        parts = item.path.relative_to(REPO / "tests").parts
    except ValueError:
        return False
    if not parts or parts[0] not in QUICK_FOLDERS or any(item.get_closest_marker(name) for name in NOT_QUICK):
        return False
    test = "/".join(parts) + "::" + item.nodeid.split("::", 1)[1] if "::" in item.nodeid else "/".join(parts)
    return not any(test == name or test.startswith((name + "::", name + "[")) for name in NOT_QUICK_TESTS)


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_quick(items: list[pytest.Item]) -> None:
    """Mark the quick loop's tests ``quick`` before ``-m`` selects."""
    for item in items:
        if is_quick(item):
            item.add_marker(pytest.mark.quick)


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test gets an xdist group (before xdist reads them): its build's (:data:`GROUPS`) or its module's;
    the longest groups (:data:`FIRST`) move to the front, then the modules that start processes (:data:`HEAVY`),
    an order that ``--no-loadscope-reorder`` keeps."""
    groups: dict[int, str] = {}
    heavy: set[str] = set()
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            group = next((name for key, name in GROUPS.items()
                          if item.get_closest_marker(key) or REPO / "tests" / key in item.path.parents), None)
            if group is None:
                try:
                    group = item.path.relative_to(REPO).as_posix()
                except ValueError:
                    group = item.path.as_posix()
            item.add_marker(pytest.mark.xdist_group(group))
        else:
            group = str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
        groups[id(item)] = group
        if any(item.get_closest_marker(key) or REPO / "tests" / key in item.path.parents for key in HEAVY):
            heavy.add(group)
    rank = {name: index for index, name in enumerate(FIRST)}
    # Stable: within each rank the groups keep their collection order.
    items.sort(key=lambda item: rank.get(groups[id(item)], len(FIRST) + (groups[id(item)] not in heavy)))


def named_notebooks(config: pytest.Config) -> set[Path]:
    """The notebooks named one by one on the command line (``pytest notebooks/1_callback_tutorial.ipynb``, or one
    of its cells, ``…ipynb::Cell 3``); a folder (``pytest notebooks``) and pyproject's ``testpaths`` name none."""
    source = getattr(config, "args_source", None)
    if source is not None and source.name == "TESTPATHS":
        return set()
    named: set[Path] = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, str(arg).split("::", 1)[0]).resolve()
        if path.suffix == ".ipynb" and path.is_file():
            named.add(path)
    return named


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_notebooks(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-m``/``-k``: drop the notebooks' own nbval items when the Binder replay runs them, except the
    notebooks named on the command line (:func:`named_notebooks`), which run here as asked."""
    replay_file, replay_test = NOTEBOOK_REPLAY.split("::")
    if not any(item.name == replay_test and item.path == REPO / replay_file for item in items):
        return
    from tests.binder.replay import NOTEBOOKS

    replayed = {REPO / name for name in NOTEBOOKS} - named_notebooks(config)
    duplicate = [item for item in items if item.path in replayed]
    if not duplicate:
        return
    config.hook.pytest_deselected(items=duplicate)
    items[:] = [item for item in items if item.path not in replayed]
    _SUMMARY["notebooks"] = [
        f"{len(duplicate)} nbval cells of {len({item.path for item in duplicate})} notebook(s) deselected: "
        f"{NOTEBOOK_REPLAY} runs them all (the same nbval options, in the Binder image); "
        "`python -m pytest notebooks` runs them here"
    ]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: the CPUs this process may run on, capped by its cgroup's CPU quota (a container that sees
    the host's 64 CPUs but may use 2 gets 2 workers, not 64 copies of torch)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


class _Recorder:
    """Stands in for the terminal reporter in a worker: keeps what a ``pytest_terminal_summary`` hook writes."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def section(self, title: str, sep: str = "=", **kwargs: Any) -> None:
        self.lines.append(f"\0section\0{title}\0{sep}")

    def write_sep(self, sep: str, title: str | None = None, **kwargs: Any) -> None:
        self.lines.append(f"\0section\0{title or ''}\0{sep}")

    def write_line(self, line: str, **kwargs: Any) -> None:
        self.lines.append(str(line))

    def write(self, text: str, **kwargs: Any) -> None:
        self.lines.extend(str(text).splitlines())


def _conftest_summaries(config: pytest.Config) -> list[str]:
    """What the conftest files' ``pytest_terminal_summary`` hooks print in this process."""
    recorder = _Recorder()
    for plugin in config.pluginmanager.get_plugins():
        hook = getattr(plugin, "pytest_terminal_summary", None)
        origin = getattr(plugin, "__file__", "") or ""
        if hook is None or Path(origin).name != "conftest.py" or Path(origin).resolve() == Path(__file__).resolve():
            continue
        arguments = {"terminalreporter": recorder, "exitstatus": 0, "config": config}
        wanted = inspect.signature(hook).parameters
        hook(**{name: value for name, value in arguments.items() if name in wanted})
    return recorder.lines


def _replay_summary() -> list[str]:
    """How long the classroom replays' shared builds took, and the notebooks' figures (tests/binder/replay.py)."""
    replay = sys.modules.get("tests.binder.replay")
    if replay is None or not (replay.TIMINGS or replay.NOTES):
        return []
    lines = [f"{name}: {seconds:.0f} s" for name, seconds in replay.TIMINGS.items()]
    return ["\0section\0classroom replays\0=", *lines, *replay.NOTES]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its summaries go to the controller
        workeroutput["nbcallback_summary"] = _conftest_summaries(session.config) + _replay_summary()
        workeroutput["nbcallback_own"] = {key: list(value) for key, value in _SUMMARY.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: collect what a worker's conftest files wanted printed at the end."""
    output = getattr(node, "workeroutput", None) or {}
    _SUMMARY.setdefault("workers", []).extend(output.get("nbcallback_summary", []))
    for key, lines in output.get("nbcallback_own", {}).items():
        if key == "notebooks":
            _SUMMARY["notebooks"] = lines[:1]  # every worker deselects the same items
        else:
            _SUMMARY.setdefault(key, []).extend(lines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _SUMMARY.get("notebooks", [])[:1]:
        terminalreporter.write_line(line)
    sections: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in _SUMMARY.get("workers", []) + _replay_summary():
        if line.startswith("\0section\0"):
            _, _, title, sep = line.split("\0")
            current = sections.setdefault((title, sep), [])
        elif current is not None:
            if line not in current:  # a line every worker writes (a section's heading line) is printed once
                current.append(line)
        else:
            terminalreporter.write_line(line)
    for (title, sep), lines in sections.items():
        terminalreporter.section(title, sep=sep)
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def mnist_mirror(tmp_path_factory: pytest.TempPathFactory):
    """An HTTP server on 127.0.0.1 serving ``MNIST_Data.zip``; yields the zip's URL.

    ``NBCALLBACK_MNIST_URL`` is set for the session so kernels and subprocesses
    started by the tests download from it too.
    """
    folder = tmp_path_factory.mktemp("mirror")
    shutil.copy(mnist_zip(), folder / "MNIST_Data.zip")
    with LoopbackServer(folder) as server:
        url = f"{server.url}/MNIST_Data.zip"
        previous = os.environ.get("NBCALLBACK_MNIST_URL")
        os.environ["NBCALLBACK_MNIST_URL"] = url
        try:
            yield url
        finally:
            if previous is None:
                os.environ.pop("NBCALLBACK_MNIST_URL", None)
            else:
                os.environ["NBCALLBACK_MNIST_URL"] = previous


@pytest.fixture(scope="session")
def mnist_root(mnist_mirror: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the verified ``MNIST_Data/`` tree, downloaded once per session."""
    from nbcallback.dataset import download_mnist

    root = tmp_path_factory.mktemp("mnist")
    download_mnist(root, url=mnist_mirror, progress=False)
    return root / "MNIST_Data"
