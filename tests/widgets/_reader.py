"""The browser's series store (``mergeDelta`` / ``seriesPoints`` of static/dashboard.js) in Python,
so the tests can check that the deltas the kernel sends add up to the whole series."""
from __future__ import annotations

from typing import Any


class Reader:
    """What the browser keeps per series: ``mergeDelta`` of static/dashboard.js, in Python.

    ``merge`` returns "replaced", "ok" or "gap" exactly as the JS does; :meth:`points` is
    ``seriesPoints`` (the held points followed by the provisional tail).
    """

    def __init__(self) -> None:
        self.gen: int | None = None
        self.cols: dict[str, list] = {"x": [], "y": [], "lo": [], "hi": []}
        self.tail: dict[str, Any] | None = None

    def merge(self, delta: dict[str, Any]) -> str:
        start = delta.get("start", 0)
        result = "ok"
        if self.gen != delta["gen"]:
            if start != 0:
                return "gap"
            self.gen = delta["gen"]
            self.cols = {k: [] for k in self.cols}
            result = "replaced"
        elif start > len(self.cols["x"]):
            return "gap"
        else:
            for column in self.cols.values():
                del column[start:]
        n = len(delta["x"])
        for key, column in self.cols.items():
            values = list(delta.get(key) or [])[:n]
            column += values + [None] * (n - len(values))
        self.tail = delta.get("tail")
        return result

    def points(self) -> dict[str, list]:
        out = {k: list(v) for k, v in self.cols.items()}
        if self.tail:
            for key in out:
                out[key].append(self.tail.get(key))
        return out


def short(values: list) -> list:
    """The wire's four significant digits."""
    return [None if v is None else float(f"{v:.4g}") for v in values]


def accumulate(views: list[dict[str, Any]]) -> dict[str, Reader]:
    """Merge the ``series`` of successive ``view`` trait values, as the front end does; a gap fails."""
    readers: dict[str, Reader] = {}
    for view in views:
        for key, delta in (view.get("series") or {}).items():
            result = readers.setdefault(key, Reader()).merge(delta)
            assert result != "gap", f"series {key!r}: a delta starting past what the reader holds"
    return readers
