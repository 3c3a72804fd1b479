"""Remembered runs (#47): the record a run leaves, listing, loading, deleting, labels, bad files, and compare()."""
from __future__ import annotations

import inspect
import io
import json
import os
import time
import warnings
from pathlib import Path

import pytest
import torch

from nbcallback.paths import run_dir
from nbcallback.widgets import Dashboard, LiveLossPlot, ProgressBar, compare, delete_runs, label_by_difference
from nbcallback.widgets import list_runs, load_run
from nbcallback.widgets import runs as runs_module
from nbcallback.widgets.words import Words
from nbcallback.widgets.runs import FORMAT, VERSION, RunFileError, RunRecord, labels_for, save_run

from .conftest import AtStep, batches, new_model

NOTEBOOK = "test_notebook"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own cache folder, and a known notebook name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("JPY_SESSION_NAME", f"/home/user/{NOTEBOOK}.ipynb")
    return tmp_path / "cache"


def train(lr: float = 0.05, *, epochs: int = 2, callbacks: list | None = None, bs: int = 16, **dashboard) -> Dashboard:
    """A short fit shown by a text Dashboard (into a buffer); returns the Dashboard."""
    model, _opt = new_model(lr)
    dash = Dashboard(display="text", file=io.StringIO(), **dashboard)
    model.fit(epochs, batches(20, bs=bs), batches(5, seed=1), callbacks=[*(callbacks or []), dash])
    return dash


def record(path: Path, *, ended: str = "2026-01-01T00:00:00.000+00:00", label: str | None = None,
           lr: float = 0.1, series: dict | None = None, **changes) -> Path:
    """Write a valid record file at ``path`` (through save_run), with ``changes`` to its JSON fields."""
    path.parent.mkdir(parents=True, exist_ok=True)
    series = series if series is not None else {
        "loss": {"x": [1, 2, 3, 4], "lo": [1.0, 0.8, 0.6, 0.5], "hi": [1.2, 0.9, 0.7, 0.6],
                 "y": [1.1, 0.85, 0.65, 0.55]},
        "eval:accuracy": {"x": [2, 4], "y": [0.5, 0.7]},
        "eval:loss": {"x": [2, 4], "y": [0.9, 0.6]},
        "lr": {"x": [0, 4], "y": [lr, lr]}}
    rec = RunRecord(NOTEBOOK, label, ended, ended, "finished",
                    {"lr": lr, "batch_size": 64, "epochs": 2, "optimizer": "SGD", "network": "LeNet5",
                     "callbacks": [], "seed": 1, "notes": {}},
                    {"loss": 0.55, "metrics": {"accuracy": 0.7, "loss": 0.6}, "epochs_done": 2, "steps_done": 4,
                     "elapsed": 1.0},
                    {"x_range": [0, 4], "steps_per_epoch": 2, "metrics": ["accuracy", "loss"], "loss_positive": True,
                     "series": series})
    save_run(rec, path)
    if changes:
        data = json.loads(path.read_text())
        data.update(changes)
        path.write_text(json.dumps(data))
    return path


def folder() -> Path:
    return run_dir(NOTEBOOK) / "records"


# ------------------------------------------------------------------ the record a run leaves


