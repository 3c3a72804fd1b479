"""GeneratorDataset / NumpySlicesDataset and the operations beyond MindSpore's own tests."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import nbcallback.dataset as ds
from nbcallback.dataset import transforms, vision

torch.set_num_threads(1)


class RandomAccess:
    def __init__(self, n: int = 10) -> None:
        self.n = n

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        return np.full((2,), i, np.int32), i

    def __len__(self) -> int:
        return self.n


def gen():  # type: ignore[no-untyped-def]
    for i in range(5):
        yield np.array([i]), float(i)


# --------------------------------------------------------------------------- GeneratorDataset


def test_generator_three_kinds_of_source() -> None:
    random_access = ds.GeneratorDataset(RandomAccess(), ["data", "label"], shuffle=False)
    assert random_access.get_dataset_size() == 10
    rows = list(random_access.create_tuple_iterator(output_numpy=True))
    assert [int(r[1]) for r in rows] == list(range(10)) and rows[3][0].dtype == np.int32
    assert rows[0][1].dtype == np.int64  # a Python int becomes int64
    shuffled = ds.GeneratorDataset(RandomAccess(), ["data", "label"])  # random-access: shuffled by default
    ds.config.set_seed(0)
    assert sorted(int(r[1]) for r in shuffled) == list(range(10))
    callable_source = ds.GeneratorDataset(gen, ["a", "b"])
    assert [float(r[1]) for r in callable_source] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert next(iter(callable_source))[1].dtype == torch.float64
    assert callable_source.get_dataset_size() == 5  # no __len__: counted by running it
    iterable = ds.GeneratorDataset([(np.array(i),) for i in range(4)], ["x"], shuffle=True)  # a list is random-access
    assert iterable.get_dataset_size() == 4
    once = ds.GeneratorDataset(gen(), ["a", "b"])  # a generator object is exhausted after one epoch
    assert sum(1 for _ in once) == 5 and sum(1 for _ in once) == 0


def test_generator_object_source_counted_first_keeps_its_rows() -> None:
    # Regression: a generator object (one pass only) counted by get_dataset_size()/len() was consumed
    # by the count, so the epoch after it was empty; list(dataset) (which asks len()) gave [].
    def rows(n: int):  # type: ignore[no-untyped-def]
        return (np.array([i]) for i in range(n))

    assert [r[0].tolist() for r in ds.GeneratorDataset(rows(3), ["a"])] == [[0], [1], [2]]
    data = ds.GeneratorDataset(rows(5), ["a"])
    assert data.batch(2).get_dataset_size() == 3
    assert [b["a"].tolist() for b in data.batch(2).create_dict_iterator(output_numpy=True)] == [[[0], [1]], [[2], [3]], [[4]]]
    assert list(data) == []  # one pass only: the next epoch is empty, as a generator object is
    capped = ds.GeneratorDataset(rows(5), ["a"], num_samples=2)
    assert capped.get_dataset_size() == 2 and [r[0].tolist() for r in capped] == [[0], [1]]


def test_generator_random_access_shuffle_is_seeded() -> None:
    dataset = ds.GeneratorDataset(RandomAccess(20), ["data", "label"])
    ds.config.set_seed(3)
    first = [int(r[1]) for r in dataset]
    second = [int(r[1]) for r in dataset]
    ds.config.set_seed(3)
    assert [int(r[1]) for r in dataset] == first and first != second and sorted(first) == list(range(20))


def test_generator_sampler_shards_and_num_samples() -> None:
    assert [int(r[1]) for r in ds.GeneratorDataset(RandomAccess(), ["d", "l"], sampler=[4, 2, 7])] == [4, 2, 7]
    shard = ds.GeneratorDataset(RandomAccess(), ["d", "l"], num_shards=3, shard_id=1, shuffle=False)
    assert [int(r[1]) for r in shard] == [1, 4, 7] and shard.get_dataset_size() == 3
    capped = ds.GeneratorDataset(gen, ["a", "b"], num_samples=2)
    assert capped.get_dataset_size() == 2 and sum(1 for _ in capped) == 2


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((3, ["a"]), {}, TypeError, "should be callable, iterable or random accessible"),
        ((gen,), {}, ValueError, "Neither columns_names nor schema are provided."),
        ((gen, ["a"]), {"num_shards": 2}, ValueError, "num_shards and shard_id need to be passed in together."),
        ((RandomAccess(), ["a"]), {"num_shards": 2, "shard_id": 2}, ValueError, "shard_id should be less than num_shards."),
        ((gen, ["a"]), {"sampler": [0]}, ValueError, "sampler is not supported if source does not have attribute '__getitem__'."),
        ((gen, ["a"]), {"num_shards": 2, "shard_id": 0}, ValueError, "num_shards is not supported if source does not have"),
        ((RandomAccess(), ["a"]), {"sampler": [0], "shuffle": True}, ValueError, "sampler and shuffle cannot be specified"),
        ((gen, ["a"]), {"schema": "schema.json"}, NotImplementedError, "schema"),
        ((gen, ["a"]), {"num_parallel_workers": 0}, ValueError, "num_parallel_workers"),
        ((gen, ["a"]), {"python_multiprocessing": 1}, TypeError, "python_multiprocessing"),
        # Regression: shuffle's type went unchecked for a generator-function source (it is ignored there).
        ((gen, ["a"]), {"shuffle": "yes"}, TypeError, "Argument shuffle with value 'yes' is not of type"),
        ((RandomAccess(), ["a"]), {"shuffle": 1}, TypeError, "Argument shuffle with value 1 is not of type"),
        ((gen, ["a", "a"]), {}, ValueError, "Every column name should not be same with others in column_names"),
    ],
)
def test_generator_argument_errors(args: tuple, kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        ds.GeneratorDataset(*args, **kwargs)


def test_generator_random_access_needs_len() -> None:
    class NoLen:
        def __getitem__(self, i: int) -> int:
            return i

    with pytest.raises(RuntimeError, match="'__len__' method is required"):
        ds.GeneratorDataset(NoLen(), ["a"])


def test_generator_row_errors() -> None:
    with pytest.raises(RuntimeError, match="a row of 2 column"):
        list(ds.GeneratorDataset(lambda: iter([[1, 2]]), ["x"]))  # a list row is two columns
    with pytest.raises(TypeError, match="but got dict"):
        list(ds.GeneratorDataset(lambda: iter([{"a": 1}]), ["x"]))
    with pytest.raises(TypeError, match="expected to be int or float or str, but got object"):
        list(ds.GeneratorDataset(lambda: iter([(np.array([1, "a", None], dtype=object),)]), ["x"]))


# --------------------------------------------------------------------------- NumpySlicesDataset


def test_numpy_slices_names_and_errors() -> None:
    assert ds.NumpySlicesDataset(([1, 2], [3, 4])).get_col_names() == ["column_0", "column_1"]
    assert ds.NumpySlicesDataset({"a": [1], "b": [2]}, column_names=["x", "y"]).get_col_names() == ["x", "y"]
    with pytest.raises(TypeError, match="Argument data"):
        ds.NumpySlicesDataset(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Data length in each column is not equal."):
        ds.NumpySlicesDataset({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match=r"Num of input column names is 2, but required is 1 as data is list\."):
        ds.NumpySlicesDataset([1, 2], column_names=["a", "b"])
    with pytest.raises(ValueError, match=r"Num of input column names is 1, but required is 2\."):
        ds.NumpySlicesDataset({"a": [1], "b": [2]}, column_names=["a"])
    shuffled = ds.NumpySlicesDataset(list(range(30)))
    ds.config.set_seed(0)
    assert [int(r[0]) for r in shuffled] != list(range(30))  # shuffled by default, as in MindSpore


# --------------------------------------------------------------------------- operations


def test_numpy_slices_dict_value_without_rows() -> None:
    # Regression: {"a": 5} failed inside nbcallback with "TypeError: 'int' object is not iterable",
    # and {"a": "abc"} was sliced into three characters.
    for value in (5, "abc", np.float32(1.0), np.array(3), torch.tensor(3)):
        with pytest.raises(ValueError, match=r"the value of column 'a' is \w+, which has no first axis to slice along"):
            ds.NumpySlicesDataset({"a": value})


def _forgot_return(a):  # type: ignore[no-untyped-def]
    a + 1


_NOT_COLUMN_VALUES = [
    (_forgot_return, "NoneType"),
    (lambda a: (None,), "NoneType"),
    (lambda a: {"a": a}, "dict"),
    (lambda a: np.array([None]), "an array of Python objects"),
]


def _one_column_sources() -> list[ds.Dataset]:
    """One column ``a`` of 0..3, read by the fast path (NumpySlices) and by the row path (a generator)."""

    def rows():  # type: ignore[no-untyped-def]
        for i in range(4):
            yield (np.array(i),)

    return [
        ds.NumpySlicesDataset({"a": np.arange(4)}, shuffle=False),
        ds.GeneratorDataset(rows, ["a"], shuffle=False),
    ]


@pytest.mark.parametrize("source", range(2), ids=["column_source", "generator"])
@pytest.mark.parametrize("operation, what", _NOT_COLUMN_VALUES, ids=["None", "tuple_of_None", "dict", "objects"])
def test_map_python_operation_must_return_column_values(source: int, operation: Any, what: str) -> None:
    # Regression: a Python callable returning None or a dict gave object arrays that reached the
    # user (or failed later, far from the map); now the map names the callable and the columns.
    # The generator case is the row path's one-op-one-column shortcut, which skipped the check.
    data = _one_column_sources()[source]
    message = rf"map: .* on columns \['a'\] returned {what}; a Python operation must return"
    with pytest.raises(RuntimeError, match=message):
        list(data.map(operation, "a"))
    with pytest.raises(RuntimeError, match=message):
        list(data.map(operation, "a").batch(2))
    with pytest.raises(RuntimeError, match=message):  # the general path: two ops in one map
        list(data.map([lambda a: a, operation], "a"))
    assert [r[0].tolist() for r in data.map(lambda a: (a * 2, "s"), "a", ["x", "y"]).project("x")] == [0, 2, 4, 6]
    assert [r[0].tolist() for r in data.map(lambda a: a * 2, "a")] == [0, 2, 4, 6]


def test_batch_per_batch_map_must_return_a_tuple() -> None:
    # Regression: a non-tuple result (here an int) became a one-value column silently; MindSpore's
    # BatchOp::InvokeBatchMapFunc (mindspore/ccsrc/minddata/dataset/engine/datasetops/batch_op.cc)
    # refuses None and what does not cast to a tuple, and reads a returned list as the tuple of columns.
    data = ds.NumpySlicesDataset({"a": np.arange(6)}, shuffle=False)
    def returning(result: object) -> object:
        return lambda a, info: result

    for result in (5, None, np.zeros(2)):
        batched = data.batch(2, per_batch_map=returning(result), input_columns=["a"])
        with pytest.raises(RuntimeError, match=r"'per_batch_map' function should return a tuple .* but got "):
            list(batched)
    as_list = data.batch(2, per_batch_map=returning([np.array([7, 8])]), input_columns=["a"])
    assert [b[0].tolist() for b in as_list.create_tuple_iterator(output_numpy=True)] == [[7, 8]] * 3
    doubled = data.batch(3, per_batch_map=lambda a, info: ([x * 2 for x in a],), input_columns=["a"])
    assert [b[0].tolist() for b in doubled.create_tuple_iterator(output_numpy=True)] == [[0, 2, 4], [6, 8, 10]]


def test_batch_per_batch_map_and_callable_size() -> None:
    data = ds.NumpySlicesDataset({"a": np.arange(10), "b": np.arange(10) * 10}, shuffle=False)
    seen: list[tuple[int, int]] = []

    def add(a_list, b_list, info):  # type: ignore[no-untyped-def]
        seen.append((info.get_batch_num(), info.get_epoch_num()))
        return [x + y for x, y in zip(a_list, b_list)], [len(a_list)] * len(a_list)

    batched = data.batch(4, per_batch_map=add, input_columns=["a", "b"], output_columns=["sum", "n"])
    assert batched.get_col_names() == ["sum", "n"]
    out = list(batched.create_tuple_iterator(output_numpy=True))
    assert out[0][0].tolist() == [0, 11, 22, 33] and out[2][1].tolist() == [2, 2]
    assert seen == [(0, 0), (1, 0), (2, 0)]
    list(batched)
    assert seen[-1] == (2, 1)  # second epoch
    with pytest.raises(ValueError, match="The signature of per_batch_map should match with input columns."):
        data.batch(2, per_batch_map=lambda a, info: (a,), input_columns=["a", "b"])
    growing = data.batch(lambda info: info.get_batch_num() + 1)
    assert [len(b[0]) for b in growing] == [1, 2, 3, 4]
    assert growing.get_dataset_size() == 4 and growing.get_batch_size() == -1
    with pytest.raises(ValueError, match=r"callable batch_size should take one parameter \(BatchInfo\)."):
        data.batch(lambda: 2)


def test_padded_batch() -> None:
    data = ds.NumpySlicesDataset([[1], [2, 3], [4, 5, 6]], column_names=["x"], shuffle=False)
    with pytest.raises(RuntimeError, match="different shapes"):
        list(data.batch(3))
    (batch,) = list(data.padded_batch(3, pad_info={"x": ([4], -1)}).create_tuple_iterator(output_numpy=True))
    assert batch[0].tolist() == [[1, -1, -1, -1], [2, 3, -1, -1], [4, 5, 6, -1]]
    (batch,) = list(data.padded_batch(3).create_tuple_iterator(output_numpy=True))
    assert batch[0].shape == (3, 3)
    with pytest.raises(ValueError, match="value of pad_info should be a tuple of size 2."):
        data.padded_batch(2, pad_info={"x": [None, 0]})


def test_rename_project_errors_and_sizes() -> None:
    data = ds.NumpySlicesDataset({"a": [1, 2, 3], "b": [4, 5, 6]}, shuffle=False)
    assert data.rename("a", "z").get_col_names() == ["z", "b"]
    with pytest.raises(ValueError, match="Number of column in input_columns and output_columns is not equal."):
        data.rename(["a", "b"], ["z"])
    with pytest.raises(RuntimeError, match="'c' does not exist"):
        data.rename("c", "z")
    with pytest.raises(RuntimeError, match="'c' does not exist"):
        data.project(["c"])
    assert [r[0].item() for r in data.project(["b"])] == [4, 5, 6]
    assert data.repeat(3).get_dataset_size() == 9 and data.repeat().get_dataset_size() == 3
    assert data.repeat(4).get_repeat_count() == 4 and data.get_repeat_count() == 1
    with pytest.raises(ValueError, match=r"count should be either -1 or positive integer, range\[1, INT32_MAX\]."):
        data.repeat(0)
    with pytest.raises(ValueError, match=r"count should be either -1 or within the required interval of \(0, 2147483647\], got 0."):
        data.take(0)
    with pytest.raises(TypeError, match=r"Argument datasets"):
        data.concat((data,))  # type: ignore[arg-type]
    # Regression: a list holding a non-dataset said "is not of type [Dataset, list], but got list".
    with pytest.raises(TypeError, match=r"Argument dataset\[1\] with value 5 is not of type \[<class '.*Dataset'>\], but got <class 'int'>"):
        data.concat([data, 5])  # type: ignore[list-item]


def test_output_shapes_and_types() -> None:
    data = ds.NumpySlicesDataset({"image": np.zeros((5, 3, 2), np.float32), "label": np.arange(5, dtype=np.int32)})
    batched = data.batch(2)
    assert batched.output_shapes() == [[2, 3, 2], [2]]
    assert batched.output_types() == [np.dtype("float32"), np.dtype("int32")]
    assert batched.output_shapes(estimate=True) == [[None, 3, 2], [None]]
    ds.config.set_seed(8)
    a = [int(r[1]) for r in data]
    ds.config.set_seed(8)
    data.output_shapes()  # introspection leaves later shuffles as they were
    assert [int(r[1]) for r in data] == a


def test_map_expands_compose_and_keeps_the_column_path() -> None:
    data = ds.NumpySlicesDataset({"image": np.ones((4, 2, 2, 1), np.uint8)}, shuffle=False)
    mapped = data.map(transforms.Compose([vision.Rescale(2.0, 0.5), vision.HWC2CHW()]), "image").batch(4)
    (images,) = next(iter(mapped))
    assert images.shape == (4, 1, 2, 2) and float(images[0, 0, 0, 0]) == 2.5
    assert mapped._plan is not None and mapped._plan.lazy == []  # whole columns, no per-row work


def test_map_default_input_columns() -> None:
    data = ds.NumpySlicesDataset({"a": [1, 2], "b": [3, 4]}, shuffle=False)
    doubled = data.map(lambda a: a * 2)  # the first column, as in MindSpore
    assert [(r[0].item(), r[1].item()) for r in doubled] == [(2, 3), (4, 4)]
    assert data.map(transforms.TypeCast(torch.float32)).get_col_names() == ["a", "b"]


def test_iterator_stop_and_dict_numpy() -> None:
    data = ds.NumpySlicesDataset({"a": [1, 2, 3]}, shuffle=False)
    iterator = data.create_dict_iterator(num_epochs=2, output_numpy=True)
    assert next(iterator) == {"a": 1}
    iterator.stop()
    assert [d["a"].item() for d in iterator] == [1, 2, 3]


def test_random_access_generator_shards_itself_under_ddp(monkeypatch: pytest.MonkeyPatch) -> None:
    # As MnistDataset: with a process group of 2+ ranks initialised, a random-access
    # source takes (world_size, rank) as its shard and pads shards to equal size.
    import torch.distributed as dist

    from nbcallback.dataset import sources

    monkeypatch.setattr(sources, "_process_group_size", lambda: 3)
    monkeypatch.setattr(sources, "_agree_shard_seed", lambda seed, description: seed)
    monkeypatch.setattr(dist, "get_world_size", lambda: 3)
    seen = []
    for rank in range(3):
        monkeypatch.setattr(dist, "get_rank", lambda rank=rank: rank)
        torch.manual_seed(0)  # every rank seeds alike
        dataset = ds.GeneratorDataset(RandomAccess(10), ["d", "l"])
        assert dataset.get_dataset_size() == 4  # ceil(10 / 3)
        seen.append([int(r[1]) for r in dataset])
    assert all(len(s) == 4 for s in seen)
    flat = [v for s in seen for v in s]
    assert set(flat) == set(range(10)) and len(flat) == 12  # two rows padded from the epoch's start
    iterable = ds.GeneratorDataset(gen, ["a", "b"])  # not random-access: every rank reads all of it
    assert iterable.get_dataset_size() == 5


def test_split_of_a_sampled_source() -> None:
    data = ds.NumpySlicesDataset(list(range(10)), sampler=[9, 8, 7, 6, 5])
    first, second = data.split([2, 3], randomize=False)
    assert [int(r[0]) for r in first] == [9, 8] and [int(r[0]) for r in second] == [7, 6, 5]


def test_mindspore_methods_not_provided_say_why() -> None:
    # A MindSpore method nbcallback lacks is still an AttributeError (hasattr stays False), but it
    # names the method and the reason instead of a bare "has no attribute".
    data = ds.NumpySlicesDataset({"a": np.arange(4)}).batch(2)
    with pytest.raises(AttributeError, match=r"BatchDataset.save\(\) of MindSpore is not supported by nbcallback: .*torch.save"):
        data.save("out.mindrecord")
    with pytest.raises(AttributeError, match=r"to_device\(\) of MindSpore is not supported .* Model moves each batch"):
        data.to_device()
    with pytest.raises(AttributeError, match=r"'BatchDataset' object has no attribute 'no_such_method'"):
        data.no_such_method()
    assert not hasattr(data, "bucket_batch_by_length")
