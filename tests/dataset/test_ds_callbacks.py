"""Dataset callbacks with nbcallback's Model: what MindSpore's own tests do not cover.

Every scenario that could hang runs under a deadline (a worker thread joined
with a timeout), so a deadlock fails the test instead of stalling the suite.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import pytest
import torch

import nbcallback.dataset as ds
from nbcallback.dataset import DSCallback, WaitedDSCallback, transforms
from nbcallback.train import Callback, Model

DEADLINE_S = 60


def within_deadline(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread; fail if it has not returned after DEADLINE_S seconds; re-raise its error."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    assert not worker.is_alive(), f"still running after {DEADLINE_S} s: a deadlock"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def regression_data(rows: int = 32, batch: int = 8) -> tuple[ds.Dataset, "EpochLosses"]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)).reshape(-1, 1)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False), EpochLosses()


class EpochLosses(WaitedDSCallback):
    """Records, at each epoch start, the epoch and the loss training handed over."""

    def __init__(self, step_size: int = 1) -> None:
        super().__init__(step_size)
        self.seen: list[tuple[int, float]] = []

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
        loss = train_run_context.original_args().net_outputs
        self.seen.append((ds_run_context.cur_epoch_num, float(loss)))


class LastLoss(Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_epoch_end(self, run_context: Any) -> None:
        self.losses.append(float(run_context.original_args().net_outputs))


def test_fit_three_epochs_sync_epoch_begin_sees_previous_epoch_loss() -> None:
    data, waited = regression_data()
    train = data.map(lambda x: x, "x", callbacks=waited).batch(8)
    valid = regression_data()[0].batch(8)
    last = LastLoss()
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05), metrics={"loss"})

    within_deadline(lambda: model.fit(3, train, valid, callbacks=[last, waited]))

    assert len(last.losses) == 3
    # From the second epoch on, each epoch starts with the loss of the previous epoch's last step.
    assert waited.seen == [(2, last.losses[0]), (3, last.losses[1])]
    assert last.losses[2] < last.losses[0]  # it did train


def test_sync_step_begin_follows_training_steps_with_batch_size_step_size() -> None:
    data, _ = regression_data()
    steps: list[tuple[int, int]] = []

    class StepLoss(WaitedDSCallback):
        def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            steps.append((ds_run_context.cur_step_num, train_run_context.original_args().cur_step_num))

    waited = StepLoss(step_size=8)  # the map comes before batch(8): 8 rows per training step
    train = data.map(lambda x: x, "x", callbacks=waited).batch(8)
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    within_deadline(lambda: model.train(2, train, callbacks=waited))
    # Row 9 (step 2) is made after training step 1, and so on, across the epoch boundary.
    assert steps == [(9, 1), (17, 2), (25, 3), (33, 4), (41, 5), (49, 6), (57, 7)]


class StopAt(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_step_end(self, run_context: Any) -> None:
        if run_context.original_args().cur_step_num == self.step:
            run_context.request_stop()


def test_early_stop_ends_cleanly_and_the_pipeline_still_iterates() -> None:
    data, waited = regression_data()

    class Both(EpochLosses):
        def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            pass

    waited = Both(step_size=8)
    train = data.map(lambda x: x, "x", callbacks=waited).batch(8)
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    within_deadline(lambda: model.train(3, train, callbacks=[StopAt(6), waited]))
    assert waited.training_ended
    assert [epoch for epoch, _ in waited.seen] == [2]  # stopped in epoch 2
    # After the stopped run, the pipeline is used on its own: every batch comes, no wait.
    batches = within_deadline(lambda: sum(1 for _ in train))
    assert batches == 4


def test_an_exception_in_a_sync_hook_reaches_the_caller() -> None:
    data, _ = regression_data()

    class Failing(WaitedDSCallback):
        def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            raise ValueError(f"bad augmentation at step {ds_run_context.cur_step_num}")

    waited = Failing()
    train = data.map(lambda x: x, "x", callbacks=waited).batch(1)
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    with pytest.raises(ValueError, match="bad augmentation at step 2"):
        within_deadline(lambda: model.train(2, train, callbacks=waited))


def test_an_exception_in_a_ds_hook_reaches_the_iterating_loop() -> None:
    class Failing(DSCallback):
        def ds_step_end(self, ds_run_context: Any) -> None:
            if ds_run_context.cur_step_num == 3:
                raise KeyError("step 3")

    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=Failing())
    with pytest.raises(KeyError, match="step 3"):
        within_deadline(lambda: [row for row in data])


def test_waited_callback_outside_model_raises_instead_of_running_silently() -> None:
    # MindSpore waits callback_timeout seconds, then raises: nothing ends the steps. Here the iterating
    # thread made the callback and no training has it, so nothing could: the error comes at once.
    calls: list[str] = []

    class Waited(WaitedDSCallback):
        def sync_epoch_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            calls.append("epoch")

        def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            calls.append("step")

    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=Waited())
    iterator = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
    with pytest.raises(RuntimeError, match=r"ds_step_begin of Waited: .*step 2.*Model\.train/fit\(callbacks="):
        [int(row[0]) for _ in range(3) for row in iterator]
    assert calls == []


def test_prefetching_one_batch_ahead_is_refused_with_the_cause() -> None:
    # Model(prefetch=True) reads batch k+1 before step k's callbacks: simulated by reading ahead by hand.
    class Waited(WaitedDSCallback):
        def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            pass

    waited = Waited()
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=waited)
    iterator = iter(data)
    waited.begin(None)
    next(iterator)
    with pytest.raises(RuntimeError, match=r"ds_step_begin.*step 2.*prefetch=False"):
        next(iterator)


def test_a_second_training_run_starts_a_new_pipeline_run() -> None:
    data, waited = regression_data()
    begins: list[int] = []

    class Counting(EpochLosses):
        def ds_begin(self, ds_run_context: Any) -> None:  # not called for a WaitedDSCallback (as MindSpore)
            begins.append(1)

    waited = Counting()
    train = data.map(lambda x: x, "x", callbacks=waited).batch(8)
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    within_deadline(lambda: model.train(2, train, callbacks=waited))
    within_deadline(lambda: model.train(2, train, callbacks=waited))
    assert [epoch for epoch, _ in waited.seen] == [2, 2]  # epochs number from 1 again
    assert begins == []


def test_builtin_ops_with_callbacks_run_row_by_row_every_epoch() -> None:
    # Built-in deterministic ops normally run once over the whole column (fast path): with callbacks
    # the hooks must still see every row of every epoch, and the values must not change.
    rows_seen: list[int] = []

    class Count(DSCallback):
        def ds_step_begin(self, ds_run_context: Any) -> None:
            rows_seen.append(ds_run_context.cur_step_num)

    values = np.arange(10, dtype=np.int32)
    plain = ds.NumpySlicesDataset(values, shuffle=False).map(transforms.TypeCast(torch.float32)).batch(4)
    hooked = ds.NumpySlicesDataset(values, shuffle=False).map(transforms.TypeCast(torch.float32), callbacks=[Count()]).batch(4)
    for _ in range(2):
        for a, b in zip(plain, hooked):
            assert torch.equal(a[0], b[0])
    assert rows_seen == list(range(1, 21))


def test_a_ds_callback_does_not_run_for_introspection_or_cost_when_absent() -> None:
    calls: list[int] = []

    class Count(DSCallback):
        def ds_epoch_begin(self, ds_run_context: Any) -> None:
            calls.append(ds_run_context.cur_epoch_num)

    data = ds.NumpySlicesDataset([1, 2, 3], shuffle=False).map(lambda x: x, callbacks=Count()).filter(lambda x: x > 1)
    assert data.get_dataset_size() == 2 and data.output_shapes() == [[]]
    assert calls == []
    for _ in range(2):
        list(data)
    assert calls == [1, 2]  # iterating the dataset itself: one run per dataset object, epochs number on


@pytest.mark.parametrize(
    ("callbacks", "error", "message"),
    [
        ((), TypeError, r"Argument callbacks with value \(\) is not of type"),
        ("cb", TypeError, "Argument callbacks with value 'cb'"),
        ([DSCallback, 1], TypeError, r"Argument callbacks\[0\]"),
    ],
)
def test_map_callbacks_argument_errors(callbacks: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ds.NumpySlicesDataset([1, 2], shuffle=False).map(lambda x: x, callbacks=callbacks)


@pytest.mark.parametrize(("step_size", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_step_size_errors(step_size: Any, error: type) -> None:
    with pytest.raises(error, match="step_size"):
        DSCallback(step_size)
    with pytest.raises(error, match="step_size"):
        WaitedDSCallback(step_size)


def test_waited_callback_without_sync_hooks_is_refused_when_the_pipeline_runs() -> None:
    class Empty(WaitedDSCallback):
        pass

    data = ds.NumpySlicesDataset([1, 2], shuffle=False).map(lambda x: x, callbacks=Empty())
    with pytest.raises(AttributeError, match="did not override any of the 6 callback methods.*sync_epoch_begin"):
        list(data)


def test_sync_update_with_num_batch_releases_that_many_batches() -> None:
    data = ds.NumpySlicesDataset(np.arange(12), shuffle=False).sync_wait("c", num_batch=1).batch(2)
    got = []
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    got.append(next(iterator)[0].tolist())
    data.sync_update("c", num_batch=2)  # two batches now
    got.append(next(iterator)[0].tolist())
    got.append(next(iterator)[0].tolist())
    with pytest.warns(RuntimeWarning, match="sync_wait\\('c'\\)"):
        got.append(next(iterator)[0].tolist())  # nothing released: disabled, with a warning
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7]]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"condition_name": 1}, TypeError, "condition_name"),
        ({"condition_name": "c", "num_batch": 1.0}, TypeError, "num_batch"),
        ({"condition_name": "c", "num_batch": 0}, ValueError, "num_batch need to be greater than 0"),
        ({"condition_name": "c", "callback": 3}, TypeError, "callback"),
    ],
)
def test_sync_wait_argument_errors(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ds.NumpySlicesDataset([1, 2], shuffle=False).sync_wait(**kwargs)


def test_the_dataset_package_imports_train_only_for_waited_ds_callback() -> None:
    import subprocess
    import sys

    code = (
        "import sys, nbcallback.dataset as ds; from nbcallback.dataset.callback import DSCallback; "
        "before = 'nbcallback.train' in sys.modules; "
        "from nbcallback.dataset.callback import WaitedDSCallback; "
        "print(before, 'nbcallback.train' in sys.modules, WaitedDSCallback is ds.WaitedDSCallback)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE_S, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
