"""Do the notebooks fit a mybinder.org session? Memory and start-up, as a student runs them.

mybinder.org guarantees 1 GB per user (2 GB at most) and culls idle sessions; a
class of students opens the first notebook and runs it top to bottom. Every
notebook a class opens (the five English and the five Chinese ones) is measured
where the Binder replay runs it (tests/binder/replay.py: the Binder image, started
through ``binder/start``, every cell in order under nbval in a fresh kernel, the
data baked in by ``postBuild`` and the download URL a closed port, so any
download attempt fails the notebook). That run measures as it goes
(tests/classroom/_nbval_figures.py), so the notebooks are not run again here:

* the peak resident memory of the kernel and all its children is sampled from
  ``/proc`` (see :mod:`tests.classroom._procmem`) and must stay under 1 GB;
* the first training cell of the first notebook (each language) must start
  within 10 s of the kernel being ready (issue 20: it opens and trains at once).
  What is bounded is the kernel's CPU time over that span, which does not depend
  on what else the machine runs; the wall time is printed beside it.

Each notebook's figures are printed in the terminal summary, under "classroom
replays" (``docs/teaching.md`` quotes them). Whether every cell passed is the
replay's test (tests/binder/test_binder_replay.py), not this one's. One torch
thread, as every test here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.binder.replay import NOTEBOOKS, NOTES, binder_notebook_run

pytestmark = pytest.mark.binder

FIRST_NOTEBOOK = "1_callback_tutorial.ipynb"

#: mybinder.org's per-user guarantee (Kubernetes "1G": 10**9 bytes).
BINDER_GUARANTEE_BYTES = 10**9
#: Issue 20: the first training cell starts within 10 s of the kernel being ready.
STARTUP_LIMIT_S = 10.0


def describe(notebook: str, figures: dict[str, Any]) -> str:
    """One line of figures, as printed in the terminal summary."""
    startup = (
        "no training cell"
        if figures["training_cell"] is None
        else f"first training cell ({figures['training_cell']}) started {figures['startup_s']:.1f} s after the kernel "
        f"was ready ({figures['startup_cpu_s']:.1f} CPU s)"
    )
    return (
        f"{notebook}: peak {figures['peak_bytes'] / 2**20:.0f} MiB (kernel + children, "
        f"{figures['processes']} process(es); kernel high-water {figures['kernel_hwm_bytes'] / 2**20:.0f} MiB), "
        f"{startup}, whole notebook {figures['run_s']:.0f} s ({figures['run_cpu_s']:.0f} CPU s)"
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[name.removeprefix("notebooks/") for name in NOTEBOOKS])
def test_notebook_fits_binder(notebook: str, tmp_path_factory: pytest.TempPathFactory, mnist_mirror: str) -> None:
    run = binder_notebook_run(tmp_path_factory, mnist_mirror)
    figures = run.figures.get(notebook)
    assert figures is not None, f"{notebook} was not measured in the Binder replay's run:\n{run.report([notebook])}"
    line = describe(notebook, figures)
    NOTES.append(f"memory and start-up: {line}")

    assert figures["peak_bytes"] < BINDER_GUARANTEE_BYTES, (
        f"{line}: above mybinder.org's 1 GB guarantee; a student's session may be killed"
    )
    if Path(notebook).name == FIRST_NOTEBOOK:
        assert figures["training_cell"] is not None, f"{notebook} never calls .train( or .fit("
        # The bound is on the kernel's CPU time: on this shared machine the wall time of
        # the cells before training (mostly ``import torch``, disk-bound when other jobs
        # run) swings from 3 s to 20 s, while the work done stays at 3-4.5 CPU s.
        # On a session of its own (Binder, a Codespace) the wall time is close to it.
        assert figures["startup_cpu_s"] < STARTUP_LIMIT_S, (
            f"{line}: the first training cell must start within {STARTUP_LIMIT_S:.0f} s of the kernel being ready"
        )
