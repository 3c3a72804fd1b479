"""The rules of ARCHITECTURE.md that code review alone would let slip, checked on the source.

* Dependencies run one way: ``train/`` imports neither ``dataset/`` nor ``widgets/``; ``widgets/`` never imports
  ``dataset/``; ``dataset/`` imports ``train/`` only in ``_waited.py``; nothing imports ``integrations/``, which
  uses ``widgets/`` (never ``dataset/``).
* An import inside a function is for a heavy or optional dependency (loaded when first used), never to dodge an
  import cycle: each one must be in :data:`LAZY`, with its reason.
* No class in ``widgets/`` or ``dataset/`` keeps more than :data:`MAX_ATTRIBUTES` attributes, its bases' included
  (group what belongs together in a small record instead): what its methods assign to ``self`` and, for a
  mutable dataclass, its fields (a frozen one is a value).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nbcallback"
MAX_ATTRIBUTES = 15

#: What a function may import, and why it waits until then.
LAZY = {
    "matplotlib": "the final PNG: about a second to import, only at a run's end",
    "PIL": "images: only the vision ops that take a PIL image, and the PNG's size",
    "marimo": "only inside a marimo notebook",
    "fontTools": "only the maintainer's font rebuild (build_subset.py)",
    "torch.utils.tensorboard": "SummaryCollector's writer: TensorBoard is optional",
    "nbcallback.widgets.render_widget": "anywidget and ipywidgets: only in a notebook kernel",
    "nbcallback.widgets.plot": "matplotlib (above)",
    "nbcallback.dataset._waited": "WaitedDSCallback imports nbcallback.train: the dataset package loads without it",
}
#: Modules that may import anything lazily: the command line answers ``--help`` before torch is loaded.
LAZY_ANYTHING = {"nbcallback/cli.py"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


def _absolute(module_path: str, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` names, with a relative one resolved against ``module_path``."""
    if not node.level:
        return node.module or ""
    parts = module_path.removesuffix(".py").split("/")
    parts = parts[: len(parts) - node.level]  # (a package's __init__ resolves against the package itself)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts + ([node.module] if node.module else []))


def _imported(module_path: str, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _absolute(module_path, node)
        # ``from nbcallback.train import metrics`` imports a module too: name both.
        return [base] + [f"{base}.{alias.name}" for alias in node.names]
    return []


def _in_functions(tree: ast.Module) -> set[int]:
    return {id(node) for function in ast.walk(tree) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))}


def _is_lazy_allowed(name: str) -> bool:
    return any(name == allowed or name.startswith(allowed + ".") for allowed in LAZY)


def test_dependencies_run_one_way() -> None:
    wrong = []
    for path, tree in _modules():
        package = path.split("/")[1] if path.count("/") > 1 else ""
        for node in ast.walk(tree):
            for name in _imported(path, node):
                target = name.split(".")[1] if name.startswith("nbcallback.") else ""
                if package == "train" and target in ("dataset", "widgets"):
                    wrong.append(f"{path} imports {name}: train/ must not depend on {target}/")
                if package == "widgets" and target == "dataset":
                    wrong.append(f"{path} imports {name}: widgets/ reads the run through train/, not dataset/")
                if package == "dataset" and target in ("train", "widgets") and path != "nbcallback/dataset/_waited.py":
                    wrong.append(f"{path} imports {name}: only dataset/_waited.py may import train/ (never widgets/)")
                if package in ("train", "dataset", "widgets") and target == "integrations":
                    wrong.append(f"{path} imports {name}: integrations/ adapts the board to other frameworks; "
                                 "nothing in nbcallback depends on it")
                if package == "integrations" and target == "dataset":
                    wrong.append(f"{path} imports {name}: an adapter feeds the board's public API only")
    assert not wrong, "\n".join(wrong)


