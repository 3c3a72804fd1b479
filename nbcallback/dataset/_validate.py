"""Argument checks shared by the dataset package.

The messages follow MindSpore's validators (``Argument x with value ... is not
of type ...`` / ``Input x is not within the required interval of ...``) so that
errors read the same as in the tutorial's framework, and every message names
the offending argument.
"""
from __future__ import annotations

import inspect
import math
import numbers
from typing import Any, Sequence

import numpy as np

INT32_MAX = 2**31 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _type_names(types: Sequence[type]) -> str:
    return "[" + ", ".join(f"<class '{t.__name__}'>" for t in types) + "]"


def type_error(name: str, value: Any, types: Sequence[type]) -> TypeError:
    """Build MindSpore's wording for an argument of the wrong type."""
    return TypeError(
        f"Argument {name} with value {value!r} is not of type {_type_names(types)}, "
        f"but got {type(value)}."
    )


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool, else raise TypeError naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise type_error(name, value, (bool,))
    return bool(value)


def check_int(value: Any, name: str, low: int, high: int = INT32_MAX) -> int:
    """Return ``value`` as int if it is an integer (not a bool) in ``[low, high]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise type_error(name, value, (int,))
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"Input {name} is not within the required interval of [{low}, {high}]. Got {value}.")
    return value


def check_real(
    value: Any,
    name: str,
    low: float = -FLOAT32_MAX,
    high: float = FLOAT32_MAX,
    *,
    low_open: bool = False,
) -> float:
    """Return ``value`` as float if it is a real number (not a bool) within the bounds.

    ``low_open`` makes the lower bound exclusive, as for Normalize's ``std``.
    NaN is never within the bounds.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise type_error(name, value, (int, float))
    as_float = float(value)
    above = as_float > low if low_open else as_float >= low
    if math.isnan(as_float) or not above or as_float > high:
        bracket = "(" if low_open else "["
        raise ValueError(
            f"Input {name} is not within the required interval of {bracket}{low}, {high}], "
            f"but got {value!r}."
        )
    return as_float


def check_columns(value: Any, name: str) -> list[str]:
    """Normalise a column argument (a str or a non-empty list/tuple of unique str) to a list."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{name} should not be an empty str.")
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise type_error(name, value, (str, list))
    if not value:
        raise ValueError(f"{name} should not be empty.")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise type_error(f"{name}[{i}]", item, (str,))
        if not item:
            raise ValueError(f"{name}[{i}] should not be empty.")
    if len(set(value)) != len(value):
        raise ValueError(f"Every column name should not be same with others in {name}, but got {list(value)}.")
    return list(value)


def check_known_columns(names: Sequence[str], columns: Sequence[str], argument: str) -> None:
    """Refuse a column of ``argument`` that the dataset (columns ``names``) does not have."""
    for column in columns:
        if column not in names:
            raise ValueError(f"Invalid column name {column!r} in {argument}: the dataset has columns {list(names)}.")


def check_workers(value: Any) -> None:
    """``num_parallel_workers``: None or a positive int (accepted and ignored: one thread)."""
    if value is not None:
        check_int(value, "num_parallel_workers", 1)


def positional_params(fn: Any) -> int | None:
    """Number of positional parameters ``fn`` takes, or None when it takes ``*args`` / has no signature."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
