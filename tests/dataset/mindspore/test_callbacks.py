"""Ported from mindspore-ai/mindspore tests/ut/python/dataset/test_callbacks.py.

The event lists are built and compared exactly as in MindSpore, and the
classes come from MindSpore's import (``nbcallback.dataset.callback``).
Differences:

* MindSpore's ``Net`` (a Cell returning ``x``) becomes a torch module with one
  parameter returning a scalar, trained by ``Model(net, optimizer=None)``;
  ``MyMSCallback`` records in ``on_train_step_end``/``on_train_epoch_end``
  (MindSpore's ``step_end``/``epoch_end``: nbcallback's Model warns about the
  legacy names in custom callbacks, as MindSpore 2.x does).
* test_callbacks_non_sink_mismatch_size: MindSpore waits
  ``config.set_callback_timeout(1)`` second and raises "ds_step_begin timed out
  after 1 second(s)". nbcallback's pipeline runs in the training thread, so the
  wait could never end: the RuntimeError comes at once, quotes that message and
  names ``ds_step_begin``, step 3 and ``step_size``.
* test_callbacks_sink_simulation and test_callbacks_train_end drive the
  pipeline through ``to_device()``/``send()`` (the device queue, which
  nbcallback does not have) in MindSpore's background thread, with sleeps.
  Ported with a consumer thread iterating the pipeline instead of ``send()``,
  and the rows handed over through a queue instead of the sleeps: the same
  event sequences, and train_end checks that after ``end`` the waiting
  pipeline runs to the end. Both are also run in one thread (the training side
  driven between the rows taken, ``begin`` first, which Model calls).
* test_callbacks_exceptions: MindSpore's assertion sits inside the
  ``pytest.raises`` block (never reached); here it is checked after it.
"""
from __future__ import annotations

from typing import Any, Iterator

import queue

import pytest
import torch

import nbcallback.dataset as ds
from nbcallback.dataset.callback import DSCallback, WaitedDSCallback
from nbcallback.train import Callback, Model
from tests.dataset.waiting import DEADLINE_S, Worker


class BaseCallback(DSCallback):
    def __init__(self, step_size: int = 1, events: list | None = None, cb_id: int = 0) -> None:
        super().__init__(step_size)
        self.events = events
        self.cb_id = cb_id

    def append(self, event_name: str, ds_run_context: Any) -> None:
        event = [event_name, ds_run_context.cur_epoch_num, ds_run_context.cur_step_num_in_epoch, ds_run_context.cur_step_num]
        event = "_".join([str(e) for e in event])
        index = -1
        for i, e in enumerate(self.events):
            if e[0] == event:
                index = i
                break
        if index != -1:
            self.events[index][1].append(self.cb_id)
        else:
            self.events.append((event, [self.cb_id]))


class Begin(BaseCallback):
    def ds_begin(self, ds_run_context: Any) -> None:
        self.append("begin", ds_run_context)


class EpochBegin(BaseCallback):
    def ds_epoch_begin(self, ds_run_context: Any) -> None:
        self.append("epoch_begin", ds_run_context)


class EpochEnd(BaseCallback):
    def ds_epoch_end(self, ds_run_context: Any) -> None:
        self.append("epoch_end", ds_run_context)


class StepBegin(BaseCallback):
    def ds_step_begin(self, ds_run_context: Any) -> None:
        self.append("step_begin", ds_run_context)


class StepEnd(BaseCallback):
    def ds_step_end(self, ds_run_context: Any) -> None:
        self.append("step_end", ds_run_context)


class MyDSCallback(Begin, EpochBegin, EpochEnd, StepBegin, StepEnd):
    pass


def generate_expected(epoch_num: int, step_num: int, step_size: int = 1, map_num: int = 1, repeat: int = 1) -> list:
    events = []
    cb_id = list(range(map_num))

    def append(name: str, e: int, s: int) -> None:
        event = [name, e + 1, s + 1, e * step_num * repeat + s + 1]
        event = "_".join([str(ev) for ev in event])
        events.append((event, cb_id))

    events.append(("begin_0_0_0", cb_id))
    for e in range(epoch_num):
        append("epoch_begin", e, -1)
        for s in range(step_num * repeat):
            if s % step_size == 0:
                append("step_begin", e, s)
                append("step_end", e, s)
        append("epoch_end", e, step_num * repeat - 1)
    return events


