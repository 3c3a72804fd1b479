"""The browser's series store (``mergeDelta`` / ``seriesPoints`` of static/dashboard.js) in Python,
so the tests can check that the deltas the kernel sends add up to the whole series."""
from __future__ import annotations

import json
import math
from array import array
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
        given = {key: numbers(delta.get(key)) for key in self.cols}
        n = len(given["x"])
        for key, column in self.cols.items():
            values = given[key][:n]
            column += values + [None] * (n - len(values))
        self.tail = delta.get("tail")
        return result

    def points(self) -> dict[str, list]:
        out = {k: list(v) for k, v in self.cols.items()}
        if self.tail:
            for key in out:
                out[key].append(self.tail.get(key))
        return out


def float32(values: list) -> list:
    """A curve's numbers as the page holds them: float32, None for a missing value (``float32Column``)."""
    return [None if math.isnan(v) else v for v in array("f", [math.nan if v is None else v for v in values])]


def numbers(column: Any) -> list:
    """A delta's column as the page reads it: float32 bytes (a message's) decoded, a list (the trait's) as it is."""
    if isinstance(column, (bytes, bytearray, memoryview)):
        return [None if math.isnan(v) else v for v in array("f", bytes(column))]
    return list(column or [])


def wire_size(view: dict[str, Any]) -> int:
    """Bytes of a view as it travels: its JSON (a binary column as null) and its binary buffers."""
    buffers: list[int] = []

    def binary(value: Any) -> None:
        if not isinstance(value, (bytes, memoryview)):
            raise TypeError(f"not JSON and not a buffer: {value!r}")
        buffers.append(len(value))

    text = json.dumps(view, default=binary)
    return len(text) + sum(buffers)


def put_buffers(view: dict[str, Any], paths: list | None, buffers: list | None) -> dict[str, Any]:
    """A ``view`` message's columns put back at its ``buffer_paths`` (``putBuffers`` in dashboard.js)."""
    for path, buffer in zip(paths or [], buffers or []):
        parent = view
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = buffer
    return view


def accumulate(views: list[dict[str, Any]]) -> dict[str, Reader]:
    """Merge the ``series`` of successive views (trait values and messages, their buffers put back), as the front
    end does; a gap fails."""
    readers: dict[str, Reader] = {}
    for view in views:
        for key, delta in (view.get("series") or {}).items():
            result = readers.setdefault(key, Reader()).merge(delta)
            assert result != "gap", f"series {key!r}: a delta starting past what the reader holds"
    return readers
