"""A data-parallel script ends cleanly although gloo's threads may still hold its tensors (``exit_worker.py``).

gloo's worker threads let go of a finished collective's tensors a moment after it returns; a tensor Python has
dropped by then needs the GIL, and during the interpreter's finalisation that aborts the process ("terminate called
without an active exception", SIGABRT, pytorch/pytorch#179291; docs/distributed.md, "A clean exit", has the
measured launches). nbcallback keeps its collectives on gloo groups of its own and joins their threads at exit.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ddp.support import run_job

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("exit_worker.py")


def test_a_script_with_votes_in_flight_exits_cleanly_on_every_rank(tmp_path: Path) -> None:
    # 30 votes in flight make the abort likely on the code before the fix (docs/distributed.md has the count).
    proc = run_job(WORKER, ["script", str(tmp_path)], nproc=2, timeout=120)
    output = proc.stdout + proc.stderr
    assert "terminate called" not in output, output[-3000:]
    assert proc.returncode == 0, output[-3000:]
    assert sorted(line for line in proc.stdout.splitlines() if "evaluated" in line) == [
        "rank 0 evaluated ['accuracy', 'loss']", "rank 1 evaluated ['accuracy', 'loss']",
    ]


def test_closing_joins_every_thread_the_groups_started(tmp_path: Path) -> None:
    proc = run_job(WORKER, ["threads", str(tmp_path)], nproc=2, timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for rank in range(2):
        counts = json.loads((tmp_path / f"threads{rank}.json").read_text())
        assert counts["used"] > counts["before"]  # the groups run threads of their own (gloo's workers, its loop)
        assert counts["closed"] <= counts["before"], counts  # all joined before the interpreter finalises
