"""Run the notebooks as tests (nbval) against a loopback MNIST mirror.

nbval's cell items are not pytest functions, so fixtures do not reach them;
this hook starts one mirror for the session before the first notebook kernel
starts and points the kernels at it (and at a temporary data folder) through
the environment they inherit. ``$XDG_CACHE_HOME`` is a temporary folder too,
so the checkpoints and summaries the notebooks write (under
``nbcallback.paths.run_dir``) never reach the checkout or the user's cache.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

_STATE: dict = {}


def _start_mirror() -> None:
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo))
    from tests.support.mirror import LoopbackServer, mnist_zip

    folder = Path(tempfile.mkdtemp(prefix="nbcallback-nb-mirror-"))
    shutil.copy(mnist_zip(), folder / "MNIST_Data.zip")
    server = LoopbackServer(folder).__enter__()
    data = Path(tempfile.mkdtemp(prefix="nbcallback-nb-data-"))
    _STATE.update(server=server, folders=[folder, data])
    os.environ["NBCALLBACK_MNIST_URL"] = f"{server.url}/MNIST_Data.zip"
    os.environ.setdefault("NBCALLBACK_DATA", str(data))
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A notebook's cells share one kernel and run in order: under pytest-xdist they go to one worker."""
    for item in items:
        if item.path.suffix == ".ipynb" and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(f"notebook {item.path.parent.name}/{item.path.name}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # A mirror or data folder chosen by the caller (the Binder replay, a classroom
    # image) wins; otherwise serve ../shared's zip on loopback.
    if item.path.suffix == ".ipynb" and "started" not in _STATE:
        _STATE["started"] = True
        if not os.environ.get("NBCALLBACK_MNIST_URL"):
            _start_mirror()


#: nbval's sanitizer for the output-checked cells: the last float digits, which the CPU type moves, are not compared.
FLOAT_DIGITS = Path(__file__).resolve().parent / "nbval-float-digits.cfg"


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "nbval_sanitize_with", "unset") is None:
        config.option.nbval_sanitize_with = str(FLOAT_DIGITS)
    cache = Path(tempfile.mkdtemp(prefix="nbcallback-nb-cache-"))
    _STATE["cache"] = (cache, os.environ.get("XDG_CACHE_HOME"))
    os.environ["XDG_CACHE_HOME"] = str(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    cache, previous = _STATE.pop("cache", (None, None))
    if cache is not None:
        if previous is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = previous
        shutil.rmtree(cache, ignore_errors=True)
    server = _STATE.pop("server", None)
    if server is not None:
        server.__exit__(None, None, None)
    for folder in _STATE.pop("folders", []):
        shutil.rmtree(folder, ignore_errors=True)
