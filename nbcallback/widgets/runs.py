"""Remembered runs: every training run a display callback shows is kept as a small JSON file, to compare later.

When a run shown by a :class:`~nbcallback.widgets.LiveCallback` (``Dashboard``, ``LiveLossPlot``, ``ProgressBar``)
ends, finished or stopped, :func:`remember_run` writes one *run record* (format :data:`FORMAT`, version
:data:`VERSION`): the curves as the plot keeps them, thinned to at most :data:`STORED_POINTS` points a line, the
final metrics, and the settings (:func:`settings_of`), in ``<cache>/nbcallback/runs/<notebook>/records/`` beside
the run's other files (:func:`nbcallback.paths.run_dir`), atomically (a temporary file, then ``os.replace``),
once per run, at the end only (nothing is added to a training step).  A record is a few tens of KB at most.

Then, in one call each: :func:`list_runs` (this notebook's runs, oldest first), :func:`load_run` (by path or by
label), :func:`delete_runs` (only the runs named; ``dry_run=True`` lists them first) and :func:`compare` (the runs'
curves in one PNG with a table of their final metrics, without training).  :func:`label_by_difference` names a run
by what differs from another ("lr 0.1", "batch 128", "lr 0.1, SGD→Adam").

A file that cannot be read (another format version, truncated, not JSON, missing fields) is skipped with a one-line
warning naming it; nothing is ever deleted that was not named to :func:`delete_runs`.  MindSpore has no such store
(its ``SummaryCollector`` + MindInsight server compare runs); this one needs no server.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import html
import json
import math
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from nbcallback.paths import cache_home, run_dir
from nbcallback.widgets.format import aligned, display_width
from nbcallback.widgets.panels import RUN_COLORS, default_panels
from nbcallback.widgets.plot import (
    MARGINS, PANEL_HEIGHT, PANEL_WIDTH, draw_run_line, font_family, palette_png, png_size, style_axes,
)
from nbcallback.widgets.words import Words

__all__ = ["FORMAT", "VERSION", "STORED_POINTS", "RunMemo", "RunRecord", "RunFileError", "Comparison",
           "current_notebook", "records_dir", "settings_of", "remember_run", "save_run", "list_runs", "load_run",
           "delete_runs", "label_by_difference", "labels_for", "compare", "skip_unreadable",
           "status_word", "live_settings", "last_runs", "load_runs", "final_headings"]

#: The ``format`` field of every run record.
FORMAT = "nbcallback-run"
#: The record layout this nbcallback writes and reads; a file with another version is skipped with a warning.
VERSION = 1
#: The most points one stored line keeps (the loss buckets are merged: min of the lows, max of the highs).
STORED_POINTS = 300
#: The folder inside the notebook's run folder that holds the records.
RECORDS = "records"
#: A user's note values: what JSON keeps as is.
NoteValue = Union[str, int, float, bool, None]
#: The types a stored line's values may have, as JSON gives them back (not bool: ``type(True)`` is ``bool``).
_NUMBER_TYPES = frozenset({int, float, type(None)})
#: What names a run: a record, its file, or its label.
RunRef = Union["RunRecord", str, os.PathLike]

# The settings in the order labels name them: key -> short name in a label.
_SETTING_NAMES = {"lr": "lr", "batch_size": "batch", "epochs": "epochs", "optimizer": "", "network": "",
                  "seed": "seed"}


class RunFileError(ValueError):
    """A run record that cannot be read; the message is one line that names the file."""


# ---------------------------------------------------------------------------------------------- what the user adds


@dataclasses.dataclass(frozen=True)
class RunMemo:
    """What a display callback was told about remembering its runs (its ``run_label``, ``run_notes`` and
    ``remember`` arguments)."""

    label: str | None = None
    notes: Mapping[str, NoteValue] = dataclasses.field(default_factory=dict)
    remember: bool = True

    @classmethod
    def of(cls, label: Any, notes: Any, remember: Any) -> RunMemo:
        """Checked arguments (a clear ValueError / TypeError at construction, not at the run's end)."""
        if label is not None and (not isinstance(label, str) or not label.strip() or "\n" in label):
            raise ValueError(f"run_label must be a short one-line text, e.g. run_label='lr 0.1', got {label!r}")
        if notes is None:
            notes = {}
        if not isinstance(notes, Mapping) or not all(isinstance(key, str) for key in notes):
            raise TypeError(f"run_notes must be a dict with text keys, e.g. run_notes={{'dropout': 0.5}}, got "
                            f"{notes!r}")
        for key, value in notes.items():
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise TypeError(f"run_notes[{key!r}] must be a number, text, True/False or None (kept in a JSON "
                                f"file), got {type(value).__name__}")
        if not isinstance(remember, bool):
            raise TypeError(f"remember must be True or False, got {remember!r}")
        return cls(label.strip() if label is not None else None, dict(notes), remember)


# ---------------------------------------------------------------------------------------------- where records live


def _safe_name(stem: str) -> str:
    """``stem`` as a :func:`run_dir` name (other characters become ``_``); '' when nothing is left."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem).strip("._")


def current_notebook() -> str:
    """The name runs are kept under: the notebook's file stem when it can be told, else the script's.

    In order: VS Code's ``__vsc_ipynb_file__``, Jupyter's ``JPY_SESSION_NAME`` (set by jupyter_server >= 2 for the
    kernels it starts) or ipykernel's ``__session__``; the run folder the working directory is in (the tutorial
    notebooks ``os.chdir(run_dir(...))``); a script's file name (``main`` for ``python -m nbcallback``); else
    ``'notebook'``.  Characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_``.
    """
    candidates: list[str] = []
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    user_ns = getattr(shell, "user_ns", None) or {}
    candidates += [str(user_ns.get("__vsc_ipynb_file__") or ""), os.environ.get("JPY_SESSION_NAME", ""),
                   str(user_ns.get("__session__") or "")]
    for candidate in candidates:
        name = _safe_name(Path(candidate).stem) if candidate.strip() else ""
        if name:
            return name
    try:
        relative = Path.cwd().resolve().relative_to((cache_home() / "runs").resolve())
        if relative.parts and _safe_name(relative.parts[0]) == relative.parts[0]:
            return relative.parts[0]
    except (ValueError, OSError):
        pass
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if shell is None and main and not str(main).startswith("<"):
        path = Path(main)
        name = _safe_name(path.parent.name if path.stem == "__main__" else path.stem)
        if path.stem == "__main__" and name == "nbcallback":
            return "main"
        if name:
            return name
    return "notebook"


def records_dir(notebook: str | None = None, *, create: bool = False) -> Path:
    """``<cache>/nbcallback/runs/<notebook>/records``: where ``notebook``'s runs are kept (None: this notebook,
    :func:`current_notebook`)."""
    return run_dir(notebook or current_notebook(), create=create) / RECORDS


# ---------------------------------------------------------------------------------------------- the record


def _round(value: Any) -> float | None:
    """A finite number to 6 significant digits (what a plot can show), else None."""
    if type(value) is float:  # the common case, fast: a few thousand values at a run's end
        return float("%.6g" % value) if value - value == 0 else None
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return float(f"{number:.6g}") if math.isfinite(number) else None


def _thin(columns: Mapping[str, Sequence[Any]], limit: int = STORED_POINTS) -> dict[str, list[float | None]]:
    """A line's columns with at most ``limit`` points: consecutive points merged (``x`` and ``y`` of the last,
    ``lo`` the least, ``hi`` the greatest), the last point always kept; numbers rounded to 6 digits."""
    count = len(columns.get("x", ()))
    chunk = max(1, math.ceil(count / limit))
    if chunk == 1:
        return {key: [_round(value) for value in values] for key, values in columns.items()}
    ends = list(range(count, 0, -chunk))[::-1]  # from the end, so the last point is a chunk's own
    out: dict[str, list[float | None]] = {}
    for key, values in columns.items():
        if key in ("lo", "hi"):
            pick = min if key == "lo" else max
            parts = ([value for value in values[max(0, end - chunk):end] if value is not None] for end in ends)
            out[key] = [_round(pick(part)) if part else None for part in parts]
        else:
            out[key] = [_round(values[end - 1]) if end - 1 < len(values) else None for end in ends]
    return out


def _class_name(value: Any) -> str | None:
    return type(value).__name__ if value is not None else None


def _batch_size(cb_params: Any, samples_per_step: int | None) -> int | None:
    dataset = cb_params.get("train_dataset")
    for reader in (getattr(dataset, "get_batch_size", None), lambda: getattr(dataset, "batch_size", None)):
        if callable(reader):
            try:
                size = reader()
            except Exception:  # a dataset's own method failed: fall back to the measured one
                size = None
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                return size
    return samples_per_step or None


def _seed() -> int | None:
    """torch's initial seed when a user set it (``torch.manual_seed(n)`` with n < 2**32); a 64-bit value is the
    random default seed, not worth a label."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    seed = int(torch.initial_seed())
    return seed if 0 <= seed < 2 ** 32 else None


