"""A pytest plugin for a notebook run under nbval: each notebook's memory and start-up, as a student runs it.

Loaded with ``-p tests.classroom._nbval_figures`` by the Binder replay (tests/binder/replay.py), so the run
that checks every cell of every notebook in the Binder image also measures what
tests/classroom/test_binder_memory.py asserts, instead of a second run of the notebooks:

* from the moment nbval's kernel for a notebook is ready, the summed resident memory of the kernel and all its
  children is sampled from ``/proc`` (:class:`tests.classroom._procmem.TreeMemorySampler`), and the kernel's own
  high-water mark read, after every cell too, while the kernel still lives;
* the kernel's CPU time from ready to the start of the first cell that calls ``.train(`` or ``.fit(``
  (issue 20: the first training cell starts within 10 s of the kernel being ready), with the wall time beside it.

One JSON line per notebook is appended to ``$NBCALLBACK_NOTEBOOK_FIGURES`` (the path relative to the folder
pytest runs in, and the figures). Stdlib and ``/proc`` only: it runs in the replay's own environment.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.classroom._procmem import TreeMemorySampler, tree_cpu_seconds

FIGURES_ENV = "NBCALLBACK_NOTEBOOK_FIGURES"
TRAINING_CALL = re.compile(r"\.(train|fit)\(")

_RUNS: dict[Path, dict[str, Any]] = {}


def _kernel_pid(item: pytest.Item) -> int | None:
    kernel = getattr(item.parent, "kernel", None)
    manager = getattr(kernel, "km", None)
    provisioner = getattr(manager, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    if pid is None:  # jupyter_client < 7: the process itself
        pid = getattr(getattr(manager, "kernel", None), "pid", None)
    return pid


def _source(item: pytest.Item) -> str:
    cell = getattr(item, "cell", None)
    return "" if cell is None else str(cell.get("source", ""))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield
    if item.path.suffix != ".ipynb" or item.path in _RUNS:
        return
    pid = _kernel_pid(item)
    if pid is None:
        return
    _RUNS[item.path] = {
        "pid": pid,
        "ready": time.perf_counter(),
        "ready_cpu": tree_cpu_seconds(pid),
        "sampler": TreeMemorySampler(pid, interval=0.25).start(),
        "training_cell": None,
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    run = _RUNS.get(item.path)
    if run is not None and run["training_cell"] is None and TRAINING_CALL.search(_source(item)):
        run["training_cell"] = item.name
        run["startup_s"] = time.perf_counter() - run["ready"]
        run["startup_cpu_s"] = tree_cpu_seconds(run["pid"]) - run["ready_cpu"]
    yield
    if run is not None:
        run["sampler"]._sample()  # the kernel's high-water mark, while it still lives
        run["last_cpu"] = tree_cpu_seconds(run["pid"])
        run["done"] = time.perf_counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    run = _RUNS.get(item.path)
    if run is not None and "sampler" in run and (nextitem is None or nextitem.path != item.path):
        sampler = run.pop("sampler")
        sampler.stop()  # before nbval's teardown stops the kernel
        figures = {
            "notebook": os.path.relpath(item.path, Path.cwd()).replace(os.sep, "/"),
            "peak_bytes": sampler.peak_bytes,
            "kernel_hwm_bytes": sampler.kernel_hwm_bytes,
            "processes": sampler.peak_processes,
            "training_cell": run["training_cell"],
            "startup_s": run.get("startup_s"),
            "startup_cpu_s": run.get("startup_cpu_s"),
            "run_s": run.get("done", run["ready"]) - run["ready"],
            "run_cpu_s": run.get("last_cpu", run["ready_cpu"]) - run["ready_cpu"],
        }
        path = os.environ.get(FIGURES_ENV)
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(figures) + "\n")
    yield
