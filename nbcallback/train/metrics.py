"""Evaluation metrics with MindSpore's ``clear() / update(*inputs) / eval()`` protocol.

``Model(metrics={'accuracy'})`` looks names up here.  Every metric accumulates
on the device the tensors live on and converts to Python numbers only in
``eval()``, so evaluating on a GPU does not synchronise on every batch.

``update`` receives ``(outputs, label)`` (the logits and the targets of a
batch); the ``'loss'`` metric receives the batch loss.  A user metric only has
to implement the same three methods (subclassing :class:`Metric` is optional).
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

__all__ = [
    "Metric",
    "Accuracy",
    "Loss",
    "TopKCategoricalAccuracy",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "Precision",
    "Recall",
    "F1",
    "MAE",
    "MSE",
    "get_metric_fn",
    "get_metrics",
]


def _tensor(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value)


class Metric:
    """Base class of metrics: ``clear()`` resets, ``update(*inputs)`` accumulates, ``eval()`` returns."""

    def clear(self) -> None:
        raise NotImplementedError

    def update(self, *inputs: Any) -> None:
        raise NotImplementedError

    def eval(self) -> Any:
        raise NotImplementedError

    def __call__(self, *inputs: Any) -> Any:
        self.clear()
        self.update(*inputs)
        return self.eval()


def _detached(value: Any) -> torch.Tensor:
    # Under no_grad (every evaluation) nothing requires grad: skip the detach op (~1 us per tensor per batch).
    tensor = _tensor(value)
    return tensor.detach() if tensor.requires_grad else tensor


def _check_pair(name: str, inputs: tuple[Any, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    if len(inputs) != 2:
        raise ValueError(f"For '{name}.update', it needs 2 inputs (predicted value, true value), but got {len(inputs)}.")
    return _detached(inputs[0]), _detached(inputs[1])


def _class_indices(y_pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """True labels as class indices (accepts indices or one-hot)."""
    if y.dim() == y_pred.dim() and y.shape == y_pred.shape and y_pred.dim() > 1:
        return y.argmax(dim=-1)
    if y.dim() != 1:
        y = y.reshape(-1)
    return y if y.dtype is torch.int64 else y.long()


class Accuracy(Metric):
    """Share of samples whose arg-max prediction equals the label.

    Args:
        eval_type: ``'classification'`` (logits ``(N, C)``, labels ``(N,)`` or
            one-hot) or ``'multilabel'`` (``(N, C)`` scores thresholded at 0.5
            against ``(N, C)`` 0/1 labels, a sample counts when all labels match).
    """

    def __init__(self, eval_type: str = "classification") -> None:
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(f"For 'Accuracy', 'eval_type' must be 'classification' or 'multilabel', but got {eval_type!r}.")
        self.eval_type = eval_type
        self.clear()

    def clear(self) -> None:
        self._correct: torch.Tensor | int = 0
        self._total = 0

    def update(self, *inputs: Any) -> None:
        y_pred, y = _check_pair("Accuracy", inputs)
        if self.eval_type == "multilabel":
            hits = ((y_pred > 0.5) == (y > 0.5)).all(dim=-1)
        else:
            predicted = y_pred.argmax(dim=-1)
            if predicted.dim() != 1:
                predicted = predicted.reshape(-1)
            hits = predicted == _class_indices(y_pred, y)
        self._correct = self._correct + hits.sum()
        self._total += hits.numel()

    def eval(self) -> float:
        if self._total == 0:
            raise RuntimeError(
                "The 'Accuracy' can not be calculated, because the number of samples is 0, "
                "please check whether your inputs(predicted value, true value) are empty, or has "
                "called update method before calling eval method."
            )
        return float(self._correct) / self._total


class Loss(Metric):
    """Mean of the batch losses seen since ``clear()`` (each batch counts once)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._sum: torch.Tensor | float = 0.0
        self._count = 0

    def update(self, *inputs: Any) -> None:
        if len(inputs) != 1:
            raise ValueError(f"For 'Loss.update', it needs 1 input (loss), but got {len(inputs)}.")
        loss = _detached(inputs[0])
        if loss.dim() > 0:
            loss = loss.mean()
        self._sum = self._sum + loss
        self._count += 1

    def eval(self) -> float:
        if self._count == 0:
            raise RuntimeError("The 'Loss' can not be calculated, because the number of samples is 0.")
        return float(self._sum) / self._count