def settings_of(cb_params: Any, *, lr: float | None = None, samples_per_step: int | None = None,
                notes: Mapping[str, NoteValue] | None = None) -> dict[str, Any]:
    """A run's settings as a record keeps them (JSON values; None where unknown).

    Keys: ``lr`` (the first parameter group's rate at the start: ``lr`` when given, else the optimizer's now),
    ``batch_size`` (the dataset's ``get_batch_size()`` or ``batch_size``, else ``samples_per_step``), ``epochs``,
    ``optimizer`` and ``network`` (class names), ``callbacks`` (class names, in order, without the display
    callbacks), ``seed`` (see
    :func:`_seed`) and ``notes`` (the user's ``run_notes``).
    """
    optimizer = cb_params.get("optimizer")
    if lr is None and getattr(optimizer, "param_groups", None):
        lr = optimizer.param_groups[0].get("lr")
    callbacks = [type(callback).__name__ for callback in cb_params.get("list_callback") or ()
                 if _memo(callback) is None]  # a display callback does not change the training
    return {"lr": _round(lr), "batch_size": _batch_size(cb_params, samples_per_step),
            "epochs": int(cb_params.get("epoch_num") or 0) or None, "optimizer": _class_name(optimizer),
            "network": _class_name(cb_params.get("network")), "callbacks": callbacks, "seed": _seed(),
            "notes": dict(notes or {})}


