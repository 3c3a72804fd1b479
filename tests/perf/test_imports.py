"""``import nbcallback`` stays cheap: optional heavy dependencies are imported only when used.

Each check runs in a fresh interpreter (``sys.modules`` of the test process
already holds whatever other tests imported).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Imported only by the renderers / the summary writer that need them.
HEAVY = ("matplotlib", "ipywidgets", "IPython", "tensorboard", "torch.utils.tensorboard", "PIL")


def _modules_after(statement: str) -> list[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NBCALLBACK_DISPLAY", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_nbcallback_imports_nothing_heavy_not_even_torch():
    modules = _modules_after("import nbcallback")
    assert "torch" not in modules
    assert not [m for m in HEAVY if m in modules]


@pytest.mark.parametrize(
    "statement",
    [
        "import nbcallback.train",
        "import nbcallback.dataset",
        "import nbcallback.widgets",
        "from nbcallback.widgets import ProgressBar, LiveLossPlot, Dashboard",
        "from nbcallback.train import Model, LossMonitor, TimeMonitor, ModelCheckpoint, SummaryCollector",
        "import nbcallback; nbcallback.Model, nbcallback.dataset, nbcallback.widgets",
    ],
)
def test_no_heavy_optional_dependency_on_import(statement):
    modules = _modules_after(statement)
    loaded = [m for m in HEAVY if m in modules]
    assert not loaded, f"`{statement}` imported {loaded}; import them where they are first used"


def test_import_does_not_pull_in_dynamo():
    # torch._dynamo (800+ modules, ~1 s) is imported by the first torch.optim optimizer;
    # nbcallback itself must not add it to the import of the package.
    modules = _modules_after("import nbcallback.train, nbcallback.dataset, nbcallback.widgets")
    assert "torch._dynamo" not in modules
