"""Training: ``Model``, the callback mechanism, the built-in callbacks and checkpoints.

Mirrors ``mindspore.train``::

    from nbcallback.train import Model, CheckpointConfig, ModelCheckpoint, LossMonitor, TimeMonitor
"""
from nbcallback.train.callback import Callback, CallbackParamError, CallbackParams, RunContext
from nbcallback.train.checkpoint import CheckpointConfig, ModelCheckpoint
from nbcallback.train.loss_monitor import LossMonitor
from nbcallback.train.metrics import Metric, get_metric_fn
from nbcallback.train.model import Model
from nbcallback.train.serialization import CheckpointError, load_checkpoint, load_param_into_net, save_checkpoint
from nbcallback.train.time_monitor import TimeMonitor

__all__ = [
    "Callback",
    "CallbackParamError",
    "CallbackParams",
    "CheckpointConfig",
    "CheckpointError",
    "LossMonitor",
    "Metric",
    "Model",
    "ModelCheckpoint",
    "RunContext",
    "TimeMonitor",
    "get_metric_fn",
    "load_checkpoint",
    "load_param_into_net",
    "save_checkpoint",
]