class TopKCategoricalAccuracy(Metric):
    """Share of samples whose label is among the ``k`` highest scores.

    Args:
        k: how many top predictions count (a positive int).
    """

    def __init__(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"For 'TopKCategoricalAccuracy', 'k' must be int, but got {type(k).__name__}.")
        if k < 1:
            raise ValueError(f"For 'TopKCategoricalAccuracy', 'k' must be at least 1, but got {k}.")
        self.k = k
        self.clear()

    def clear(self) -> None:
        self._correct: torch.Tensor | int = 0
        self._total = 0

    def update(self, *inputs: Any) -> None:
        y_pred, y = _check_pair("TopKCategoricalAccuracy", inputs)
        labels = _class_indices(y_pred, y)
        k = min(self.k, y_pred.shape[-1])
        top = y_pred.topk(k, dim=-1).indices
        self._correct = self._correct + (top == labels.unsqueeze(-1)).any(dim=-1).sum()
        self._total += labels.numel()

    def eval(self) -> float:
        if self._total == 0:
            raise RuntimeError("The 'TopKCategoricalAccuracy' can not be calculated, because the number of samples is 0.")
        return float(self._correct) / self._total


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    """:class:`TopKCategoricalAccuracy` with ``k=1``."""

    def __init__(self) -> None:
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    """:class:`TopKCategoricalAccuracy` with ``k=5``."""

    def __init__(self) -> None:
        super().__init__(5)


