"""The benchmark suite runs: ``python -m benchmarks --quick`` writes a valid report, every script keeps its CLI.

Only structure is checked here, never timings (the suite's numbers are
meaningless on a busy CI machine; see benchmarks/run.py for the real runs).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def test_quick_run_writes_json_and_png(mnist_root, tmp_path):
    report_path, png_path = tmp_path / "report.json", tmp_path / "chart.png"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--no-peers", "--only", "train",
         "--data", str(mnist_root), "--json", str(report_path), "--png", str(png_path)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["meta"]["threads"] == 1 and report["meta"]["quick"] is True
    assert report["meta"]["loadavg_start"] and report["meta"]["torch"]
    train = report["comparisons"]["train"]
    assert train["reference"] == "bare"
    assert {"bare", "nbcallback", "nbcallback_pipeline"} <= set(train["variants"])
    ratio = train["ratios"]["nbcallback"]
    assert ratio["target"] == 1.05 and ratio["ratio"]["median"] > 0
    runs = train["runs"]
    # Same seed, same batches: the bare loop and Model.train did exactly the same work.
    assert runs["bare"][0]["test_accuracy"] == pytest.approx(runs["nbcallback"][0]["test_accuracy"], abs=2e-3)
    assert runs["nbcallback"][0]["files"] == ["mnist-1_60.ckpt", "mnist-graph.meta"]
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| train |" in proc.stdout


def test_merge_replaces_only_the_comparisons_run(mnist_root, tmp_path):
    sys.path.insert(0, str(REPO))
    from benchmarks import run

    runs = {v: [{"value": x, "unit": "s", "build_s": 0.15} for x in values]
            for v, values in {"pipeline_bare": [0.10, 0.11], "pipeline": [0.08, 0.09]}.items()}
    kept = json.loads(json.dumps(run.analyse("pipeline", run.COMPARISONS["pipeline"], runs)))
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps({"meta": {"command": "earlier full run"}, "comparisons": {"pipeline": kept}}))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "import", "--merge", "--data", str(mnist_root),
         "--json", str(report_path), "--png", "-"],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["comparisons"]["pipeline"] == kept  # untouched
    assert "import_nbcallback" in report["comparisons"]["import"]["variants"]
    assert report["meta"]["command"] == "earlier full run"
    assert report["meta"]["updates"][0]["comparisons"] == ["import"]


def test_analysis_table_and_chart_from_synthetic_runs(tmp_path):
    sys.path.insert(0, str(REPO))
    from benchmarks import run

    def result(value, **extra):
        return {"value": value, "unit": "s", **extra}

    comparisons = {}
    fake = {
        "train": {"bare": [2.0, 2.1], "nbcallback": [2.05, 2.12], "lightning": [3.0, 3.1], "keras": [3.5, 3.6]},
        "amp": {"bare": [2.0, 2.0], "bare_amp": [1.5, 1.6], "nbcallback_amp": [1.52, 1.62]},
        "pipeline": {"pipeline_bare": [0.10, 0.11], "pipeline": [0.08, 0.09]},
        "widgets": {"widgets_none": [2.0, 2.0], "widgets_text": [2.03, 2.04], "widgets_off": [2.0, 2.01]},
        "eval": {"eval_bare": [0.10, 0.10], "eval_bare_loss": [0.102, 0.103], "eval_model": [0.104, 0.104],
                 "eval_nbcallback": [0.105, 0.104]},
    }
    for name, variants in fake.items():
        runs = {v: [result(x, step_p10_ms=x, cpu_seconds=x, build_s=0.15) for x in values]
                for v, values in variants.items()}
        comparisons[name] = run.analyse(name, run.COMPARISONS[name], runs)
    assert comparisons["train"]["ratios"]["nbcallback"]["ratio"]["median"] == pytest.approx((2.05 / 2.0 + 2.12 / 2.1) / 2)
    assert comparisons["train"]["ratios"]["nbcallback"]["meets_target"] is True
    assert comparisons["amp"]["ratios"]["nbcallback_amp/bare_amp"]["target"] == 1.05
    assert comparisons["widgets"]["ratios"]["widgets_text"]["meets_target"] is False
    assert comparisons["pipeline"]["absolute"]["pipeline.build_s"]["meets_target"] is True
    assert comparisons["eval"]["ratios"]["eval_nbcallback/eval_bare"]["target"] == 1.1
    assert comparisons["eval"]["ratios"]["eval_model/eval_bare"]["target"] == 1.1
    assert "eval_nbcallback/eval_bare_loss" in comparisons["eval"]["ratios"]
    report = {"meta": {"cpu": "test", "cpus": 2, "torch": "x", "threads": 1, "rounds": 2}, "comparisons": comparisons}
    text = run.table(report)
    assert "MISSED" in text and "| eval |" in text
    run.draw(report, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").stat().st_size < 200_000


@pytest.mark.parametrize("script", ["benchmarks/run.py", "benchmarks/train.py", "benchmarks/pipeline.py",
                                    "benchmarks/widgets.py", "benchmarks/workloads.py"])
def test_scripts_run_standalone(script):
    proc = subprocess.run([sys.executable, script, "--help"], cwd=REPO, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage" in proc.stdout.lower()


def test_module_entry_point_help():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=REPO, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for option in ("--rounds", "--threads", "--only", "--quick", "--json", "--png", "--data"):
        assert option in proc.stdout


def test_device_suite_runs_its_script_on_the_cpu_and_refuses_cuda_without_a_gpu(mnist_root, tmp_path):
    """``python -m benchmarks --device ...`` (benchmarks/cuda.py) keeps working where CI can run it."""
    report_path = tmp_path / "device.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--device", "cpu", "--quick", "--no-counts", "--no-peers",
         "--only", "bare,nbcallback,bare_host_batches,nbcallback_pipeline,nbcallback_pipeline_prefetch",
         "--data", str(mnist_root), "--json", str(report_path)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["meta"]["device"] == "cpu" and report["meta"]["steps_per_epoch"] == 60
    assert report["ratios"]["nbcallback"]["reference"] == "bare"
    assert report["ratios"]["nbcallback_pipeline_prefetch"]["reference"] == "bare_host_batches"
    assert set(report["targets"]) == {"nbcallback", "nbcallback_pipeline"}
    assert "| nbcallback_pipeline |" in report_path.with_suffix(".md").read_text()
    if not __import__("torch").cuda.is_available():
        refused = subprocess.run([sys.executable, "-m", "benchmarks", "--device", "cuda", "--data", str(mnist_root)],
                                 cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and "no CUDA device is available" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_step_overhead_case_writes_per_step_figures_and_ratios_to_bare(tmp_path):
    """``python -m benchmarks --step-overhead``: per-step µs of each variant, paired with the bare loop of its round."""
    report_path = tmp_path / "overhead.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--step-overhead", "--rounds", "2", "--steps", "20",
         "--json", str(report_path)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    variants = report["variants"]
    assert list(variants) == ["bare loop", "Model.train, no callbacks", "+ LossMonitor(300)", "+ TimeMonitor()",
                              "+ ModelCheckpoint", "+ all three"]
    assert variants["bare loop"]["cpu_ratio"] == 1.0 and variants["bare loop"]["cpu_over_bare_us"] == 0.0
    for figures in variants.values():
        assert len(figures["cpu_us_runs"]) == 2 and figures["wall_us"] > 0 and figures["cpu_ratio"] > 0
    # The deterministic column: Model.train runs more Python per step than the bare loop, the callbacks more still.
    calls = {name: figures["python_calls_per_step"] for name, figures in variants.items()}
    assert calls["bare loop"] < calls["Model.train, no callbacks"] < calls["+ all three"]
    assert report["meta"]["commit"] and report["meta"]["loadavg_start"]
    table = report_path.with_suffix(".md").read_text()
    assert "| + all three |" in table and "CPU µs over bare" in table