def build_test_case_1cb(epochs: int, steps: int, step_size: int = 1, repeat: int = 1) -> None:
    events: list = []

    arr = list(range(1, steps + 1))
    data = ds.NumpySlicesDataset(arr, shuffle=False)

    my_cb = MyDSCallback(step_size=step_size, events=events)

    data = data.map(operations=(lambda x: x), callbacks=my_cb)
    if repeat != 1:
        if repeat % 2 == 0 and repeat != 2:
            data = data.repeat(2)
            data = data.map(operations=(lambda x: x))
            data = data.repeat(repeat // 2)
        else:
            data = data.repeat(repeat)
    itr = data.create_tuple_iterator(num_epochs=epochs)
    for _ in range(epochs):
        for _ in itr:
            pass

    expected_events = generate_expected(epochs, steps, step_size, 1, repeat)
    assert expected_events == events


def build_test_case_2cbs(epochs: int, steps: int) -> None:
    events1: list = []
    events2: list = []
    my_cb1 = MyDSCallback(events=events1)
    my_cb2 = MyDSCallback(events=events2)

    arr = list(range(1, steps + 1))
    data = ds.NumpySlicesDataset(arr, shuffle=False)

    data = data.map(operations=(lambda x: x), callbacks=[my_cb1, my_cb2])

    itr = data.create_tuple_iterator(num_epochs=epochs)
    for _ in range(epochs):
        for _ in itr:
            pass

    expected_events = generate_expected(epochs, steps)
    assert expected_events == events1
    assert expected_events == events2


def build_test_case_2maps(epochs: int, steps: int) -> None:
    events: list = []
    my_cb1 = MyDSCallback(events=events, cb_id=0)
    my_cb2 = MyDSCallback(events=events, cb_id=1)

    arr = list(range(1, steps + 1))
    data = ds.NumpySlicesDataset(arr, shuffle=False)

    data = data.map(operations=(lambda x: x), callbacks=my_cb1)
    data = data.map(operations=(lambda x: x), callbacks=my_cb2)

    itr = data.create_tuple_iterator(num_epochs=epochs)
    for _ in range(epochs):
        for _ in itr:
            pass

    expected_events = generate_expected(epochs, steps, map_num=2)

    assert expected_events[1:] == events[1:]

    for event in events:
        assert len(event) == 2
        event, cb_ids = event
        if event != "begin_0_0_0":
            assert cb_ids[0] == 0
            assert cb_ids[1] == 1


def test_callbacks_all_methods() -> None:
    build_test_case_1cb(1, 1)
    build_test_case_1cb(1, 2)
    build_test_case_1cb(1, 3)
    build_test_case_1cb(1, 4)

    build_test_case_1cb(2, 1)
    build_test_case_1cb(2, 2)
    build_test_case_1cb(2, 3)
    build_test_case_1cb(2, 4)

    build_test_case_1cb(3, 1)
    build_test_case_1cb(3, 2)
    build_test_case_1cb(3, 3)
    build_test_case_1cb(3, 4)


def test_callbacks_var_step_size() -> None:
    build_test_case_1cb(1, 2, 2)
    build_test_case_1cb(1, 3, 2)
    build_test_case_1cb(1, 4, 2)

    build_test_case_1cb(2, 2, 2)
    build_test_case_1cb(2, 3, 2)
    build_test_case_1cb(2, 4, 2)

    build_test_case_1cb(3, 2, 2)
    build_test_case_1cb(3, 3, 2)
    build_test_case_1cb(3, 4, 2)


def test_callbacks_all_2cbs() -> None:
    build_test_case_2cbs(4, 1)
    build_test_case_2cbs(4, 2)
    build_test_case_2cbs(4, 3)
    build_test_case_2cbs(4, 4)


def test_callbacks_2maps() -> None:
    # build_test_case_2maps is defined but never called in MindSpore's file; it runs here.
    build_test_case_2maps(2, 1)
    build_test_case_2maps(2, 3)
    build_test_case_2maps(3, 4)


class MyWaitedCallback(WaitedDSCallback):
    def __init__(self, events: list, step_size: int = 1) -> None:
        super().__init__(step_size)
        self.events = events

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
        event = f"ds_epoch_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}"
        self.events.append(event)

    def sync_step_begin(self, train_run_context: Any, ds_run_context: Any) -> None:
        event = f"ds_step_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}"
        self.events.append(event)


class MyMSCallback(Callback):
    def __init__(self, events: list) -> None:
        self.events = events

    def on_train_epoch_end(self, run_context: Any) -> None:
        cb_params = run_context.original_args()
        event = f"ms_epoch_end_{cb_params.cur_epoch_num}_{cb_params.cur_step_num}"
        self.events.append(event)

    def on_train_step_end(self, run_context: Any) -> None:
        cb_params = run_context.original_args()
        event = f"ms_step_end_{cb_params.cur_epoch_num}_{cb_params.cur_step_num}"
        self.events.append(event)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x.float() * self.weight).sum()


