"""The Chinese notebooks run as tests like the English ones, and the READMEs link to each other."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
ZH = sorted((REPO / "notebooks" / "zh_CN").glob("*.ipynb"))


def test_every_chinese_notebook_is_collected_by_nbval() -> None:
    english = {path.name for path in (REPO / "notebooks").glob("*.ipynb")}
    assert {path.name for path in ZH} == english, "every English notebook has its Chinese twin, and only those"
    assert len(english) >= 7  # 1, 1b, 2, 3, 3b, 4, 5
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "notebooks/zh_CN"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    collected = {line.split("::", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    missing = [nb.name for nb in ZH if f"notebooks/zh_CN/{nb.name}" not in collected]
    assert not missing, f"Chinese notebooks not collected by nbval: {missing}"


@pytest.mark.parametrize("path", ZH, ids=lambda path: path.name)
def test_committed_with_outputs_and_no_widget_state(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), f"{path.name} has unexecuted cells"
    assert any(cell.outputs for cell in code), f"{path.name} was committed without outputs"
    assert "widgets" not in notebook.metadata, f"{path.name} carries saved widget state"
    assert not [c for c in code for o in c.outputs if o.output_type == "error"], f"{path.name} saved an error"
    assert path.stat().st_size < 400_000


def test_mindspores_printed_lines_stay_in_english() -> None:
    """The lines MindSpore prints read the same in both versions (its Chinese docs keep them in English)."""
    text = "".join(
        out.get("text", "")
        for cell in nbformat.read(REPO / "notebooks/zh_CN/1_callback_tutorial.ipynb", as_version=4).cells
        if cell.cell_type == "code" for out in cell.outputs
    )
    assert re.search(r"^epoch: 1 step: 300, loss is \d", text, re.M)
    assert re.search(r"^Eval result: epoch 1, metrics: \{'accuracy': 0\.9", text, re.M)
    assert re.search(r"^Train epoch time: [\d.]+ ms, per step time: [\d.]+ ms", text, re.M)


def test_readmes_link_each_other_and_the_badge_opens_the_chinese_notebook() -> None:
    english = (REPO / "README.md").read_text(encoding="utf-8")
    chinese = (REPO / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "(README.zh-CN.md)" in english.split("## ", 1)[0], "README.md links to the Chinese README near the top"
    assert "(README.md)" in chinese.split("## ", 1)[0]
    badge = re.search(r"\(https://mybinder\.org/v2/gh/[^)]+\)", chinese)
    assert badge and badge.group(0).endswith("urlpath=lab/tree/notebooks/zh_CN/1_callback_tutorial.ipynb)")
    english_badge = re.search(r"\(https://mybinder\.org/v2/gh/[^)?]+", english)
    assert english_badge and badge.group(0).startswith(english_badge.group(0))  # same repository and branch
    for link in re.findall(r"\]\((notebooks/[^)#]+)\)", chinese):
        assert (REPO / link).exists(), f"README.zh-CN.md links to a missing {link}"