class _ConfusionCounts(Metric):
    """Per-class true-positive / predicted / actual counts for precision, recall and F1."""

    _name = "Metric"

    def __init__(self, average: bool = False) -> None:
        if not isinstance(average, bool):
            raise TypeError(f"For '{self._name}', 'average' must be bool, but got {type(average).__name__}.")
        self.average = average
        self.clear()

    def clear(self) -> None:
        self._tp: torch.Tensor | None = None
        self._pred: torch.Tensor | None = None
        self._actual: torch.Tensor | None = None

    def update(self, *inputs: Any) -> None:
        y_pred, y = _check_pair(self._name, inputs)
        classes = y_pred.shape[-1]
        pred = torch.nn.functional.one_hot(y_pred.argmax(dim=-1).reshape(-1), classes)
        true = torch.nn.functional.one_hot(_class_indices(y_pred, y), classes)
        tp, p, a = (pred * true).sum(0), pred.sum(0), true.sum(0)
        if self._tp is None:
            self._tp, self._pred, self._actual = tp, p, a
        else:
            self._tp, self._pred, self._actual = self._tp + tp, self._pred + p, self._actual + a

    def _counts(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self._tp is None:
            raise RuntimeError(f"The '{self._name}' can not be calculated, because the number of samples is 0.")
        return self._tp.double().cpu(), self._pred.double().cpu(), self._actual.double().cpu()  # type: ignore[union-attr]

    def _finish(self, per_class: torch.Tensor) -> float | list[float]:
        if self.average:
            return float(per_class.mean())
        return [float(v) for v in per_class]


def _safe_divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    return torch.where(den > 0, num / den.clamp(min=1e-12), torch.zeros_like(num))


class Precision(_ConfusionCounts):
    """Per-class precision (a list of floats), or their mean with ``average=True``."""

    _name = "Precision"

    def eval(self) -> float | list[float]:
        tp, pred, _ = self._counts()
        return self._finish(_safe_divide(tp, pred))


class Recall(_ConfusionCounts):
    """Per-class recall (a list of floats), or their mean with ``average=True``."""

    _name = "Recall"

    def eval(self) -> float | list[float]:
        tp, _, actual = self._counts()
        return self._finish(_safe_divide(tp, actual))


class F1(_ConfusionCounts):
    """Per-class F1 score (a list of floats), or their mean with ``average=True``."""

    _name = "F1"

    def eval(self) -> float | list[float]:
        tp, pred, actual = self._counts()
        return self._finish(_safe_divide(2 * tp, pred + actual))


class _ErrorMean(Metric):
    _name = "Metric"

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._sum: torch.Tensor | float = 0.0
        self._count = 0

    def _error(self, diff: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def update(self, *inputs: Any) -> None:
        y_pred, y = _check_pair(self._name, inputs)
        diff = y_pred.reshape(y.shape).double() - y.double() if y_pred.numel() == y.numel() else y_pred.double() - y.double()
        per_sample = self._error(diff).reshape(diff.shape[0], -1).mean(dim=1) if diff.dim() > 0 else self._error(diff)
        self._sum = self._sum + per_sample.sum()
        self._count += per_sample.numel()

    def eval(self) -> float:
        if self._count == 0:
            raise RuntimeError(f"The '{self._name}' can not be calculated, because the number of samples is 0.")
        return float(self._sum) / self._count


class MAE(_ErrorMean):
    """Mean absolute error between predictions and targets."""

    _name = "MAE"

    def _error(self, diff: torch.Tensor) -> torch.Tensor:
        return diff.abs()


class MSE(_ErrorMean):
    """Mean squared error between predictions and targets."""

    _name = "MSE"

    def _error(self, diff: torch.Tensor) -> torch.Tensor:
        return diff * diff


_REGISTRY = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "loss": Loss,
    "top_1_accuracy": Top1CategoricalAccuracy,
    "top_5_accuracy": Top5CategoricalAccuracy,
    "precision": Precision,
    "recall": Recall,
    "F1": F1,
    "mae": MAE,
    "mse": MSE,
}


def get_metric_fn(name: str, *args: Any, **kwargs: Any) -> Metric:
    """A new metric object for a registered name (``'accuracy'``, ``'loss'``, ``'mae'`` ...)."""
    if name not in _REGISTRY:
        raise KeyError(
            f"For 'get_metric_fn', unsupported metric {name}, please refer to official website for more "
            f"details about supported metrics. Supported by nbcallback: {', '.join(sorted(_REGISTRY))}."
        )
    return _REGISTRY[name](*args, **kwargs)


def _is_metric(obj: Any) -> bool:
    return all(callable(getattr(obj, attr, None)) for attr in ("clear", "update", "eval"))


def get_metrics(metrics: set[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """Resolve ``Model``'s ``metrics`` argument to ``{name: metric object}``.

    Accepts ``None``, a set (or list/tuple) of registered names, or a dict of
    ``{name: object with clear/update/eval}``.
    """
    if metrics is None:
        return {}
    if isinstance(metrics, (set, frozenset, list, tuple)):
        resolved = {}
        # A set has no order (and string hashing differs per process): sort its names so printed
        # results, tables and cross-rank reductions always list the metrics the same way.
        names = sorted(metrics, key=str) if isinstance(metrics, (set, frozenset)) else metrics
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"For 'Model', the names in 'metrics' must be str, but got {name!r}.")
            resolved[name] = get_metric_fn(name)
        return resolved
    if isinstance(metrics, Mapping):
        for name, metric in metrics.items():
            if not isinstance(name, str):
                raise TypeError(f"For 'Model', the keys of 'metrics' must be str, but got {name!r}.")
            if not _is_metric(metric):
                raise TypeError(
                    f"For 'Model', the metric {name!r} must have clear(), update(*inputs) and eval() methods, "
                    f"but got {type(metric).__name__}."
                )
        return dict(metrics)
    raise TypeError(
        "For 'Model', the argument 'metrics' must be None, a set of metric names or a dict of "
        f"{{name: Metric}}, but got {type(metrics).__name__}."
    )
