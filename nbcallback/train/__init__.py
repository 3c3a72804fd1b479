"""Training: ``Model``, the callback mechanism, the built-in callbacks and checkpoints.

Mirrors ``mindspore.train``::

    from nbcallback.train import Model, CheckpointConfig, ModelCheckpoint, LossMonitor, TimeMonitor
    from nbcallback.train import Accuracy, MAE, export

MindSpore 1.x's paths work too: ``nbcallback.train.callback`` holds every callback
(``from nbcallback.train.callback import ModelCheckpoint``) and
``nbcallback.train.metrics`` every metric.
"""
from nbcallback._cpu import limit_torch_threads as _limit_torch_threads

_limit_torch_threads()  # torch's threads kept to the CPU quota and affinity, where OMP_NUM_THREADS is not set
from nbcallback.train.callback import Callback, CallbackParamError, CallbackParams, RunContext  # noqa: E402
from nbcallback.train.checkpoint import CheckpointConfig, ModelCheckpoint
from nbcallback.train.distributed import init_distributed
from nbcallback.train.loss_monitor import LossMonitor
from nbcallback.train.metrics import (
    F1,
    MAE,
    MSE,
    Accuracy,
    Fbeta,
    Loss,
    Metric,
    Precision,
    Recall,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
    get_metric_fn,
    names,
    rearrange_inputs,
)
from nbcallback.train.model import Model
from nbcallback.train.serialization import CheckpointError, load_checkpoint, load_param_into_net, save_checkpoint
from nbcallback.train.export import export
from nbcallback.train.time_monitor import TimeMonitor
from nbcallback.train.history import History
from nbcallback.train.lambda_callback import LambdaCallback
from nbcallback.train.early_stopping import EarlyStopping
from nbcallback.train.reduce_lr_on_plateau import ReduceLROnPlateau
from nbcallback.train.lr_scheduler import LearningRateScheduler
from nbcallback.train.backup_and_restore import BackupAndRestore
from nbcallback.train.on_request_exit import OnRequestExit
from nbcallback.train.summary_collector import SummaryCollector
from nbcallback.train.terminate_on_nan import TerminateOnNaN
from nbcallback.train.best_checkpoint import BestCheckpoint
from nbcallback.train.hook_trace import HookTrace
from nbcallback.train.profiler import CallbackProfiler
from nbcallback.train.gradient_clipping import GradientClipping

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
    "names",
    "rearrange_inputs",
    "Accuracy",
    "Loss",
    "MAE",
    "MSE",
    "Precision",
    "Recall",
    "F1",
    "Fbeta",
    "TopKCategoricalAccuracy",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "export",
    "init_distributed",
    "load_checkpoint",
    "load_param_into_net",
    "save_checkpoint",
    "History",
    "HookTrace",
    "CallbackProfiler",
    "LambdaCallback",
    "EarlyStopping",
    "ReduceLROnPlateau",
    "LearningRateScheduler",
    "BackupAndRestore",
    "OnRequestExit",
    "SummaryCollector",
    "TerminateOnNaN",
    "BestCheckpoint",
    "GradientClipping",
]
