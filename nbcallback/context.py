"""``set_context(mode=GRAPH_MODE)``: MindSpore's switch between graph and eager (PyNative) training.

Ported code keeps its lines::

    from nbcallback import context                       # MindSpore 1.x: from mindspore import context
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU")

    from nbcallback import set_context, GRAPH_MODE       # MindSpore 2.x: ms.set_context(mode=ms.GRAPH_MODE)
    set_context(mode=GRAPH_MODE)

In ``GRAPH_MODE`` every ``Model.train``/``Model.fit`` run that starts afterwards
captures its training step (forward, loss, backward, optimizer step) with
``torch.compile`` (see :mod:`nbcallback.train.graph`); ``Model(graph_mode=...)``
decides for one model whatever the context says. ``PYNATIVE_MODE`` (the
default, as in MindSpore 2.x) runs the step eagerly.

Where nbcallback differs from MindSpore:

* only ``mode`` has an effect. ``device_target`` and ``device_id`` are checked and
  accepted so that ported lines run, and do nothing: ``Model(device=...)`` (or
  where the network lives) picks the device. Every other MindSpore key is refused
  with a ValueError naming the ones that work.
* the mode is the one setting of the process (MindSpore's context is global too);
  it is read when a run starts, so a change takes effect at the next ``train``/``fit``.
"""
from __future__ import annotations

from typing import Any

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context"]

#: Capture the training step once and replay it (``torch.compile``). MindSpore's value.
GRAPH_MODE = 0
#: Run the training step operation by operation (eager PyTorch). MindSpore's value; the default.
PYNATIVE_MODE = 1

_TYPES: dict[str, type] = {"mode": int, "device_target": str, "device_id": int}
_DEVICE_TARGETS = ("Ascend", "GPU", "CPU")


class _Context:
    """The settings ``set_context`` changes (one instance, like MindSpore's ``_Context`` singleton)."""

    def __init__(self) -> None:
        self.mode = PYNATIVE_MODE
        self.device_target = "CPU"
        self.device_id = 0


_CONTEXT = _Context()


def set_context(**kwargs: Any) -> None:
    """Set the execution mode: ``set_context(mode=GRAPH_MODE)`` or ``set_context(mode=PYNATIVE_MODE)``.

    Args:
        mode: ``GRAPH_MODE`` (0): training steps are captured with ``torch.compile``;
            ``PYNATIVE_MODE`` (1, the default): eager.
        device_target: ``"CPU"``, ``"GPU"`` or ``"Ascend"``; accepted for ported code, no effect
            (``Model(device=...)`` picks the device).
        device_id: an int; accepted for ported code, no effect.

    Raises:
        TypeError: a value of the wrong type (MindSpore's message).
        ValueError: a mode other than 0 or 1, an unknown device target, or a key nbcallback does not have.
    """
    for key, value in kwargs.items():
        expected = _TYPES.get(key)
        if expected is None:
            raise ValueError(
                f"For 'context.set_context', the keyword argument {key} is not recognized! nbcallback's "
                "set_context takes 'mode' (GRAPH_MODE or PYNATIVE_MODE); 'device_target' and 'device_id' are "
                "accepted and have no effect (Model(device=...) picks the device). Delete the other keys."
            )
        if value is not None and not isinstance(value, expected):
            raise TypeError(f"The parameter '{key}' must be {expected}, but got {type(value)}")
    mode = kwargs.get("mode")
    if mode is not None and mode not in (GRAPH_MODE, PYNATIVE_MODE):
        raise ValueError(
            "For 'context.set_context', the argument 'mode' should be context.GRAPH_MODE (0) "
            f"or context.PYNATIVE_MODE (1), but got {mode}."
        )
    target = kwargs.get("device_target")
    if target is not None and target not in _DEVICE_TARGETS:
        raise ValueError(
            f"For 'context.set_context', the argument 'device_target' must be one of {list(_DEVICE_TARGETS)}, "
            f"but got '{target}'."
        )
    for key, value in kwargs.items():
        if value is not None:
            setattr(_CONTEXT, key, int(value) if key != "device_target" else value)


def get_context(attr_key: str) -> Any:
    """The value of a setting: ``get_context("mode")`` is ``GRAPH_MODE`` or ``PYNATIVE_MODE``.

    Raises:
        ValueError: a key nbcallback's context does not have (MindSpore's message).
    """
    if attr_key not in _TYPES:
        raise ValueError(
            f"For 'context.get_context', the argument {attr_key} is not recognized! nbcallback's context has "
            f"{sorted(_TYPES)}."
        )
    return getattr(_CONTEXT, attr_key)
