"""``python -m pytest notebooks/<name>.ipynb``, nbval's way to test one notebook, under the project's options.

pyproject.toml's ``addopts`` run the tests in several processes (pytest-xdist, ``--dist loadgroup``), and a plugin
may reorder the tests (pytest-randomly); a notebook's cells share one kernel, so they must all go to one worker and
run there in the notebook's order, or cell 2 meets a ``NameError`` for what cell 1 imported (notebooks/conftest.py).
The run below names one notebook on the command line, as a user would, with two workers and a plugin that reverses
the order of the tests; only the first cells run (the rest are deselected), which is enough: the later ones use
what the earlier ones defined.

A notebook named on the command line also runs when the Binder replay is part of the run (which otherwise takes
the notebooks over from the main suite: tests/conftest.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The Chinese twin: its conftest.py is one folder up, as a notebook in notebooks/zh_CN/ finds it.
NOTEBOOK = "notebooks/zh_CN/3_custom_callbacks.ipynb"
#: Its first cells: Colab's install cell, the imports and MNIST slices, the Recorder callback and three runs that
#: use the names the cells before defined.
CELLS = 6

pytestmark = pytest.mark.cli  # pytest and a notebook kernel in subprocesses

REVERSE = '''\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    items.reverse()  # what a shuffling plugin may do to a notebook's cells
'''


def _pytest(args: list[str], plugins: Path) -> subprocess.CompletedProcess[str]:
    # A fresh pytest, not this one's worker (xdist's variables left out).
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT"))}
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(plugins), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def _cells(text: str) -> list[int]:
    return [int(n) for n in re.findall(rf"^{re.escape(NOTEBOOK)}::Cell (\d+)$", text, flags=re.MULTILINE)]


def test_a_notebook_named_on_the_command_line_runs_in_one_kernel_in_order(mnist_mirror: str, tmp_path: Path) -> None:
    (tmp_path / "reverse_items.py").write_text(REVERSE)
    total = len(_cells(_pytest(["--collect-only", "-q", "-n", "0", NOTEBOOK], tmp_path).stdout))
    assert total > CELLS
    later = [f"--deselect={NOTEBOOK}::Cell {n}" for n in range(CELLS, total)]
    # pyproject's addopts (nbval, -n auto --dist loadgroup), then two workers whatever the CPU count, and the
    # reversing plugin in the controller and in both workers.
    proc = _pytest([NOTEBOOK, "-n", "2", "-p", "reverse_items", "-v", *later], tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert f"{CELLS} passed" in output, output[-3000:]
    ran = re.findall(rf"\[(gw\d+)\][^\n]*PASSED {re.escape(NOTEBOOK)}::Cell (\d+)", output)
    assert [int(cell) for _, cell in ran] == list(range(CELLS)), output[-3000:]  # in the notebook's order
    assert len({worker for worker, _ in ran}) == 1, ran  # on one worker: one kernel


def test_a_named_notebook_runs_beside_the_binder_replay(tmp_path: Path) -> None:
    replay = "tests/binder/test_binder_replay.py"
    named = _pytest(["--collect-only", "-q", "-n", "0", replay, NOTEBOOK], tmp_path)
    assert named.returncode == 0, named.stdout[-3000:] + named.stderr[-3000:]
    assert _cells(named.stdout)[:2] == [0, 1], named.stdout[-3000:]
    # A folder names no notebook in particular: the replay runs them, the main suite leaves them to it.
    folder = _pytest(["--collect-only", "-q", "-n", "0", replay, "notebooks/zh_CN"], tmp_path)
    assert folder.returncode == 0, folder.stdout[-3000:] + folder.stderr[-3000:]
    assert _cells(folder.stdout) == [] and "deselected" in folder.stdout, folder.stdout[-3000:]
