"""Dataset callbacks and ``sync_wait`` across threads, and where nothing could end a wait.

MindSpore's pipeline runs in its own threads, so a ``WaitedDSCallback`` waits
for training's ``step_end``/``epoch_end`` and a ``sync_wait`` for
``sync_update``, at most ``config.get_callback_timeout()`` seconds. nbcallback's
pipeline runs in the thread that iterates it: a consumer thread waits as in
MindSpore; where the iterating thread is the one that would end the wait, the
error (warning) comes at once. Every wait here is bounded (see
:mod:`tests.dataset.waiting`); the timeouts that are meant to expire are
fractions of a second.
"""
from __future__ import annotations

import queue
import time
import warnings
from typing import Any, Iterator

import numpy as np
import pytest
import torch

import nbcallback.dataset as ds
from nbcallback.train import Model
from tests.dataset.waiting import DEADLINE_S, Worker, callback_timeout, in_thread

SHORT_S = 0.2  # a timeout that is meant to expire


# --------------------------------------------------------------------------- the import


def test_mindspore_dataset_callback_import() -> None:
    from nbcallback.dataset.callback import DSCallback, WaitedDSCallback

    assert DSCallback is ds.DSCallback and WaitedDSCallback is ds.WaitedDSCallback
    namespace: dict[str, Any] = {}
    exec("from nbcallback.dataset.callback import *", namespace)
    assert namespace["DSCallback"] is DSCallback and namespace["WaitedDSCallback"] is WaitedDSCallback


# --------------------------------------------------------------------------- the setting


def test_callback_timeout_takes_fractions_of_a_second_and_is_restored() -> None:
    assert ds.config.get_callback_timeout() == 60  # MindSpore's default
    with callback_timeout(0.25):
        assert ds.config.get_callback_timeout() == 0.25
    with callback_timeout(3):
        assert ds.config.get_callback_timeout() == 3
    assert ds.config.get_callback_timeout() == 60


@pytest.mark.parametrize(
    ("bad", "error"),
    [(True, TypeError), ("1", TypeError), (None, TypeError), (0, ValueError), (-0.5, ValueError),
     (float("nan"), ValueError), (float("inf"), ValueError), (2**31, ValueError)],
)
def test_callback_timeout_refuses_bad_values(bad: Any, error: type) -> None:
    with pytest.raises(error, match="imeout"):
        ds.config.set_callback_timeout(bad)
    assert ds.config.get_callback_timeout() == 60


# --------------------------------------------------------------------------- WaitedDSCallback


def handed(train_run_context: Any) -> Any:
    """What a sync call was handed: the tests' string, or the training step of Model's context at that time."""
    return train_run_context if isinstance(train_run_context, str) else train_run_context.original_args().cur_step_num


class Recorder(ds.WaitedDSCallback):
    """Records each sync call with (what describes) the training context it was handed."""

    def __init__(self, events: list, step_size: int = 1) -> None:
        super().__init__(step_size)
        self.events = events

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
        self.events.append(f"ds_epoch_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}")
        self.events.append(("context", handed(train_run_context)))

    def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
        self.events.append(f"ds_step_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}")
        self.events.append(("context", handed(train_run_context)))


def regression_data(rows: int = 16) -> ds.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": x[:, :1] * 2.0}, shuffle=False)


def new_model() -> Model:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    return Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))


def test_without_training_the_pipeline_raises_at_once_naming_the_fix() -> None:
    events: list = []
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=Recorder(events))
    with callback_timeout(30):  # were it waited for, the test would fail on the message below, 30 s later
        with pytest.raises(RuntimeError) as err:
            list(data)
    message = str(err.value)
    assert "ds_step_begin" in message and "step 2" in message
    assert "could never end" in message and "raises at once" in message
    assert "'ds_step_begin timed out after 30 second(s).'" in message  # MindSpore's message, quoted
    assert "Model.train/fit(callbacks=[...])" in message  # the fix
    assert events == []


def test_without_training_an_epoch_sync_raises_at_the_second_epoch() -> None:
    class EpochOnly(ds.WaitedDSCallback):
        def sync_epoch_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
            raise AssertionError("never called: nothing ended epoch 1")

    data = ds.NumpySlicesDataset([1, 2, 3], shuffle=False).map(lambda x: x, callbacks=EpochOnly())
    iterator = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [int(row[0]) for row in iterator] == [1, 2, 3]  # epoch 1 needs nothing from training
    with pytest.raises(RuntimeError, match=r"ds_epoch_begin of EpochOnly: .*epoch 2.*Model\.train/fit"):
        list(iterator)


def test_model_train_without_the_callback_in_its_list_raises_at_once() -> None:
    events: list = []
    waited = Recorder(events, step_size=4)
    train = regression_data().map(lambda x: x, "x", callbacks=waited).batch(4)
    with callback_timeout(30):
        with pytest.raises(RuntimeError, match=r"ds_step_begin of Recorder: .*step 5.*could never end") as err:
            new_model().train(2, train, callbacks=[])  # the WaitedDSCallback is missing here
    assert "Give this Recorder to Model.train/fit(callbacks=[...]) as well as to map(callbacks=...)" in str(err.value)
    assert events == []


