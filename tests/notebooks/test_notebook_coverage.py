"""Every notebook in notebooks/ runs as a test under the README's test command."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_pytest_configuration_runs_the_notebooks() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "notebooks" in options["testpaths"]
    assert "--nbval-lax" in options["addopts"] or "--nbval " in options["addopts"] + " "


def test_every_notebook_is_collected() -> None:
    assert NOTEBOOKS, "notebooks/ holds no notebook"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "notebooks"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    collected = {line.split("::", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    missing = [nb.name for nb in NOTEBOOKS if f"notebooks/{nb.name}" not in collected]
    assert not missing, f"notebooks not collected by nbval: {missing}"


def test_committed_notebooks_have_outputs_and_no_widget_state() -> None:
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        assert all(cell.execution_count for cell in code), f"{path.name} has unexecuted cells"
        assert any(cell.outputs for cell in code), f"{path.name} was committed without outputs"
        assert "widgets" not in notebook.metadata, f"{path.name} carries saved widget state"
        size = path.stat().st_size
        assert size < 400_000, f"{path.name} is {size} bytes; keep committed notebooks small"