def test_callbacks_non_sink() -> None:
    events: list = []
    my_cb1 = MyWaitedCallback(events, 1)
    my_cb2 = MyMSCallback(events)
    arr = [1, 2, 3, 4]
    data = ds.NumpySlicesDataset((arr, arr), column_names=["c1", "c2"], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=my_cb1)

    net = Net()
    model = Model(net, optimizer=None)

    model.train(2, data, dataset_sink_mode=False, callbacks=[my_cb2, my_cb1])
    expected_synced_events = ['ms_step_end_1_1', 'ds_step_begin_1_2', 'ms_step_end_1_2', 'ds_step_begin_1_3',
                              'ms_step_end_1_3', 'ds_step_begin_1_4', 'ms_step_end_1_4',
                              'ms_epoch_end_1_4', 'ds_epoch_begin_2_4',
                              'ds_step_begin_2_5', 'ms_step_end_2_5', 'ds_step_begin_2_6',
                              'ms_step_end_2_6', 'ds_step_begin_2_7', 'ms_step_end_2_7', 'ds_step_begin_2_8',
                              'ms_step_end_2_8', 'ms_epoch_end_2_8']

    assert events[:18] == expected_synced_events


def test_callbacks_non_sink_batch_size2() -> None:
    events: list = []
    my_cb1 = MyWaitedCallback(events, 2)
    my_cb2 = MyMSCallback(events)
    arr = [1, 2, 3, 4]
    data = ds.NumpySlicesDataset((arr, arr), column_names=["c1", "c2"], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=my_cb1)
    data = data.batch(2)
    net = Net()
    model = Model(net, optimizer=None)

    model.train(2, data, dataset_sink_mode=False, callbacks=[my_cb2, my_cb1])

    expected_synced_events = ['ms_step_end_1_1', 'ds_step_begin_1_3',
                              'ms_step_end_1_2',
                              'ms_epoch_end_1_2', 'ds_epoch_begin_2_4',
                              'ds_step_begin_2_5', 'ms_step_end_2_3', 'ds_step_begin_2_7',
                              'ms_step_end_2_4', 'ms_epoch_end_2_4']

    assert events[:10] == expected_synced_events


def test_callbacks_non_sink_mismatch_size() -> None:
    default_timeout = ds.config.get_callback_timeout()
    ds.config.set_callback_timeout(1)

    events: list = []
    my_cb1 = MyWaitedCallback(events, 2)
    my_cb2 = MyMSCallback(events)
    arr = [1, 2, 3, 4]
    data = ds.NumpySlicesDataset((arr, arr), column_names=["c1", "c2"], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=my_cb1)
    data = data.batch(3)
    net = Net()
    model = Model(net, optimizer=None)
    try:
        with pytest.raises(RuntimeError) as err:
            model.train(2, data, dataset_sink_mode=False, callbacks=[my_cb2, my_cb1])
    finally:
        ds.config.set_callback_timeout(default_timeout)
    assert "ds_step_begin timed out after 1 second(s)" in str(err.value)
    assert "step 3" in str(err.value) and "step_size" in str(err.value)