@dataclasses.dataclass
class RunRecord:
    """One remembered run, as :func:`load_run` / :func:`list_runs` give it.

    ``path`` is its file (None before it is saved); ``notebook`` the name it is kept under; ``label`` the user's
    ``run_label`` (None: named by what differs); ``started`` / ``ended`` ISO times (UTC); ``status`` ``'finished'``,
    ``'stopped'`` or ``'interrupted'``; ``settings`` see :func:`settings_of`; ``final``: ``loss`` (smoothed),
    ``metrics`` (the last evaluation), ``epochs_done``, ``steps_done``, ``elapsed`` (s); ``plot``: ``x_range``,
    ``steps_per_epoch``, ``metrics``, ``loss_positive``, ``series`` (``'loss'``: ``x``, ``lo``, ``hi``, ``y``;
    ``'eval:<metric>'`` and ``'lr'``: ``x``, ``y``; x in global steps).
    """

    notebook: str
    label: str | None
    started: str
    ended: str
    status: str
    settings: dict[str, Any]
    final: dict[str, Any]
    plot: dict[str, Any]
    path: Path | None = None

    @property
    def name(self) -> str:
        """The label when one was given, else the file's stem."""
        return self.label or (self.path.stem if self.path is not None else self.started)

    def to_json(self) -> dict[str, Any]:
        """The record as the file holds it."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self) if field.name != "path"}
        return {"format": FORMAT, "version": VERSION, **fields}

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None) -> RunRecord:
        """Check and read a record.

        Raises:
            RunFileError: another format or version, or a missing / mistyped field (one line, naming ``path``).
        """
        where = str(path) if path is not None else "run record"

        def bad(why: str) -> RunFileError:
            return RunFileError(f"nbcallback: cannot read the run file {where}: {why}")

        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise bad(f"it is not an nbcallback run record (no \"format\": \"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise bad(f"it has format version {data.get('version')!r}, this nbcallback reads version {VERSION} "
                      "(written by another nbcallback version; delete it with delete_runs or keep it for that one)")
        types = {"notebook": str, "started": str, "ended": str, "status": str, "settings": dict, "final": dict,
                 "plot": dict}
        for key, kind in types.items():
            if not isinstance(data.get(key), kind):
                raise bad(f"field {key!r} is missing or not a {kind.__name__}")
        if data.get("label") is not None and not isinstance(data["label"], str):
            raise bad("field 'label' is not text")
        series = data["plot"].get("series")
        if not isinstance(series, dict) or not all(isinstance(cols, dict) for cols in series.values()):
            raise bad("field 'plot.series' is missing or not a dict of lines")
        for key, cols in series.items():
            lengths = {len(values) if isinstance(values, list) else -1 for values in cols.values()}
            if "x" not in cols or "y" not in cols or len(lengths) != 1 or -1 in lengths:
                raise bad(f"line {key!r} lacks x/y columns or its columns differ in length")
            if not all(set(map(type, values)) <= _NUMBER_TYPES for values in cols.values()):
                raise bad(f"line {key!r} holds values that are not numbers")
        return cls(data["notebook"], data.get("label"), data["started"], data["ended"], data["status"],
                   data["settings"], data["final"], data["plot"], path)


def _record_from(callback: Any, cb_params: Any) -> RunRecord | None:
    """The record of the run ``callback`` shows (None: nothing to remember: no training step recorded)."""
    state = callback.state
    data = state.plot_data()
    if not data.series.get("loss", {}).get("x"):
        return None
    view = state.view(callback.settings.clock(), live_rows=5)
    memo = _memo_of(callback, cb_params)
    lr_points = data.series.get("lr", {}).get("y") or [None]
    rows = [row for row in view.rows if not row.partial] or list(view.rows)
    last = {key: _round(value) for key, value in (rows[-1].values if rows else {}).items()}
    metrics = {key: value for key, value in last.items() if value is not None}
    now = _dt.datetime.now(_dt.timezone.utc)
    started = now - _dt.timedelta(seconds=float(view.elapsed or 0.0))
    return RunRecord(
        notebook=current_notebook(), label=memo.label,
        started=started.isoformat(timespec="milliseconds"), ended=now.isoformat(timespec="milliseconds"),
        status=str(view.status),
        settings=settings_of(cb_params, lr=lr_points[0], samples_per_step=view.samples_per_step, notes=memo.notes),
        final={"loss": _round(view.loss), "metrics": metrics, "epochs_done": view.epochs_done,
               "steps_done": view.steps_done, "elapsed": _round(view.elapsed)},
        plot={"x_range": [_round(v) for v in data.x_range], "steps_per_epoch": view.steps_per_epoch or None,
              "metrics": list(data.metrics), "loss_positive": bool(data.loss_positive),
              "series": {key: _thin(cols) for key, cols in data.series.items()}})


def _memo(callback: Any) -> RunMemo | None:
    """A display callback's :class:`RunMemo` (``settings.memo``); None for any other callback."""
    memo = getattr(getattr(callback, "settings", None), "memo", None)
    return memo if isinstance(memo, RunMemo) else None


