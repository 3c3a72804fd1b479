"""Notebook 4's "Try two learning rates and compare" (issue 47), as the saved notebook shows it.

The lesson promises that both runs are drawn on the same axes and that the saved notebook keeps them. Read from
the committed notebooks of both languages (what GitHub and a learner who opens the file see):

* the second run's cell (``Dashboard(..., compare="lr 0.01")``) keeps the earlier run beside the live one: in
  the snapshot's HTML and in its text view (the row of "lr 0.01", its status and its 2 epochs), and a final PNG;
* ``compare()``'s cell keeps a picture of the two runs and their table of final metrics.

nbval checks the cell that lists the runs (its output is compared); this file checks what nbval does not
(it ignores widget outputs). The outputs come from ``notebooks/refresh_outputs.py``: outputs regenerated without
the overlay fail here.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = [REPO / "notebooks" / "4_widgets.ipynb", REPO / "notebooks" / "zh_CN" / "4_widgets.ipynb"]
#: A run's row in a text table of compared runs: its label, a status word, then 2 epochs and numbers.
ROW = r"^\s*{label}\s+\S+\s+2\s+[\d.]+"
#: An HTML table row that names the run "lr 0.01".
TABLE_ROW = re.compile(r"<tr[^>]*>(?:(?!</tr>).)*lr 0\.01(?:(?!</tr>).)*</tr>", re.DOTALL)


def _id(path: Path) -> str:
    return str(path.relative_to(REPO / "notebooks"))


def _cell(path: Path, needle: str) -> nbformat.NotebookNode:
    cells = [cell for cell in nbformat.read(path, as_version=4).cells
             if cell.cell_type == "code" and needle in cell.source]
    assert len(cells) == 1, f"{_id(path)}: {len(cells)} code cells hold {needle!r} (expected one)"
    return cells[0]


def _data(cell: nbformat.NotebookNode, kind: str) -> list[str]:
    return [output["data"][kind] for output in cell.get("outputs", []) if kind in output.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_the_second_run_keeps_the_first_beside_it(path: Path) -> None:
    first = _cell(path, 'ProgressBar(run_label="lr 0.01")')
    second = _cell(path, 'compare="lr 0.01"')
    html, text = "\n".join(_data(second, "text/html")), "\n".join(_data(second, "text/plain"))
    assert _data(second, "image/png"), f"{_id(path)}: the compared run's cell keeps no final PNG"
    assert re.search(ROW.format(label=re.escape("lr 0.01")), text, re.MULTILINE), (
        f"{_id(path)}: the compared run's saved text view does not list the earlier run 'lr 0.01' with its 2 "
        f"epochs:\n{text}")
    assert TABLE_ROW.search(html), (
        f"{_id(path)}: the compared run's saved snapshot (HTML) has no table row for the earlier run 'lr 0.01'")
    # The first run's own snapshot names its learning rate ("lr 0.01" beside the bars), in no table row:
    assert not TABLE_ROW.search("\n".join(_data(first, "text/html"))), f"{_id(path)}: the check above proves nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_compare_keeps_a_picture_and_the_table_of_both_runs(path: Path) -> None:
    cell = _cell(path, 'compare(["lr 0.01", "lr 0.1"])')
    html, text = "\n".join(_data(cell, "text/html")), "\n".join(_data(cell, "text/plain"))
    assert re.search(r'<img [^>]*src="data:image/png;base64,', html), f"{_id(path)}: compare() kept no picture"
    missing = [label for label in ("lr 0.01", "lr 0.1")
               if not re.search(ROW.format(label=re.escape(label)), text, re.MULTILINE)]
    assert not missing, f"{_id(path)}: compare()'s saved table lacks the runs {missing}:\n{text}"
