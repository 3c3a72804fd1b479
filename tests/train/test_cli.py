"""``python -m nbcallback``: the tutorial end to end in a subprocess."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "nbcallback", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_cli_one_epoch(mnist_mirror, tmp_path):
    pytest.importorskip("nbcallback.dataset")
    data, ckpt = tmp_path / "data", tmp_path / "ckpt"
    proc = run_cli(["--epochs", "1", "--url", mnist_mirror, "--data-dir", str(data), "--checkpoint-dir", str(ckpt),
                    "--no-progress", "--seed", "0"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    loss_steps = [m.group(1) for l in lines if (m := re.match(r"^epoch: 1 step: (\d+), loss is \d+\.\d+", l))]
    assert loss_steps == ["300", "600", "900"], proc.stdout
    assert any(re.fullmatch(r"Eval result: epoch 1, metrics: \{'accuracy': 0\.\d+\}", l) for l in lines), proc.stdout
    train_time = [l for l in lines if l.startswith("Train epoch time: ")]
    eval_time = [l for l in lines if l.startswith("Eval epoch time: ")]
    assert len(train_time) == 1 and len(eval_time) == 1
    assert re.fullmatch(r"Train epoch time: \d+\.\d{3} ms, per step time: \d+\.\d{3} ms", train_time[0])
    final = [m for l in lines if (m := re.match(r"^Final accuracy: (\d\.\d{4}) \(", l))]
    assert final and float(final[0].group(1)) >= 0.88, proc.stdout
    assert sorted(os.listdir(ckpt)) == ["mnist-1_938.ckpt", "mnist-graph.meta"]
    assert (data / "MNIST_Data" / "train" / "train-images-idx3-ubyte").is_file()


def test_cli_rejects_bad_numbers(capsys):
    from nbcallback.cli import main

    assert main(["--epochs", "0"]) == 2
    assert "--epochs must be positive" in capsys.readouterr().err
    assert main(["--batch-size", "-1"]) == 2


def test_cli_local_zip_is_unpacked(tmp_path):
    """``--url`` with a local zip path: download_mnist refuses file:// URLs, so the CLI unpacks it."""
    import zipfile

    from nbcallback.cli import _mirror_url
    from tests.support.mirror import mnist_zip

    assert _mirror_url("http://127.0.0.1:1/x.zip", str(tmp_path)) == "http://127.0.0.1:1/x.zip"
    assert _mirror_url(None, str(tmp_path)) is None
    assert _mirror_url(str(mnist_zip()), str(tmp_path)) is None
    pytest.importorskip("nbcallback.dataset")
    from nbcallback.dataset import download_mnist

    assert download_mnist(tmp_path, progress=False) == tmp_path / "MNIST_Data"  # verified, no network
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("MNIST_Data/train/train-images-idx3-ubyte", b"short")
    with pytest.raises(SystemExit, match="train-images-idx3-ubyte"):
        _mirror_url(str(bad), str(tmp_path / "other"))