def _memo_of(callback: Any, cb_params: Any) -> RunMemo:
    """The run's label and notes: the first display callback of the run that was given them."""
    memos = [_memo(cb) for cb in [callback, *(cb_params.get("list_callback") or ())]]
    memos = [memo for memo in memos if memo is not None]
    label = next((memo.label for memo in memos if memo.label), None)
    notes: dict[str, NoteValue] = {}
    for memo in reversed(memos):
        notes.update(memo.notes)
    return RunMemo(label, notes, all(memo.remember for memo in memos))


def live_settings(callback: Any, cb_params: Any, *, lr: float | None = None) -> dict[str, Any]:
    """The settings of the run ``callback`` (a display callback) starts to show, as its record will keep them
    (:func:`settings_of` with the run's notes): what a ``Dashboard(compare=...)`` labels earlier runs against."""
    return settings_of(cb_params, lr=lr, notes=_memo_of(callback, cb_params).notes)


#: The cb_params key that marks a run as remembered (several display callbacks end the same run).
_SAVED_KEY = "_nbcallback_run_record"


def remember_run(callback: Any) -> Path | None:
    """Save the training run ``callback`` (a LiveCallback) has just shown, once per run: called from the end of the
    run (``LiveCallback._finalize``), never from a step.  Only rank 0's finished, stopped or interrupted training
    runs with at least one recorded step are kept; ``remember=False`` on any of the run's display callbacks keeps
    none.  Never raises: a failure is one warning, and the run ends as it would.

    Returns:
        The file written, or None.
    """
    cb_params = callback._run.facts
    try:
        if (callback.state.kind != "train" or not hasattr(cb_params, "get") or cb_params.get(_SAVED_KEY)
                or int(cb_params.get("rank_id", 0) or 0) != 0
                or callback.state.view(callback.settings.clock(), live_rows=0).status not in ("finished", "stopped",
                                                                                      "interrupted")):
            return None
        cb_params[_SAVED_KEY] = True
        if not _memo_of(callback, cb_params).remember:
            return None
        record = _record_from(callback, cb_params)
        if record is None:
            return None
        stamp = _dt.datetime.fromisoformat(record.ended).strftime("%Y%m%d-%H%M%S-%f")[:-3]
        folder = records_dir(record.notebook, create=True)
        folder.mkdir(exist_ok=True)
        path = folder / f"{stamp}.json"
        counter = 1
        while path.exists():  # two runs ending in the same millisecond
            path, counter = folder / f"{stamp}-{counter}.json", counter + 1
        return save_run(record, path)
    except Exception as exc:  # remembering is a convenience: never fail the run for it
        warnings.warn(f"nbcallback: this run could not be remembered for comparing ({type(exc).__name__}: {exc}); "
                      "training was not affected.", RuntimeWarning, stacklevel=3)
        return None


def save_run(record: RunRecord, path: str | os.PathLike[str]) -> Path:
    """Write ``record`` to ``path`` atomically: a temporary file in the same folder, then ``os.replace`` (a crash
    mid-write leaves the old file, if any, and no temporary file); sets ``record.path``.

    Returns:
        The path written.
    """
    target = Path(path)
    text = json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)  # (no fsync: it can take tens of ms on the training thread; after a power
        # loss a record may be empty, and is then skipped with a warning like any unreadable file)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    record.path = target
    return target


# ---------------------------------------------------------------------------------------------- listing, loading


def _read(path: Path) -> RunRecord:
    """One record file; RunFileError (one line naming it) when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunFileError(f"nbcallback: cannot read the run file {path}: {exc}") from None
    if not text.strip():
        raise RunFileError(f"nbcallback: cannot read the run file {path}: it is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunFileError(f"nbcallback: cannot read the run file {path}: it is truncated or not JSON "
                           f"({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    return RunRecord.from_json(data, path)


def skip_unreadable(error: RunFileError | FileNotFoundError) -> None:
    """The one warning for a run that cannot be read: it names the file (or the label that names no run) and says
    it is skipped, and a file that is there is left where it is (every reader of records warns the same way)."""
    kept = "; the file is left as it is" if isinstance(error, RunFileError) else ""
    warnings.warn(f"{error} (skipped{kept})", RuntimeWarning, stacklevel=3)


_STATUS_WORDS = ("starting", "running", "finished", "stopped", "interrupted", "error")


def status_word(status: str, words: Words) -> str:
    """A run's status as a table of runs says it (``'finished'``; ``已完成`` in Chinese)."""
    return words(f"compare_status_{status}") if status in _STATUS_WORDS else status