def test_model_train_without_the_callback_in_another_thread_times_out_with_mindspores_message() -> None:
    # The callback was made in this thread, the training runs in another: this thread might still end the
    # steps (as MindSpore's tests do by hand), so the pipeline waits callback_timeout seconds, then raises.
    waited = Recorder([], step_size=4)
    train = regression_data().map(lambda x: x, "x", callbacks=waited).batch(4)
    model = new_model()
    with callback_timeout(SHORT_S):
        started = time.monotonic()
        with pytest.raises(RuntimeError) as err:
            in_thread(lambda: model.train(2, train, callbacks=[]))
        waited_s = time.monotonic() - started
    message = str(err.value)
    assert message.startswith(f"ds_step_begin timed out after {SHORT_S} second(s). ")  # MindSpore's message
    assert "step 5" in message and "Model.train/fit(callbacks=[...])" in message
    assert waited_s >= SHORT_S


def consume(iterator: Iterator[Any], epochs: int, rows: "queue.Queue[Any]") -> None:
    """The consumer thread: every row of ``epochs`` epochs into ``rows``, then None."""
    for _ in range(epochs):
        for row in iterator:
            rows.put(int(row[0]))
    rows.put(None)


def test_a_consumer_thread_waits_for_each_step_and_epoch_training_ends() -> None:
    # MindSpore's sink simulation (test_callbacks.py) with its pipeline thread: the consumer thread iterates,
    # this thread plays training and ends each step after taking its row.
    events: list = []
    waited = Recorder(events)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=waited)
    rows: queue.Queue = queue.Queue()
    consumer = Worker(lambda: consume(data.create_tuple_iterator(num_epochs=2, output_numpy=True), 2, rows))
    for epoch in range(2):
        for step in range(4):
            assert rows.get(timeout=DEADLINE_S) == step + 1
            cur_step = epoch * 4 + step + 1
            events.append(f"ms_step_end_{epoch + 1}_{cur_step}")
            waited.step_end(run_context=f"step {cur_step}")
        events.append(f"ms_epoch_end_{epoch + 1}_{(epoch + 1) * 4}")
        waited.epoch_end(run_context=f"epoch {epoch + 1}")
    assert rows.get(timeout=DEADLINE_S) is None
    consumer.result()
    assert [e for e in events if isinstance(e, str)] == [
        "ms_step_end_1_1", "ds_step_begin_1_2", "ms_step_end_1_2", "ds_step_begin_1_3", "ms_step_end_1_3",
        "ds_step_begin_1_4", "ms_step_end_1_4", "ms_epoch_end_1_4", "ds_epoch_begin_2_4", "ds_step_begin_2_5",
        "ms_step_end_2_5", "ds_step_begin_2_6", "ms_step_end_2_6", "ds_step_begin_2_7", "ms_step_end_2_7",
        "ds_step_begin_2_8", "ms_step_end_2_8", "ms_epoch_end_2_8",
    ]
    # Each sync call got the context of the training step (epoch) that had just ended.
    contexts = [e[1] for e in events if isinstance(e, tuple)]
    assert contexts == ["step 1", "step 2", "step 3", "epoch 1", "step 4", "step 5", "step 6", "step 7"]


def test_training_end_releases_a_waiting_consumer_for_good() -> None:
    events: list = []
    waited = Recorder(events)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=[waited])
    rows: queue.Queue = queue.Queue()
    consumer = Worker(lambda: consume(data.create_tuple_iterator(num_epochs=2, output_numpy=True), 2, rows))
    assert rows.get(timeout=DEADLINE_S) == 1  # the consumer now waits for step 1 to end
    waited.end(run_context="the end")
    got = [rows.get(timeout=DEADLINE_S) for _ in range(8)]
    consumer.result()
    assert got == [2, 3, 4, 1, 2, 3, 4, None]
    assert [e for e in events if isinstance(e, str)] == [
        "ds_step_begin_1_2", "ds_step_begin_1_3", "ds_step_begin_1_4", "ds_epoch_begin_2_4",
        "ds_step_begin_2_5", "ds_step_begin_2_6", "ds_step_begin_2_7", "ds_step_begin_2_8",
    ]
    assert {e[1] for e in events if isinstance(e, tuple)} == {"the end"}


def test_a_consumer_thread_that_nothing_releases_times_out_with_mindspores_message() -> None:
    events: list = []
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=Recorder(events))
    with callback_timeout(SHORT_S):
        started = time.monotonic()
        with pytest.raises(RuntimeError) as err:
            in_thread(lambda: list(data))
        waited_s = time.monotonic() - started
    assert str(err.value).startswith(f"ds_step_begin timed out after {SHORT_S} second(s). ")
    assert "Model.train/fit(callbacks=[...])" in str(err.value)
    assert waited_s >= SHORT_S and events == []