def test_a_function_imports_only_heavy_or_optional_modules() -> None:
    wrong = []
    for path, tree in _modules():
        if path in LAZY_ANYTHING:
            continue
        inside = _in_functions(tree)
        for node in ast.walk(tree):
            if id(node) not in inside:
                continue
            names = _imported(path, node)
            if not any(_is_lazy_allowed(name) for name in names):
                wrong.append(f"{path}:{node.lineno} imports {names[0]} inside a function")
    assert not wrong, ("\n".join(wrong) + "\nImport it at the top of the module; if it is heavy or optional, add it "
                       "to LAZY in tests/test_layout.py with the reason.")


@dataclass
class _Class:
    path: str
    bases: list[str]
    attributes: set[str] = field(default_factory=set)


def _classes() -> dict[str, list[_Class]]:
    """Every class of the package by name: its file, its bases' names and the ``self.<name>`` it assigns."""
    found: dict[str, list[_Class]] = {}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [base.id if isinstance(base, ast.Name) else getattr(base, "attr", "") for base in node.bases]
            record = _Class(path, bases)
            if any(_is_dataclass_decorator(decorator, mutable_only=True) for decorator in node.decorator_list):
                for statement in node.body:  # a (mutable) dataclass's fields are its instances' state too
                    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                            and "ClassVar" not in ast.unparse(statement.annotation):
                        record.attributes.add(statement.target.id)
            for inner in ast.walk(node):
                targets: list[ast.expr] = []
                if isinstance(inner, ast.Assign):
                    targets = inner.targets
                elif isinstance(inner, (ast.AnnAssign, ast.AugAssign)):
                    targets = [inner.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) \
                                and part.value.id == "self":
                            record.attributes.add(part.attr)
            found.setdefault(node.name, []).append(record)
    return found


def _is_dataclass_decorator(decorator: ast.expr, mutable_only: bool = False) -> bool:
    """``@dataclass``, ``@dataclasses.dataclass`` or either called with options (``mutable_only``: not
    ``frozen=True``, whose instances are values, not state)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    named = (isinstance(target, ast.Name) and target.id == "dataclass") or \
        (isinstance(target, ast.Attribute) and target.attr == "dataclass")
    frozen = isinstance(decorator, ast.Call) and any(
        keyword.arg == "frozen" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in decorator.keywords)
    return named and not (mutable_only and frozen)


def _all_attributes(name: str, classes: dict[str, list[_Class]], seen: frozenset[str] = frozenset()) -> set[str]:
    attributes: set[str] = set()
    for record in classes.get(name, []) if name not in seen else []:
        attributes |= record.attributes
        for base in record.bases:
            attributes |= _all_attributes(base, classes, seen | {name})
    return attributes


def test_the_attribute_counter_sees_inherited_attributes() -> None:
    classes = _classes()
    dashboard = _all_attributes("Dashboard", classes)
    assert {"extras", "plot_options", "settings", "state"} <= dashboard  # its own, LiveLossPlot's, LiveCallback's


def test_the_attribute_counter_counts_a_dataclass_fields() -> None:
    classes = _classes()
    assert {"display", "words", "live_rows", "plan"} <= _all_attributes("_Settings", classes)  # widgets/base.py
    assert "_PARTS" not in _all_attributes("LiveCallback", classes)  # a class constant, not a dataclass field
    assert _all_attributes("View", classes) == set()  # frozen: a value, not mutable state


@pytest.mark.parametrize("package", ["widgets", "dataset"])
def test_no_class_keeps_more_than_fifteen_attributes(package: str) -> None:
    classes = _classes()
    too_many = []
    for name, records in classes.items():
        if not any(record.path.startswith(f"nbcallback/{package}/") for record in records):
            continue
        attributes = _all_attributes(name, classes)
        if len(attributes) > MAX_ATTRIBUTES:
            too_many.append(f"{name} ({records[0].path}): {len(attributes)} attributes, {sorted(attributes)}")
    assert not too_many, ("\n".join(too_many) + f"\nAt most {MAX_ATTRIBUTES} (bases included): group what belongs "
                          "together in a small record (a dataclass), as LiveCallback's settings or a source's shards.")