def list_runs(notebook: str | None = None) -> list[RunRecord]:
    """The remembered runs of ``notebook`` (None: this one, :func:`current_notebook`; ``'*'``: every notebook's),
    oldest first, so ``list_runs()[-3:]`` are the last three.  A file that cannot be read is skipped with a
    one-line warning naming it (and left where it is)."""
    if notebook == "*":
        folder = cache_home() / "runs"
        paths = sorted(folder.glob(f"*/{RECORDS}/*.json")) if folder.is_dir() else []
    else:
        folder = records_dir(notebook)
        paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    records = []
    for path in paths:
        try:
            records.append(_read(path))
        except RunFileError as error:
            skip_unreadable(error)
    return sorted(records, key=lambda record: (record.ended, str(record.path)))


def last_runs(count: int, notebook: str | None = None) -> list[RunRecord]:
    """The last ``count`` remembered runs of ``notebook`` (None: this one), oldest first, as ``list_runs()[-count:]``
    gives them, reading only those files: the newest by file name (a record's name is the time its run ended),
    going back past a file that cannot be read (skipped with the same one-line warning)."""
    folder = records_dir(notebook)
    try:  # names, not paths: a notebook's folder may hold hundreds of runs, and only ``count`` are read
        names = sorted((name for name in os.listdir(folder) if name.endswith(".json")), reverse=True) if count > 0 else []
    except OSError:  # no folder yet: no runs
        names = []
    found: list[RunRecord] = []
    for name in names:
        try:
            found.append(_read(folder / name))
        except RunFileError as error:
            skip_unreadable(error)
        if len(found) == count:
            break
    return sorted(found, key=lambda record: (record.ended, str(record.path)))


def load_run(path_or_label: RunRef, notebook: str | None = None) -> RunRecord:
    """A remembered run, by its file (a path) or its label (the newest of ``notebook``'s runs with that
    ``run_label``, or the file stem :func:`list_runs` shows).

    Raises:
        RunFileError: the file cannot be read (another version, truncated, not JSON), in one line naming it.
        FileNotFoundError: no such file, and no run with that label (the message lists the labels there are).
    """
    if isinstance(path_or_label, RunRecord):
        return path_or_label
    text = os.fspath(path_or_label)
    path = Path(text).expanduser()
    if path.is_file():
        return _read(path)
    if text.endswith(".json") or os.sep in text or (os.altsep and os.altsep in text):
        raise FileNotFoundError(f"nbcallback: no run file {text}; list_runs() lists the remembered runs")
    records = list_runs(notebook)
    for record in reversed(records):
        if text in (record.label, record.path.stem if record.path else None):
            return record
    names = ", ".join(repr(record.name) for record in records[-10:]) or "none yet"
    raise FileNotFoundError(f"nbcallback: no remembered run labelled {text!r} in notebook "
                            f"{notebook or current_notebook()!r}; the last ones are: {names}")


def delete_runs(runs: RunRef | Iterable[RunRef], *, notebook: str | None = None,
                dry_run: bool = False) -> list[Path]:
    """Delete exactly the runs named: records, paths, or labels (a label names every run of ``notebook`` with it).

    ``delete_runs(list_runs())`` deletes all of this notebook's runs; ``dry_run=True`` only returns what would be
    deleted.  A path must be a ``.json`` file in a ``records`` folder (so nothing else can be deleted by mistake);
    a file that cannot be read as a record may be deleted by its path.

    Returns:
        The files deleted (or, with ``dry_run``, to be deleted).

    Raises:
        FileNotFoundError: a named run does not exist (nothing is deleted then).
        ValueError: a path is not a run file (nothing is deleted then).
    """
    refs = [runs] if isinstance(runs, (RunRecord, str, os.PathLike)) else list(runs)
    targets: list[Path] = []
    by_label: list[RunRecord] | None = None
    for ref in refs:
        if isinstance(ref, RunRecord):
            if ref.path is None:
                raise ValueError("nbcallback: that run was never saved (its path is None); nothing to delete")
            found = [ref.path]
        else:
            text = os.fspath(ref)
            path = Path(text).expanduser()
            if path.exists() or text.endswith(".json") or os.sep in text:
                found = [path]
            else:
                by_label = list_runs(notebook) if by_label is None else by_label
                found = [record.path for record in by_label
                         if record.path is not None and text in (record.label, record.path.stem)]
                if not found:
                    raise FileNotFoundError(f"nbcallback: no remembered run labelled {text!r} in notebook "
                                            f"{notebook or current_notebook()!r}; nothing was deleted")
        for path in found:
            if not path.is_file():
                raise FileNotFoundError(f"nbcallback: no run file {path}; nothing was deleted")
            if path.suffix != ".json" or path.parent.name != RECORDS:
                raise ValueError(f"nbcallback: {path} is not a run file (a .json file in a {RECORDS!r} folder); "
                                 "nothing was deleted")
            if path not in targets:
                targets.append(path)
    if not dry_run:
        for path in targets:
            path.unlink()
    return targets