def test_a_consumer_thread_waiting_on_a_training_that_ends_no_step_times_out_naming_step_size() -> None:
    events: list = []
    waited = Recorder(events)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False).map(lambda x: x, callbacks=waited)
    waited.begin(run_context="training")  # training runs in this thread and never ends a step
    with callback_timeout(SHORT_S):
        with pytest.raises(RuntimeError) as err:
            in_thread(lambda: list(data))
    message = str(err.value)
    assert message.startswith(f"ds_step_begin timed out after {SHORT_S} second(s). ")
    assert "Set step_size to the rows of one training step" in message
    assert "ds.config.set_callback_timeout(seconds)" in message and events == []


def test_training_in_the_pipelines_thread_still_needs_no_wait() -> None:
    # The usual case: Model iterates the pipeline in its own thread; with the default 60 s timeout the run
    # finishes as fast as without the callback (it never waits), and every step is synchronised.
    events: list = []
    waited = Recorder(events, step_size=4)
    train = regression_data().map(lambda x: x, "x", callbacks=waited).batch(4)
    in_thread(lambda: new_model().train(2, train, callbacks=[waited]))
    names = [e for e in events if isinstance(e, str)]
    assert names == ["ds_step_begin_1_5", "ds_step_begin_1_9", "ds_step_begin_1_13", "ds_epoch_begin_2_16",
                     "ds_step_begin_2_17", "ds_step_begin_2_21", "ds_step_begin_2_25", "ds_step_begin_2_29"]
    steps = [e[1] for e in events if isinstance(e, tuple)]
    assert steps == [1, 2, 3, 4, 4, 5, 6, 7]


# --------------------------------------------------------------------------- sync_wait


class Offset:
    """The map op after the sync_wait: adds the offset the last sync_update handed over."""

    def __init__(self) -> None:
        self.offset = 0

    def update(self, data: Any) -> None:
        self.offset = data["offset"]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x + self.offset


def synced(aug: Offset, rows: int = 20, batch: int = 4) -> ds.Dataset:
    data = ds.NumpySlicesDataset(np.arange(rows), shuffle=False).sync_wait("policy", callback=aug.update)
    return data.map(aug, "column_0").batch(batch)


def test_sync_wait_blocks_a_consumer_thread_until_sync_update() -> None:
    aug = Offset()
    data = synced(aug)
    batches: queue.Queue = queue.Queue()

    def consumer() -> None:
        for (batch,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
            batches.put(batch.tolist())
        batches.put(None)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker = Worker(consumer)
        got = []
        for k in range(5):
            got.append(batches.get(timeout=DEADLINE_S))
            data.sync_update("policy", data={"offset": 100 * (k + 1)})
        assert batches.get(timeout=DEADLINE_S) is None
        worker.result()
    # Batch k was made only after the k-th sync_update: it carries the offset that update handed over.
    assert got == [[4 * k + i + 100 * k for i in range(4)] for k in range(5)]
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_sync_wait_in_a_consumer_thread_times_out_then_lets_rows_pass() -> None:
    aug = Offset()
    data = synced(aug)
    with callback_timeout(SHORT_S), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        rows = in_thread(lambda: [v for (b,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True)
                                  for v in b.tolist()])
        waited_s = time.monotonic() - started
    assert rows == list(range(20))  # after the timeout the condition is disabled: everything passes
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1
    assert messages[0].startswith(
        "Timeout happened in sync_wait, maybe dataset.sync_update(condition=...) is not added after "
        "dataset.create_dict_iterator(...), now disabling lock."  # MindSpore's warning
    )
    assert f"{SHORT_S} second(s)" in messages[0] and "set_callback_timeout" in messages[0]
    assert waited_s >= SHORT_S


def test_disable_sync_from_another_thread_wakes_a_waiting_consumer() -> None:
    aug = Offset()
    data = synced(aug)
    batches: queue.Queue = queue.Queue()

    def consumer() -> None:
        for (batch,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
            batches.put(batch.tolist())
        batches.put(None)

    with callback_timeout(30), warnings.catch_warnings(record=True) as caught:  # a timeout would warn
        warnings.simplefilter("always")
        worker = Worker(consumer)
        assert batches.get(timeout=DEADLINE_S) == [0, 1, 2, 3]  # then the consumer waits for a sync_update
        data.disable_sync()
        rest = [batches.get(timeout=DEADLINE_S) for _ in range(5)]
        worker.result()
    assert rest == [[4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [16, 17, 18, 19], None]
    assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_sync_wait_in_the_thread_that_calls_sync_update_warns_at_once() -> None:
    # The single-thread case: waiting could never end, so nothing waits (whatever the timeout).
    aug = Offset()
    data = synced(aug)
    with callback_timeout(30), pytest.warns(RuntimeWarning) as caught:
        rows = [v for (b,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True) for v in b.tolist()]
    assert rows == list(range(20))
    message = str(caught[0].message)
    assert message.startswith("sync_wait('policy'): ") and "could never end" in message
    assert "'Timeout happened in sync_wait'" in message and "30 second(s)" in message
