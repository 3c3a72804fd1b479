"""An adapter whose framework is missing says which extra to install; nbcallback never imports the frameworks."""
from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("name", "blocked", "extra"), [
    ("LightningDashboard", "lightning", "lightning"),
    ("TransformersDashboard", "transformers", "transformers"),
    ("KerasDashboard", "keras", "keras"),
])
def test_a_missing_framework_names_the_extra(name: str, blocked: str, extra: str) -> None:
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            "import nbcallback.integrations as integrations\n"
            "try:\n"
            f"    getattr(integrations, {name!r})\n"
            "except ImportError as error:\n"
            "    print(error)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert f"pip install 'nbcallback[{extra}]'" in out.stdout


def test_importing_nbcallback_imports_no_framework() -> None:
    code = ("import sys, nbcallback, nbcallback.widgets, nbcallback.integrations\n"
            "print(sorted(m for m in ('lightning', 'transformers', 'keras', 'pytorch_lightning') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