def test_callbacks_validations() -> None:
    with pytest.raises(Exception) as err:
        data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
        data.map(operations=(lambda x: x), callbacks=0)
    assert "Argument callbacks with value 0 is not " in str(err.value)

    with pytest.raises(Exception) as err:
        my_cb1 = MyDSCallback()
        data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
        data.map(operations=(lambda x: x), callbacks=[my_cb1, 0])
    assert "Argument callbacks[1] with value 0 is not " in str(err.value)

    with pytest.raises(Exception) as err:
        class BadCB(DSCallback):
            pass

        my_cb = BadCB()

        data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
        data = data.map(operations=(lambda x: x), callbacks=my_cb)
        for _ in data:
            pass
    assert "Provided Callback class did not override any of the 6 callback methods." in str(err.value)


SINK_SIMULATION_EVENTS = ['ms_step_end_1_1', 'ds_step_begin_1_2', 'ms_step_end_1_2', 'ds_step_begin_1_3',
                          'ms_step_end_1_3', 'ds_step_begin_1_4', 'ms_step_end_1_4',
                          'ms_epoch_end_1_4', 'ds_epoch_begin_2_4',
                          'ds_step_begin_2_5', 'ms_step_end_2_5', 'ds_step_begin_2_6',
                          'ms_step_end_2_6', 'ds_step_begin_2_7', 'ms_step_end_2_7', 'ds_step_begin_2_8',
                          'ms_step_end_2_8', 'ms_epoch_end_2_8']


def send(iterator: Iterator[Any], epochs: int) -> tuple[Worker, "queue.Queue[Any]"]:
    """MindSpore's ``to_device().send(num_epochs)``: a thread runs the pipeline; its rows come through a queue."""
    rows: queue.Queue = queue.Queue()

    def run() -> None:
        for _ in range(epochs):
            for row in iterator:
                rows.put(row)
        rows.put(None)

    return Worker(run), rows


def test_callbacks_sink_simulation() -> None:
    events: list = []
    epochs = 2
    my_cb = MyWaitedCallback(events, 1)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=my_cb)
    sender, rows = send(data.create_tuple_iterator(num_epochs=epochs), epochs)
    for e in range(epochs):
        for s in range(4):
            rows.get(timeout=DEADLINE_S)  # (MindSpore: time.sleep(0.5))
            events.append(f"ms_step_end_{e + 1}_{e * 4 + s + 1}")
            my_cb.step_end(run_context=0)
        events.append(f"ms_epoch_end_{e + 1}_{(e + 1) * 4}")
        my_cb.epoch_end(run_context=0)
    assert rows.get(timeout=DEADLINE_S) is None
    sender.result()

    assert events == SINK_SIMULATION_EVENTS


def test_callbacks_sink_simulation_in_one_thread() -> None:
    events: list = []
    epochs = 2
    my_cb = MyWaitedCallback(events, 1)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=my_cb)
    itr = data.create_tuple_iterator(num_epochs=epochs)
    my_cb.begin(run_context=0)
    for e in range(epochs):
        for s, _ in enumerate(itr):
            events.append(f"ms_step_end_{e + 1}_{e * 4 + s + 1}")
            my_cb.step_end(run_context=0)
        events.append(f"ms_epoch_end_{e + 1}_{(e + 1) * 4}")
        my_cb.epoch_end(run_context=0)

    assert events == SINK_SIMULATION_EVENTS


def test_callbacks_repeat() -> None:
    build_test_case_1cb(epochs=2, steps=2, step_size=1, repeat=2)
    build_test_case_1cb(epochs=2, steps=2, step_size=1, repeat=3)
    build_test_case_1cb(epochs=2, steps=2, step_size=2, repeat=3)
    build_test_case_1cb(epochs=3, steps=2, step_size=4, repeat=3)

    build_test_case_1cb(epochs=2, steps=2, step_size=1, repeat=2)
    build_test_case_1cb(epochs=2, steps=2, step_size=1, repeat=4)
    build_test_case_1cb(epochs=2, steps=2, step_size=2, repeat=8)
    build_test_case_1cb(epochs=3, steps=2, step_size=4, repeat=16)


def test_callbacks_exceptions() -> None:
    class BadCB(DSCallback):
        def ds_begin(self, ds_run_context: Any) -> None:
            raise RuntimeError("Bad begin")

    with pytest.raises(Exception) as err:
        data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
        data = data.map(operations=(lambda x: x), callbacks=BadCB())
        for _ in data:
            pass
    assert "Bad begin" in str(err.value)