# ---------------------------------------------------------------------------------------------- labels


def _value_text(key: str, value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if value is None:
        return "—"
    return str(value)


def _flat(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a label may name, in label order: the known ones, then the user's notes."""
    flat = {key: settings[key] for key in _SETTING_NAMES if key in settings}
    flat.update({f"notes.{key}": value for key, value in (settings.get("notes") or {}).items()})
    return flat


def _part(key: str, value: Any, live: Any = None, *, arrow: bool = False) -> str:
    if key in ("optimizer", "network"):
        return f"{_value_text(key, value)}→{_value_text(key, live)}" if arrow else _value_text(key, value)
    name = key.removeprefix("notes.") if key.startswith("notes.") else _SETTING_NAMES[key]
    return f"{name} {_value_text(key, value)}"


def _callback_part(earlier: Sequence[str], live: Sequence[str]) -> str:
    added = [name for name in earlier if name not in live]
    removed = [name for name in live if name not in earlier]
    return " ".join([*(f"+{name}" for name in added), *(f"−{name}" for name in removed)])


def label_by_difference(live_settings: Mapping[str, Any], earlier_settings: Mapping[str, Any]) -> str:
    """How the earlier run's settings differ from the live run's, in a few words, the earlier run's values:
    ``'lr 0.1'``, ``'batch 128'``, ``'lr 0.1, SGD→Adam'`` (a class name reads earlier→live), ``'+EarlyStopping'``
    (a callback the earlier run had and this one has not; ``−`` the other way), ``'dropout 0.5'`` (a note).
    ``'same settings'`` when nothing differs.  Settings as :func:`settings_of` gives them; a missing or None value
    is unknown and never named."""
    live, earlier = _flat(live_settings), _flat(earlier_settings)
    parts = [_part(key, earlier.get(key), live.get(key), arrow=True) for key in _ordered(live, earlier)
             if earlier.get(key) is not None and live.get(key) is not None and earlier[key] != live[key]]
    parts += [_part(key, earlier[key]) for key in earlier
              if key.startswith("notes.") and live.get(key) is None and earlier[key] is not None]
    callbacks = _callback_part(earlier_settings.get("callbacks") or (), live_settings.get("callbacks") or ())
    if callbacks and "callbacks" in earlier_settings and "callbacks" in live_settings:
        parts.append(callbacks)
    return ", ".join(parts) or "same settings"


def _ordered(*flats: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for flat in flats:
        keys += [key for key in flat if key not in keys]
    return keys


def labels_for(settings: Sequence[Mapping[str, Any]]) -> list[str]:
    """One label per run, naming its values of the settings that vary among ``settings`` (``['lr 0.1',
    'lr 0.01']``; an unknown value is left out; ``'+EarlyStopping'``: a callback not all of them had); runs whose
    settings are all the same get ``'run 1'``, ``'run 2'`` ... in order."""
    flats = [_flat(item) for item in settings]
    keys = [key for key in _ordered(*flats) if len({json.dumps(flat.get(key), sort_keys=True) for flat in flats}) > 1]
    labels = [", ".join(_part(key, flat[key]) for key in keys if flat.get(key) is not None) for flat in flats]
    callbacks = [list(item.get("callbacks") or ()) for item in settings]
    common = [name for name in callbacks[0] if all(name in names for names in callbacks)] if callbacks else []
    extras = [" ".join(f"+{name}" for name in names if name not in common) for names in callbacks]
    labels = [", ".join(part for part in (label, extra) if part) for label, extra in zip(labels, extras)]
    return [label or f"run {index + 1}" for index, label in enumerate(labels)]


# ---------------------------------------------------------------------------------------------- compare


#: One colour per run (the newest run gets the first): the colours a Dashboard's overlay gives earlier runs.
_RUN_COLORS = RUN_COLORS


@dataclasses.dataclass
class Comparison:
    """What :func:`compare` returns: ``runs``, their ``labels``, the ``png`` (None without a curve) and the final
    metrics ``table`` (a header row, then one row per run).  A notebook shows it as the picture over the table
    (``_repr_html_``); ``print()`` prints the table; :meth:`save` writes the PNG."""

    runs: list[RunRecord]
    labels: list[str]
    png: bytes | None
    table: list[list[str]]
    _panels: int = dataclasses.field(default=1, repr=False)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the PNG to ``path`` (folders created)."""
        if self.png is None:
            raise ValueError("nbcallback: there is no picture to save (no run has a curve)")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(self.png)
        return target

    def __str__(self) -> str:
        lines = aligned(self.table)
        widths = [max(display_width(row[j]) for row in self.table) for j in range(len(self.table[0]))]
        return "\n".join([lines[0], "  ".join("-" * width for width in widths), *lines[1:]])

    def __repr__(self) -> str:
        return f"<nbcallback Comparison of {len(self.runs)} runs>\n{self}"

    def _repr_html_(self) -> str:
        cell = "padding:2px 10px;text-align:{};font-variant-numeric:tabular-nums"
        rows = []
        for index, row in enumerate(self.table):
            tag = "th" if index == 0 else "td"
            swatch = "" if index == 0 else (f'<span style="display:inline-block;width:10px;height:10px;'
                                            f'background:{_RUN_COLORS[(index - 1) % len(_RUN_COLORS)]};'
                                            'margin-right:6px"></span>')
            cells = "".join(f'<{tag} style="{cell.format("left" if i == 0 else "right")}">'
                            f'{swatch if i == 0 else ""}{html.escape(text)}</{tag}>' for i, text in enumerate(row))
            rows.append(f"<tr>{cells}</tr>")
        picture = ""
        if self.png is not None:
            width = png_size(self._panels)[0]
            picture = (f'<img alt="compared runs" style="width:{width}px;max-width:100%" '
                       f'src="data:image/png;base64,{base64.b64encode(self.png).decode("ascii")}"><br>')
        return f'<div class="nbcallback-compare">{picture}<table>{"".join(rows)}</table></div>'


def _as_records(runs: int | RunRef | Iterable[RunRef] | None, notebook: str | None) -> list[RunRecord]:
    if runs is None or (isinstance(runs, int) and not isinstance(runs, bool)):
        records = list_runs(notebook)
        count = 5 if runs is None else int(runs)
        if count < 1:
            raise ValueError(f"nbcallback.compare: the number of runs must be >= 1, got {runs!r}")
        return records[-count:]
    return load_runs([runs] if isinstance(runs, (RunRecord, str, os.PathLike)) else list(runs), notebook)


def load_runs(refs: Iterable[RunRef], notebook: str | None = None) -> list[RunRecord]:
    """The runs ``refs`` name (records, files or labels, as :func:`load_run` takes them), in that order; one that
    cannot be read or found is skipped with the one warning naming it (:func:`skip_unreadable`)."""
    records = []
    for ref in refs:
        try:
            records.append(load_run(ref, notebook))
        except (RunFileError, FileNotFoundError) as error:
            skip_unreadable(error)
    return records


def final_headings(metrics: Sequence[str], words: Words) -> list[str]:
    """The headings of a table of runs' final metrics (``compare()``'s and the Dashboard's): run, status, epoch,
    the training loss, then each evaluation metric; an evaluation metric named loss reads "loss (eval)"."""
    loss = words("panel_loss")
    shown = [f"{name} ({words('legend_eval')})" if name in (loss, "loss") else name for name in metrics]
    return [words("compare_run"), words("compare_status"), words("col_epoch"), loss, *shown]


def _final_table(records: Sequence[RunRecord], labels: Sequence[str], words: Words) -> list[list[str]]:
    metrics: list[str] = []
    for record in records:
        metrics += [name for name in record.final.get("metrics") or {} if name not in metrics]

    def number(value: Any) -> str:
        return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"

    rows = [final_headings(metrics, words)]
    for record, label in zip(records, labels):
        final = record.final
        rows.append([label, status_word(record.status, words), str(final.get("epochs_done", "—")), number(final.get("loss")),
                     *(number((final.get("metrics") or {}).get(name)) for name in metrics)])
    return rows


def compare(runs: int | RunRef | Iterable[RunRef] | None = None, *, notebook: str | None = None,
            lang: str | None = None) -> Comparison:
    """Draw remembered runs together, without training: each run's curves in its own colour in every panel (the
    loss, each metric, the learning rate when it differs), x in epochs, with a table of their final metrics.

    Args:
        runs: None: the last 5 runs of ``notebook``; a number: the last that many; or records, paths or labels
            (one or a list).  A run that cannot be read is skipped with a one-line warning.
        notebook: whose runs (None: this notebook, :func:`current_notebook`; ``'*'``: every notebook's).
        lang: the words of the panels and the table, ``'en'`` or ``'zh_CN'`` (None: ``NBCALLBACK_LANG``).

    Returns:
        A :class:`Comparison` (a notebook shows it; ``print()`` prints its table).

    Raises:
        ValueError: no run to compare (the message says how runs are remembered).
    """
    records = _as_records(runs, notebook)
    if not records:
        raise ValueError(f"nbcallback.compare: no remembered runs in notebook {notebook or current_notebook()!r}; a "
                         "training run shown by a Dashboard, LiveLossPlot or ProgressBar is remembered when it ends "
                         "(list them with nbcallback.widgets.list_runs())")
    words = Words(lang)
    given = [record.label for record in records]
    auto = labels_for([record.settings for record in records])
    labels = [label or fallback for label, fallback in zip(given, auto)]
    png, panels = _draw_runs(records, labels, words)
    return Comparison(records, labels, png, _final_table(records, labels, words), panels)


def _compare_panels(records: Sequence[RunRecord], words: Words) -> list[Any]:
    metrics: list[str] = []
    for record in records:
        metrics += [name for name in record.plot.get("metrics") or () if name not in metrics]
    lrs = {json.dumps(record.plot["series"]["lr"].get("y")) for record in records if "lr" in record.plot["series"]}
    panels = default_panels(tuple(metrics), lr=len(lrs) > 1,
                            loss_positive=all(record.plot.get("loss_positive", True) for record in records),
                            words=words)
    return [panel for panel in panels
            if any(record.plot["series"].get(line.key, {}).get("x") for line in panel.lines for record in records)]


def _x_scale(records: Sequence[RunRecord]) -> list[float] | None:
    """Steps per epoch of each run when every run knows it (x in epochs), else None (x in steps)."""
    sizes = [record.plot.get("steps_per_epoch") for record in records]
    ok = all(isinstance(size, (int, float)) and not isinstance(size, bool) and size > 0 for size in sizes)
    return [float(size) for size in sizes] if ok else None


def _draw_runs(records: Sequence[RunRecord], labels: Sequence[str], words: Words) -> tuple[bytes | None, int]:
    """The runs' curves as a PNG (the panels' layout, sizes and fonts of the final plot) and the panel count."""
    figure, count = _figure(records, labels, words)
    if figure is None:
        return None, 0
    figure.canvas.draw()
    return palette_png(figure.canvas.buffer_rgba()), count


def _figure(records: Sequence[RunRecord], labels: Sequence[str], words: Words) -> tuple[Any, int]:
    """The matplotlib Figure of :func:`compare` (None without a curve) and its panel count; per panel, one
    matplotlib line per run and panel line with data, in panel-line order, runs newest first."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = _compare_panels(records, words)
    if not panels:
        return None, 0
    scales = _x_scale(records)
    width, grid_height = png_size(len(panels))
    per_row = min(len(records), 2 * min(len(panels), 3))
    strip = 24 * math.ceil(len(records) / per_row) + 10  # the runs' legend, above the panels
    height = grid_height + strip
    fig = Figure(figsize=(width / 100, height / 100), dpi=200, facecolor="white")
    FigureCanvasAgg(fig)
    family = font_family()
    left, right, top, bottom = MARGINS
    order = list(range(len(records)))[::-1]  # the newest run drawn last, on top
    handles: dict[int, Any] = {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from (current )?font", category=UserWarning)
        for index, panel in enumerate(panels):
            x0 = (index % 3) * PANEL_WIDTH + left
            y0 = grid_height - (index // 3 + 1) * PANEL_HEIGHT + bottom
            ax = fig.add_axes([x0 / width, y0 / height, (PANEL_WIDTH - left - right) / width,
                               (PANEL_HEIGHT - top - bottom) / height], facecolor="white")
            positive = True
            for line in panel.lines:
                for run in order:
                    cols = records[run].plot["series"].get(line.key) or {}
                    if not cols.get("x"):
                        continue
                    scale = scales[run] if scales else 1.0
                    xs = [math.nan if x is None else x / scale for x in cols["x"]]
                    ys = [math.nan if y is None else float(y) for y in cols["y"]]
                    positive = positive and all(y > 0 for y in ys if not math.isnan(y))
                    color = _RUN_COLORS[(len(records) - 1 - run) % len(_RUN_COLORS)]
                    drawn = draw_run_line(ax, line.style, xs, ys, color)
                    if line.style != "points":
                        handles.setdefault(run, drawn)
            _axes_style(ax, panel, positive, words("col_epoch") if scales else words("axis_step"), family)
        runs = sorted(handles, reverse=True)  # newest first, as the colours go
        if runs:
            fig.legend([handles[run] for run in runs], [labels[run] for run in runs], loc="upper left",
                       bbox_to_anchor=(left / width, 1 - 4 / height), ncol=per_row, frameon=False,
                       prop={"family": family, "size": 9.5}, handlelength=1.8, columnspacing=1.6, borderaxespad=0)
    return fig, len(panels)


def _axes_style(ax: Any, panel: Any, positive: bool, xlabel: str, family: Sequence[str]) -> None:
    """A panel's scale, title, labels and grid, as the final plot draws them."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if panel.scale == "log" and positive:  # labelled 0.01, 0.02, 0.05 ...: no 10^x notation
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        subs = (1.0, 2.0, 5.0) if high / max(low, 1e-300) <= 10 ** 2.5 else (1.0,)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=20))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:.3g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    style_axes(ax, panel.title, xlabel, family)