def test_a_run_is_remembered_with_its_settings_curves_and_final_metrics() -> None:
    torch.manual_seed(7)
    dash = train(0.05, run_label="baseline", run_notes={"dropout": 0.5})
    (saved,) = list_runs()
    assert saved.path is not None and saved.path.parent == folder() and saved.notebook == NOTEBOOK
    assert saved.label == "baseline" and saved.status == "finished"
    settings = saved.settings
    assert settings["lr"] == 0.05 and settings["batch_size"] == 16 and settings["epochs"] == 2
    assert settings["optimizer"] == "SGD" and settings["network"] == "Sequential"
    assert settings["seed"] == 0  # new_model seeds torch with 0 before building the network
    assert settings["notes"] == {"dropout": 0.5}
    assert "Dashboard" not in settings["callbacks"]  # a display does not change the training
    view = dash.view()
    assert saved.final["epochs_done"] == 2 and saved.final["steps_done"] == 40
    assert saved.final["metrics"]["accuracy"] == pytest.approx(view.rows[-1].values["accuracy"], rel=1e-5)
    assert saved.final["loss"] == pytest.approx(view.loss, rel=1e-5)
    series = saved.plot["series"]
    assert series["loss"]["x"][-1] == 40 and len(series["eval:accuracy"]["x"]) == 2
    assert saved.plot["steps_per_epoch"] == 20
    assert saved.path.stat().st_size < 50_000
    again = load_run(saved.path)
    assert again.to_json() == saved.to_json()
    assert load_run("baseline").path == saved.path
    assert json.loads(saved.path.read_text())["format"] == FORMAT


def test_long_runs_are_thinned_and_keep_their_extremes() -> None:
    xs = list(range(1, 1001))
    cols = {"x": xs, "lo": [1.0] * 1000, "hi": [2.0] * 1000, "y": [1.5] * 1000}
    cols["lo"][500], cols["hi"][10] = 0.01, 99.0
    thin = runs_module._thin(cols)
    assert len(thin["x"]) <= runs_module.STORED_POINTS and thin["x"][-1] == 1000
    assert min(thin["lo"]) == 0.01 and max(thin["hi"]) == 99.0


def test_the_record_is_written_once_per_run_at_its_end_never_in_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real = runs_module.save_run

    def spy(rec: RunRecord, path: Path) -> Path:
        calls.append([frame.function for frame in inspect.stack()])
        return real(rec, path)

    monkeypatch.setattr(runs_module, "save_run", spy)
    model, _opt = new_model()
    shown = [ProgressBar(display="text", file=io.StringIO()), LiveLossPlot(display="text", file=io.StringIO()),
             Dashboard(display="text", file=io.StringIO())]
    model.fit(2, batches(20), batches(5, seed=1), callbacks=shown)
    assert len(calls) == 1  # three display callbacks, one run, one record
    assert "_finalize" in calls[0]
    assert not any(name.startswith("on_") for name in calls[0])  # not inside any training hook
    model.fit(1, batches(20), callbacks=shown)
    assert len(calls) == 2 and len(list_runs()) == 2