def test_callbacks_train_end() -> None:
    # MindSpore: no asserts, just no deadlock or exception. The pipeline waits for step 1 to end; end() releases it
    # for good, and every row comes.
    events: list = []
    epochs = 2

    my_cb = MyWaitedCallback(events, 1)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=[my_cb])
    sender, rows = send(data.create_tuple_iterator(num_epochs=epochs), epochs)
    first = rows.get(timeout=DEADLINE_S)  # (MindSpore: time.sleep(0.5))
    my_cb.end(run_context={})
    rest = [rows.get(timeout=DEADLINE_S) for _ in range(4 * epochs)]
    sender.result()
    assert [int(row[0]) for row in [first, *rest[:-1]]] == [1, 2, 3, 4] * epochs and rest[-1] is None


def test_callbacks_train_end_in_one_thread() -> None:
    events: list = []
    epochs = 2

    my_cb = MyWaitedCallback(events, 1)
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    data = data.map(operations=(lambda x: x), callbacks=[my_cb])
    itr = data.create_tuple_iterator(num_epochs=epochs)
    my_cb.begin(run_context={})
    my_cb.end(run_context={})
    rows = [int(row[0]) for _ in range(epochs) for row in itr]
    assert rows == [1, 2, 3, 4] * epochs


def test_callbacks_one_cb() -> None:
    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    events1: list = []
    events2: list = []
    events3: list = []
    my_begin = Begin(events=events1, cb_id=1)
    my_epoch_begin = EpochBegin(events=events2, cb_id=2)
    my_epoch_end = EpochEnd(events=events3, cb_id=3)
    my_step_begin = StepBegin(events=events3, cb_id=3)
    my_step_end = StepEnd(events=events2, cb_id=2)

    data = data.map(operations=(lambda x: x), callbacks=my_begin)
    data = data.map(operations=(lambda x: x), callbacks=[my_epoch_begin, my_step_end])
    data = data.map(operations=(lambda x: x), callbacks=[my_epoch_end, my_step_begin])

    itr = data.create_tuple_iterator(num_epochs=2)
    for _ in range(2):
        for _ in itr:
            pass
    expected_events1 = [('begin_0_0_0', [1])]
    expected_events2 = [('epoch_begin_1_0_0', [2]), ('step_end_1_1_1', [2]), ('step_end_1_2_2', [2]),
                        ('step_end_1_3_3', [2]), ('step_end_1_4_4', [2]), ('epoch_begin_2_0_4', [2]),
                        ('step_end_2_1_5', [2]), ('step_end_2_2_6', [2]), ('step_end_2_3_7', [2]),
                        ('step_end_2_4_8', [2])]
    expected_events3 = [('step_begin_1_1_1', [3]), ('step_begin_1_2_2', [3]), ('step_begin_1_3_3', [3]),
                        ('step_begin_1_4_4', [3]), ('epoch_end_1_4_4', [3]), ('step_begin_2_1_5', [3]),
                        ('step_begin_2_2_6', [3]), ('step_begin_2_3_7', [3]), ('step_begin_2_4_8', [3]),
                        ('epoch_end_2_4_8', [3])]
    assert events1 == expected_events1
    assert events2 == expected_events2
    assert events3 == expected_events3


def test_clear_callback() -> None:
    # this test case will test that callback is removed for get_dataset_size and output_shape/type
    class FlagCallback(DSCallback):
        def __init__(self) -> None:
            super().__init__(step_size=1)
            self.flag = False
            self.row_cnt = 0

        def ds_begin(self, ds_run_context: Any) -> None:
            # if callback isn't removed in getter pass, this function will be called
            self.flag = True

        def ds_step_begin(self, ds_run_context: Any) -> None:
            self.row_cnt += 1

    data = ds.NumpySlicesDataset([1, 2, 3, 4], shuffle=False)
    cb = FlagCallback()
    # make sure variables are properly initialized before testing
    assert not cb.flag and cb.row_cnt == 0
    data = data.map(operations=(lambda x: x), callbacks=cb)
    assert data.get_dataset_size() == 4
    assert data.output_shapes() == [[]]
    # make sure callback is never called by checking flag and row_cnt
    assert not cb.flag and cb.row_cnt == 0
    for _ in data.create_dict_iterator(num_epochs=1):
        pass
    # this ensure that callback is indeed called
    assert cb.flag and cb.row_cnt == 4
