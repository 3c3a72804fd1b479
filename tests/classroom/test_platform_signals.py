"""Notebook 2's OnRequestExit demonstration on every platform (issue 44, item 4): nbcallback.signals.send_to_self.

``os.kill(os.getpid(), SIGTERM)`` ends a Windows process outright (TerminateProcess); ``send_to_self`` raises
the signal inside the process, where OnRequestExit's handler catches it, and refuses when nothing would catch
it. Checked here on Linux, in a fresh interpreter each time (a signal is process-wide)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_send_to_self_stops_a_training_through_on_request_exit(tmp_path: Path) -> None:
    """As ``os.kill`` does on Linux: the signal sent after step 3, OnRequestExit stops after the next step's end
    (its own step_end hook ran before the sender's at step 3), saves, and the process goes on."""
    code = """
import os, signal
import torch
from torch import nn
from nbcallback.signals import send_to_self
from nbcallback.train import LambdaCallback, Model, OnRequestExit

def at_step_3(run_context):
    if run_context.original_args().cur_step_num == 3:
        SEND()

torch.manual_seed(0)
data = [(torch.randn(4, 3), torch.randint(0, 2, (4,))) for _ in range(5)]
net = nn.Linear(3, 2)
steps = []
Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1)).train(
    2, data, callbacks=[OnRequestExit(directory="exit"), LambdaCallback(on_train_step_end=at_step_3),
                        LambdaCallback(on_train_step_end=lambda rc: steps.append(rc.original_args().cur_step_num))])
print("steps", steps)
print("alive")
"""
    outputs = []
    for name, send in (("kill", "os.kill(os.getpid(), signal.SIGTERM)"), ("portable", "send_to_self()")):
        folder = tmp_path / name
        folder.mkdir()
        result = _python(code.replace("SEND()", send), folder)
        assert result.returncode == 0, result.stderr
        assert "alive" in result.stdout
        assert (folder / "exit" / "Net_train.ckpt").is_file(), name
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == "steps [1, 2, 3, 4]\nalive\n"


def test_send_to_self_refuses_where_nothing_catches_the_signal(tmp_path: Path) -> None:
    code = """
from nbcallback.signals import NoHandlerError, send_to_self
try:
    send_to_self()
except NoHandlerError as error:
    print("refused:", error)
print("alive")
"""
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "refused: no Python handler is installed for SIGTERM in this process" in result.stdout
    assert "OnRequestExit(sig=signal.SIGTERM)" in result.stdout and "alive" in result.stdout