def test_writing_the_record_is_the_end_of_the_run_not_its_live_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow disk at the end: the record's writing is counted in the end's time (``final_seconds``), and the time
    the display took while the run trained (``display_seconds`` less the end) does not grow with it."""
    real = runs_module.save_run

    def slow(rec: RunRecord, path: Path) -> Path:
        time.sleep(0.5)
        return real(rec, path)

    monkeypatch.setattr(runs_module, "save_run", slow)
    dash = train()
    assert len(list_runs()) == 1
    live = dash.view().display_seconds - dash.final_seconds
    assert dash.final_seconds >= 0.5 > live >= 0


def test_runs_that_leave_no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    model, _opt = new_model()
    model.eval(batches(5, seed=1), callbacks=[Dashboard(display="text", file=io.StringIO())])  # no training
    model.fit(1, batches(10), callbacks=[Dashboard(display="text", file=io.StringIO(), remember=False)])
    assert list_runs() == [] and not folder().exists()
    with pytest.raises(RuntimeError):
        model.fit(1, batches(10), callbacks=[AtStep(3, fail), Dashboard(display="text", file=io.StringIO())])
    assert list_runs() == []  # a run that failed is not one to compare with


def fail(_ctx) -> None:
    raise RuntimeError("boom")


def test_a_stopped_run_is_remembered_as_stopped() -> None:
    dash_holder: list[Dashboard] = []
    stop = AtStep(5, lambda ctx: dash_holder[0].request_stop())
    model, _opt = new_model()
    dash = Dashboard(display="text", file=io.StringIO())
    dash_holder.append(dash)
    model.fit(2, batches(20), callbacks=[stop, dash])
    (saved,) = list_runs()
    assert saved.status == "stopped" and saved.final["steps_done"] == 5


def test_a_failed_save_warns_and_the_run_returns_normally(own_cache: Path) -> None:
    (run_dir(NOTEBOOK) / "records").write_text("a file where the folder should be")
    with pytest.warns(RuntimeWarning, match="could not be remembered"):
        dash = train()
    assert dash.view().status == "finished"
    assert (run_dir(NOTEBOOK) / "records").read_text() == "a file where the folder should be"


def test_bad_arguments_are_refused_when_the_callback_is_made() -> None:
    with pytest.raises(ValueError, match="run_label"):
        Dashboard(run_label="")
    with pytest.raises(TypeError, match="run_notes"):
        Dashboard(run_notes={"net": torch.nn.Linear(1, 1)})
    with pytest.raises(TypeError, match="run_notes"):
        LiveLossPlot(run_notes=["dropout"])


# ------------------------------------------------------------------ the store


def test_a_crash_mid_write_leaves_the_old_file_and_no_temporary(monkeypatch: pytest.MonkeyPatch) -> None:
    path = record(folder() / "a.json", lr=0.1)
    before = path.read_bytes()

    real_fdopen = os.fdopen

    class HalfWriter:
        """A file that writes half of what it is given, then fails (a full disk)."""

        def __init__(self, *args, **kwargs) -> None:
            self.file = real_fdopen(*args, **kwargs)

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc) -> None:
            self.file.close()

        def write(self, text: str) -> None:
            self.file.write(text[: len(text) // 2])
            self.file.flush()
            raise OSError("disk full")

    monkeypatch.setattr(runs_module.os, "fdopen", HalfWriter)
    with pytest.raises(OSError, match="disk full"):
        save_run(load_run(path), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in folder().iterdir()) == ["a.json"]


def test_runs_are_listed_oldest_first_and_per_notebook() -> None:
    record(folder() / "c.json", ended="2026-01-03T00:00:00.000+00:00", label="third")
    record(folder() / "a.json", ended="2026-01-02T00:00:00.000+00:00", label="second")
    record(folder() / "b.json", ended="2026-01-01T00:00:00.000+00:00", label="first")
    record(run_dir("other") / "records" / "z.json", label="elsewhere")
    assert [r.label for r in list_runs()] == ["first", "second", "third"]
    assert [r.label for r in list_runs("other")] == ["elsewhere"]
    assert {r.label for r in list_runs("*")} == {"first", "second", "third", "elsewhere"}
    assert list_runs("never_used") == []


def test_delete_runs_deletes_only_what_is_named(tmp_path: Path) -> None:
    paths = [record(folder() / f"{i}.json", ended=f"2026-01-0{i + 1}T00:00:00.000+00:00", label=label)
             for i, label in enumerate(["keep", "old", "old", "drop"])]
    bad = folder() / "broken.json"
    bad.write_text('{"format": "nbcallback-run", "vers')
    with pytest.warns(RuntimeWarning, match="broken.json"):  # looking labels up reads the folder
        assert delete_runs("old", dry_run=True) == paths[1:3] and all(p.exists() for p in paths)
    with pytest.warns(RuntimeWarning, match="broken.json"):
        assert delete_runs(["old", load_run(paths[3])]) == paths[1:4]
    assert [p.exists() for p in paths] == [True, False, False, False] and bad.exists()
    with pytest.raises(FileNotFoundError, match="'nothing'"), pytest.warns(RuntimeWarning, match="broken.json"):
        delete_runs(["keep", "nothing"])  # one name unknown: nothing deleted
    assert paths[0].exists()
    other = tmp_path / "notes.json"
    other.write_text("{}")
    with pytest.raises(ValueError, match="not a run file"):
        delete_runs(other)
    assert other.exists()
    with pytest.warns(RuntimeWarning, match="broken.json"):
        delete_runs(list_runs())  # all readable runs of this notebook; the unreadable file is only named
    assert not paths[0].exists() and bad.exists()
    assert delete_runs(bad) == [bad] and not bad.exists()  # named by its path: deleted


# ------------------------------------------------------------------ bad files


BAD_FILES = {
    "another_version": (lambda p: record(p, version=VERSION + 1), "format version 2"),
    "not_a_record": (lambda p: p.write_text('{"hello": 1}'), "not an nbcallback run record"),
    "truncated": (lambda p: p.write_text(record(p).read_text()[:-40]), "truncated or not JSON"),
    "corrupt": (lambda p: p.write_bytes(b"\x00\xff\xfe garbage"), "cannot read the run file"),
    "empty": (lambda p: p.write_text(""), "it is empty"),
    "missing_field": (lambda p: record(p, settings=None), "'settings'"),
    "ragged_series": (lambda p: record(p, series={"loss": {"x": [1, 2], "y": [0.5]}}), "'loss'"),
    "text_in_series": (lambda p: record(p, series={"loss": {"x": [1], "y": ["high"]}}), "not numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_is_named_in_one_line_skipped_and_kept(case: str) -> None:
    good = record(folder() / "good.json", label="good")
    path = folder() / f"{case}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    make, reason = BAD_FILES[case]
    make(path)
    content = path.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = list_runs()
    assert [r.path for r in listed] == [good]
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    message = str(warning.message)
    assert str(path) in message and reason in message and "\n" not in message
    with pytest.raises(RunFileError, match=reason.replace("(", r"\(")) as raised:
        load_run(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    with pytest.warns(RuntimeWarning, match=case):
        shown = compare([path, good])  # the readable one is still drawn
    assert [r.path for r in shown.runs] == [good] and shown.png is not None
    assert path.read_bytes() == content  # never deleted or rewritten


def test_a_bad_file_does_not_stop_training_and_is_left_alone() -> None:
    bad = folder() / "old.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    train()
    assert bad.read_text() == "{not json"
    with pytest.warns(RuntimeWarning, match="old.json"):
        assert len(list_runs()) == 1


def test_load_run_names_what_there_is() -> None:
    record(folder() / "a.json", label="lr 0.1")
    with pytest.raises(FileNotFoundError, match=r"no remembered run labelled 'lr 9'.*'lr 0.1'"):
        load_run("lr 9")
    with pytest.raises(FileNotFoundError, match="no run file"):
        load_run(folder() / "missing.json")


# ------------------------------------------------------------------ labels


BASE = {"lr": 0.01, "batch_size": 64, "epochs": 3, "optimizer": "SGD", "network": "LeNet5",
        "callbacks": ["CallbackProfiler"], "seed": 1, "notes": {}}


@pytest.mark.parametrize(("earlier", "label"), [
    ({}, "same settings"),
    ({"lr": 0.1}, "lr 0.1"),
    ({"batch_size": 128}, "batch 128"),
    ({"lr": 0.1, "optimizer": "Adam"}, "lr 0.1, Adam→SGD"),
    ({"epochs": 5, "seed": 2}, "epochs 5, seed 2"),
    ({"network": "MLP"}, "MLP→LeNet5"),
    ({"lr": 3e-05}, "lr 3e-05"),
    ({"callbacks": ["CallbackProfiler", "EarlyStopping"]}, "+EarlyStopping"),
    ({"callbacks": []}, "−CallbackProfiler"),
    ({"notes": {"dropout": 0.5}}, "dropout 0.5"),
])
def test_label_by_difference(earlier: dict, label: str) -> None:
    assert label_by_difference(BASE, {**BASE, **earlier}) == label


def test_label_by_difference_never_names_what_is_unknown() -> None:
    assert label_by_difference(BASE, {"lr": 0.1}) == "lr 0.1"  # an old record without the other keys
    assert label_by_difference({"lr": 0.01, "notes": {"dropout": 0.1}}, {"lr": 0.01, "notes": {"dropout": 0.5}}) \
        == "dropout 0.5"


def test_labels_for_names_what_varies() -> None:
    assert labels_for([BASE, {**BASE, "lr": 0.1}]) == ["lr 0.01", "lr 0.1"]
    assert labels_for([BASE, {**BASE, "lr": 0.1, "batch_size": 32}]) == ["lr 0.01, batch 64", "lr 0.1, batch 32"]
    assert labels_for([BASE, BASE]) == ["run 1", "run 2"]
    assert labels_for([BASE, {**BASE, "callbacks": ["CallbackProfiler", "EarlyStopping"]}]) == \
        ["run 1", "+EarlyStopping"]


# ------------------------------------------------------------------ compare()


def test_compare_draws_every_run_in_every_panel_with_a_table() -> None:
    for lr in (0.05, 0.2):
        train(lr)
    train(0.5, run_label="fast")
    shown = compare()
    assert shown.labels == ["lr 0.05", "lr 0.2", "fast"]
    assert shown.png is not None and shown.png.startswith(b"\x89PNG")
    figure, panels = runs_module._figure(shown.runs, shown.labels, Words())
    titles = [ax.get_title(loc="left") for ax in figure.axes]
    assert titles == ["loss", "accuracy", "learning rate"] and panels == 3
    lines = {ax.get_title(loc="left"): len(ax.lines) for ax in figure.axes}
    assert lines == {"loss": 3 * 2, "accuracy": 3, "learning rate": 3}  # train + eval loss per run
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["fast", "lr 0.2", "lr 0.05"]
    text = str(shown)
    assert text.splitlines()[0].split() == ["run", "status", "epoch", "loss", "accuracy", "eval_loss"]
    assert [line.split()[0] for line in text.splitlines()[2:]] == ["lr", "lr", "fast"]
    page = shown._repr_html_()
    assert page.count("<tr>") == 4 and "data:image/png;base64," in page and "fast" in page
    assert len(compare(2).runs) == 2 and compare("fast").labels == ["fast"]


def test_compare_runs_with_other_series_and_without_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no remembered runs"):
        compare()
    a = record(folder() / "a.json", lr=0.1)
    b = record(folder() / "b.json", lr=0.1, series={"loss": {"x": [1, 2], "lo": [2.0, 1.0], "hi": [2.0, 1.0],
                                                             "y": [2.0, 1.0]},
                                                    "eval:f1": {"x": [2], "y": [0.3]}},
               plot={"x_range": [0, 2], "steps_per_epoch": None, "metrics": ["f1"], "loss_positive": True,
                     "series": {"loss": {"x": [1, 2], "lo": [2.0, 1.0], "hi": [2.0, 1.0], "y": [2.0, 1.0]},
                                "eval:f1": {"x": [2], "y": [0.3]}}})
    shown = compare([a, b])
    figure, _ = runs_module._figure(shown.runs, shown.labels, Words())
    lines = {ax.get_title(loc="left"): len(ax.lines) for ax in figure.axes}
    assert lines == {"loss": 3, "accuracy": 1, "f1": 1}  # each run where it has data
    assert figure.axes[0].get_xlabel() == "step"  # one run does not know its epochs: x in steps
    assert shown.save(tmp_path / "out" / "runs.png").read_bytes() == shown.png


def test_current_notebook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert runs_module.current_notebook() == NOTEBOOK
    monkeypatch.setenv("JPY_SESSION_NAME", "/x/4 widgets (copy).ipynb")
    assert runs_module.current_notebook() == "4_widgets__copy"
    monkeypatch.delenv("JPY_SESSION_NAME")
    monkeypatch.chdir(run_dir("1_callback_tutorial"))
    assert runs_module.current_notebook() == "1_callback_tutorial"
    monkeypatch.chdir(tmp_path)
    assert runs_module.current_notebook() not in ("", NOTEBOOK)
