"""Checkpoints: ``save_checkpoint``, ``load_checkpoint`` and ``load_param_into_net``.

The API and its messages follow MindSpore's ``mindspore.train.serialization``;
the file itself is PyTorch's zip format holding
``{"format": "nbcallback-checkpoint", "version": 1, "entries": {name: value}}``,
where ``entries`` is one flat dict and a value is a tensor or a plain
``int``/``float``/``bool``/``str``.

Two promises hold for every file written or read here:

* **A checkpoint on disk is complete or absent.**  Files are written to a
  hidden temporary file in the target folder, flushed to disk and renamed over
  the final name, so a crash or a ``kill -9`` can leave a stale temporary file
  (cleaned up by the next :class:`~nbcallback.train.ModelCheckpoint` in that
  folder) but never a truncated ``.ckpt``.
* **Loading never runs code from the file.**  Files are read with
  ``torch.load(weights_only=True)``, which only rebuilds tensors and plain
  containers; anything else (a pickle with a ``__reduce__`` payload, foreign
  classes) is refused.  Before that, the zip directory is checked so that a
  file announcing more data than it holds (a zip bomb, a forged header) is
  refused without reading it.

And writes to one file keep their order: every :func:`save_checkpoint` call
(sync or ``async_save=True``) waits for the writes queued before it for the
same path, so the file ends up holding the last call's checkpoint.
"""
from __future__ import annotations

import io
import os
import pickle
import uuid
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

from nbcallback.train.write_order import OrderedWrites

__all__ = [
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "atomic_write",
    "PARTIAL_MARKER",
    "describe_network",
]

FORMAT_NAME = "nbcallback-checkpoint"
FORMAT_VERSION = 1
#: Temporary files are named ``.{final name}{PARTIAL_MARKER}{pid}-{random}``.
PARTIAL_MARKER = ".partial-"
_OPTIMIZER_PREFIX = "optimizer."
_PLAIN_TYPES = (bool, int, float, str)


class CheckpointError(ValueError):
    """A file that is not a loadable nbcallback checkpoint (the message names it)."""


# --------------------------------------------------------------------------- writing


def atomic_write(path: str | os.PathLike[str], write: Callable[[io.BufferedWriter], None]) -> Path:
    """Write a file so that ``path`` is either the complete new file or untouched.

    This is the file-level step only; :func:`save_checkpoint` orders its calls
    per path (see :data:`PENDING_WRITES`).

    ``write`` receives a binary file object for a hidden temporary file in the
    same folder; after it returns the data is flushed, ``fsync``-ed and renamed
    over ``path`` (an atomic replace on POSIX and Windows).  If ``write`` raises,
    the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}{PARTIAL_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(temp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with _suppress_os_error():
            temp.unlink()
        raise
    _fsync_dir(path.parent)
    return path


class _suppress_os_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        return exc_type is not None and issubclass(exc_type, OSError)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself durable; not possible on every platform.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_partials(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete temporary checkpoint files left in ``folder`` by processes that died.

    Files of a process that is still alive are kept (it may be writing them).
    Returns the removed paths.
    """
    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        name = entry.name
        if not (name.startswith(".") and PARTIAL_MARKER in name):
            continue
        pid_part = name.rsplit(PARTIAL_MARKER, 1)[1].split("-", 1)[0]
        if pid_part.isdigit() and int(pid_part) != os.getpid() and _pid_alive(int(pid_part)):
            continue
        if pid_part.isdigit() and int(pid_part) == os.getpid():
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _tensor_value(name: str, value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        # detach + cpu so that the file never references autograd graphs or devices.
        return value.detach().cpu()
    if isinstance(value, _PLAIN_TYPES) or value is None:
        return value
    if hasattr(value, "__array__"):
        return torch.as_tensor(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, _PLAIN_TYPES) for v in value):
        return tuple(value)
    raise TypeError(
        f"For 'save_checkpoint', the value of {name!r} must be a Tensor, int, float, bool "
        f"or str, but got {type(value).__name__}."
    )


def network_entries(net: nn.Module) -> dict[str, Any]:
    """The checkpoint entries of a module: its parameters and buffers by name.

    A training wrapper (``TrainOneStepCell``) contributes the backbone's names,
    so its checkpoints load straight into a fresh copy of the user's network,
    plus the optimizer's state under ``optimizer.*``.
    """
    entries_of = getattr(net, "checkpoint_entries", None)
    if callable(entries_of):
        return dict(entries_of())
    return {name: value for name, value in net.state_dict(keep_vars=False).items()}


def save_checkpoint(
    save_obj: nn.Module | list | Mapping[str, Any],
    ckpt_file_name: str | os.PathLike[str],
    integrated_save: bool = True,
    async_save: bool = False,
    append_dict: Mapping[str, Any] | None = None,
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
    choice_func: Callable[[str], bool] | None = None,
    **kwargs: Any,
) -> None:
    """Save a network's parameters (and a training wrapper's optimizer state) to a ``.ckpt`` file.

    Args:
        save_obj: a ``torch.nn.Module`` (all parameters and buffers; for
            ``cb_params.train_network`` also the optimizer state), a list of
            ``{"name": str, "data": Tensor}`` dicts, or a ``{name: Tensor}`` dict
            such as :func:`load_checkpoint` returns.
        ckpt_file_name: target path; ``.ckpt`` is appended when missing and the
            folder must exist. An existing file is replaced atomically.
        integrated_save: accepted for MindSpore compatibility (single-process
            tensors are always saved whole).
        async_save: write the file on a background thread; the tensors are
            copied first, so training may go on changing the weights.  Writes
            to the same file, sync or async, land in call order: a later call
            waits for the earlier ones to that file, so the last call wins.
        append_dict: extra ``{str: int|float|bool|str|Tensor}`` entries to store.
        enc_key, enc_mode: MindSpore's encryption; not supported (``enc_key``
            must be ``None``).
        choice_func: keep only the entries for which ``choice_func(name)`` is true.

    Raises:
        TypeError: ``save_obj`` or a value has an unsupported type.
        IsADirectoryError: ``ckpt_file_name`` is a folder.
    """
    if enc_key is not None:
        raise ValueError(
            "For 'save_checkpoint', encryption ('enc_key') is not supported by nbcallback; "
            "pass enc_key=None and protect the file with file-system permissions instead."
        )
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            "For 'save_checkpoint', the parameter 'ckpt_file_name' must be str, "
            f"but got {type(ckpt_file_name).__name__}."
        )
    path = Path(os.path.abspath(os.fspath(ckpt_file_name)))
    if path.is_dir():
        raise IsADirectoryError(f"For 'save_checkpoint', {path} is a directory, not a file name.")
    if not path.name.endswith(".ckpt"):
        path = path.with_name(path.name + ".ckpt")

    entries = _collect_entries(save_obj)
    if choice_func is not None:
        entries = {k: v for k, v in entries.items() if choice_func(k)}
    for key, value in (append_dict or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"For 'save_checkpoint', the keys of 'append_dict' must be str, but got {key!r}.")
        entries[key] = value
    payload = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "entries": {name: _tensor_value(name, value) for name, value in entries.items()},
    }

    if async_save:
        # Snapshot now: the training loop keeps updating the live tensors in place.
        payload["entries"] = {
            k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in payload["entries"].items()
        }
        PENDING_WRITES.start(path, lambda: _write_payload(path, payload), name="asyn_save_ckpt")
        return
    PENDING_WRITES.run(path, lambda: _write_payload(path, payload))


#: The checkpoint writes in flight in this process, per path (state, not a setting): every
#: write of ``save_checkpoint`` goes through it, so writes to one file land in call order.
PENDING_WRITES = OrderedWrites()
if hasattr(os, "register_at_fork"):
    # A forked child (a data-loader worker, a test's warm process) must not wait for the parent's threads.
    os.register_at_fork(after_in_child=PENDING_WRITES.forget_after_fork)


def wait_for_async_saves(path: str | os.PathLike[str] | None = None) -> None:
    """Block until the checkpoints started with ``async_save=True`` are on disk.

    Args:
        path: wait only for the writes queued so far for this file (sync or
            async); ``None`` waits for every background write of the process.
    """
    PENDING_WRITES.wait(path)


def remove_checkpoint_file(path: str | os.PathLike[str]) -> None:
    """Delete a checkpoint file after the writes queued before for it (a missing file is fine)."""
    PENDING_WRITES.remove(path)


def remove_unless_pending(path: str | os.PathLike[str]) -> bool:
    """Delete an old checkpoint now unless a write to it is in flight; returns whether it was deleted.

    Rotation uses this, so it never deletes a file that a queued write is about to produce.
    """
    return PENDING_WRITES.remove_unless_pending(path)


def _write_payload(path: Path, payload: dict) -> None:
    atomic_write(path, lambda handle: torch.save(payload, handle))


def _collect_entries(save_obj: Any) -> dict[str, Any]:
    if isinstance(save_obj, nn.Module):
        return network_entries(save_obj)
    if isinstance(save_obj, Mapping):
        return {str(k): v for k, v in save_obj.items()}
    if isinstance(save_obj, list):
        entries = {}
        for index, item in enumerate(save_obj):
            if not (isinstance(item, Mapping) and "name" in item and "data" in item):
                raise TypeError(
                    "For 'save_checkpoint', when 'save_obj' is a list its elements must be dicts "
                    f"with 'name' and 'data', but element {index} is {item!r}."
                )
            entries[str(item["name"])] = item["data"]
        return entries
    raise TypeError(
        "For 'save_checkpoint', the parameter 'save_obj' must be nn.Module, list or dict, "
        f"but got {type(save_obj).__name__}."
    )


# --------------------------------------------------------------------------- reading

#: A checkpoint's zip members are stored, not compressed: a member claiming more
#: bytes than the file holds can only be a forged header or a zip bomb.
_ZIP_SLACK_BYTES = 1 << 16


def _check_zip_directory(path: Path, size: int) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except Exception as exc:  # noqa: BLE001 - a damaged directory raises many types (NotImplementedError, struct.error ...)
        raise CheckpointError(
            f"For 'load_checkpoint', failed to load the checkpoint file {path}: it is not a "
            f"checkpoint written by nbcallback.save_checkpoint (not a valid zip archive: {exc})."
        ) from None
    total = 0
    for info in infos:
        total += info.file_size
        if info.compress_type != zipfile.ZIP_STORED or info.file_size > size + _ZIP_SLACK_BYTES:
            raise CheckpointError(
                f"For 'load_checkpoint', refused the checkpoint file {path}: member {info.filename!r} "
                f"claims {info.file_size} bytes (compression {info.compress_type}) in a file of "
                f"{size} bytes; this is not a file written by save_checkpoint."
            )
    if total > size + _ZIP_SLACK_BYTES:
        raise CheckpointError(
            f"For 'load_checkpoint', refused the checkpoint file {path}: its members claim "
            f"{total} bytes in a file of {size} bytes."
        )


def read_checkpoint_file(path: str | os.PathLike[str], crc_check: bool = False) -> dict[str, Any]:
    """Read the flat entry dict of a checkpoint file without executing anything from it."""
    path = Path(path)
    if not path.exists():
        raise ValueError(
            f"For 'load_checkpoint', the checkpoint file: {path} does not exist, please check "
            "whether the 'ckpt_file_name' is correct."
        )
    if path.is_dir():
        raise IsADirectoryError(
            f"For 'load_checkpoint', {path} is a directory; pass the path of a .ckpt file inside it."
        )
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError(f"For 'load_checkpoint', failed to load the checkpoint file {path}: the file is empty.")
    _check_zip_directory(path, size)
    if crc_check:
        try:
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
        except Exception as exc:  # noqa: BLE001 - a damaged member header (BadZipFile, zlib.error ...)
            raise CheckpointError(
                f"For 'load_checkpoint', the checkpoint file {path} failed its CRC check: {_first_line(exc)}"
            ) from None
        if bad is not None:
            raise CheckpointError(
                f"For 'load_checkpoint', the checkpoint file {path} failed its CRC check (member {bad!r})."
            )
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            f"For 'load_checkpoint', refused the checkpoint file {path}: it contains objects other "
            f"than tensors and plain values, and loading it could run code ({_first_line(exc)})."
        ) from None
    except Exception as exc:  # noqa: BLE001 - damaged pickles raise IndexError, TypeError, AttributeError ...
        raise CheckpointError(
            f"For 'load_checkpoint', failed to load the checkpoint file {path}: {_first_line(exc)}"
        ) from None
    if not (isinstance(payload, dict) and payload.get("format") == FORMAT_NAME):
        raise CheckpointError(
            f"For 'load_checkpoint', failed to load the checkpoint file {path}: it is a PyTorch file "
            "but not a checkpoint written by nbcallback.save_checkpoint. For a plain state_dict use "
            "torch.load(path, weights_only=True) and net.load_state_dict()."
        )
    version = payload.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise CheckpointError(
            f"For 'load_checkpoint', failed to load the checkpoint file {path}: its format version is {version!r}, "
            "not a number."
        )
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"For 'load_checkpoint', the checkpoint file {path} has format version "
            f"{payload.get('version')}; this nbcallback reads up to {FORMAT_VERSION}. Upgrade nbcallback."
        )
    entries = payload.get("entries")
    if not isinstance(entries, dict):
        raise CheckpointError(f"For 'load_checkpoint', the checkpoint file {path} has no parameter table.")
    return entries


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _as_prefixes(value: str | Iterable[str] | None, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = (value,)
    prefixes = tuple(value)
    if not prefixes or not all(isinstance(p, str) and p for p in prefixes):
        raise TypeError(f"For 'load_checkpoint', '{name}' must be a non-empty str or a list/tuple of str.")
    return prefixes


def load_checkpoint(
    ckpt_file_name: str | os.PathLike[str],
    net: nn.Module | None = None,
    strict_load: bool = False,
    filter_prefix: str | Iterable[str] | None = None,
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    specify_prefix: str | Iterable[str] | None = None,
    choice_func: Callable[[str], bool] | None = None,
    crc_check: bool = False,
) -> dict[str, Any]:
    """Read a ``.ckpt`` file into a ``{name: Tensor}`` dict, optionally loading it into ``net``.

    Args:
        ckpt_file_name: path of a file written by :func:`save_checkpoint`.
        net: when given, the values are copied into it with :func:`load_param_into_net`.
        strict_load: passed to :func:`load_param_into_net`.
        filter_prefix: skip entries whose names start with these prefixes.
        dec_key, dec_mode: MindSpore's decryption; not supported (``dec_key`` must be None).
        specify_prefix: load only entries whose names start with these prefixes.
        choice_func: load only entries for which ``choice_func(name)`` is true
            (``specify_prefix``/``filter_prefix`` take precedence, as in MindSpore).
        crc_check: verify the zip CRC of every member before loading.

    Returns:
        The entries: tensors for parameters, plain values for ``append_dict`` items.

    Raises:
        ValueError: the name does not end in ``.ckpt`` or the file is missing.
        CheckpointError: (a ``ValueError``) the file is not a checkpoint, is
            truncated, or holds anything that could run code when loaded.
    """
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            "For 'load_checkpoint', the argument 'ckpt_file_name' must be str, "
            f"but got {type(ckpt_file_name).__name__}."
        )
    if dec_key is not None:
        raise ValueError("For 'load_checkpoint', decryption ('dec_key') is not supported by nbcallback.")
    path = Path(os.path.abspath(os.fspath(ckpt_file_name)))
    if not path.name.endswith(".ckpt"):
        raise ValueError(
            "For 'load_checkpoint', the checkpoint file should end with '.ckpt', please input the "
            f"correct 'ckpt_file_name' (got {path})."
        )
    entries = read_checkpoint_file(path, crc_check=crc_check)
    specify = _as_prefixes(specify_prefix, "specify_prefix")
    filters = _as_prefixes(filter_prefix, "filter_prefix")
    if specify or filters or choice_func is not None:
        def keep(name: str) -> bool:
            if specify:
                return name.startswith(specify)
            if filters:
                return not name.startswith(filters)
            return bool(choice_func(name))  # type: ignore[misc]

        entries = {k: v for k, v in entries.items() if keep(k)}
        if not entries:
            raise ValueError(
                "The loaded parameter dict is empty after filter or specify, please check whether "
                "'filter_prefix' or 'specify_prefix' are set correctly."
            )
    if net is not None:
        load_param_into_net(net, entries, strict_load=strict_load)
    return entries


def load_param_into_net(
    net: nn.Module, parameter_dict: Mapping[str, Any], strict_load: bool = False
) -> tuple[list[str], list[str]]:
    """Copy checkpoint values into the parameters and buffers of ``net`` by name.

    Args:
        net: the module to fill. A training wrapper (``cb_params.train_network``)
            also gets its optimizer state restored.
        parameter_dict: ``{name: Tensor}``, as returned by :func:`load_checkpoint`.
        strict_load: when False (default), a value whose dtype differs is cast,
            and names are also matched by suffix (``network.fc.weight`` fills
            ``fc.weight``); when True, names and dtypes must match exactly.

    Returns:
        ``(param_not_load, ckpt_not_load)``: names in ``net`` that got no value,
        and names in the dict that were not used (MindSpore 2.x's return value).

    Raises:
        TypeError: ``net`` is not a module or ``parameter_dict`` not a dict.
        ValueError: a shape (or, with ``strict_load``, a dtype) does not match;
            the message names the parameter.
    """
    if not isinstance(net, nn.Module):
        raise TypeError(
            f"For 'load_param_into_net', the argument 'net' should be a torch.nn.Module, "
            f"but got {type(net).__name__}."
        )
    if not isinstance(parameter_dict, Mapping):
        raise TypeError(
            f"For 'load_param_into_net', the argument 'parameter_dict' should be a dict, "
            f"but got {type(parameter_dict).__name__}."
        )
    loader = getattr(net, "load_checkpoint_entries", None)
    if callable(loader):
        return loader(parameter_dict, strict_load)
    return load_module_entries(net, parameter_dict, strict_load)


def load_module_entries(
    net: nn.Module, parameter_dict: Mapping[str, Any], strict_load: bool
) -> tuple[list[str], list[str]]:
    """:func:`load_param_into_net` for a plain module (parameters and persistent buffers)."""
    targets = dict(net.state_dict(keep_vars=True))
    unused = dict(parameter_dict)
    not_loaded: list[str] = []
    with torch.no_grad():
        for name, target in targets.items():
            key = name if name in unused else None
            if key is None and not strict_load:
                matches = [k for k in unused if k.endswith("." + name)]
                key = matches[0] if len(matches) == 1 else None
            if key is None:
                not_loaded.append(name)
                continue
            value = unused.pop(key)
            _copy_into(name, target, value, strict_load)
    if not_loaded:
        warnings.warn(
            f"For 'load_param_into_net', {len(not_loaded)} parameters in the 'net' are not loaded, "
            "because they are not in the 'parameter_dict', please check whether the network structure "
            "is consistent when training and loading checkpoint: " + ", ".join(not_loaded),
            stacklevel=3,
        )
    return not_loaded, list(unused)


def _copy_into(name: str, target: torch.Tensor, value: Any, strict_load: bool) -> None:
    if not isinstance(value, torch.Tensor):
        if isinstance(value, (int, float, bool)) and target.dim() == 0:
            value = torch.tensor(value)
        else:
            raise ValueError(
                f"For 'load_param_into_net', the value for {name!r} in the checkpoint is a "
                f"{type(value).__name__}, not a tensor."
            )
    if tuple(value.shape) != tuple(target.shape):
        raise ValueError(
            f"For 'load_param_into_net', {name} in the argument 'net' should have the same shape as "
            f"{name} in the argument 'parameter_dict'. But got its shape {tuple(target.shape)} in the "
            f"argument 'net' and shape {tuple(value.shape)} in the argument 'parameter_dict'. "
            "May you need to check whether the checkpoint you loaded is correct or the batch size and "
            "so on in the 'net' and 'parameter_dict' are same."
        )
    if value.dtype != target.dtype and strict_load:
        raise ValueError(
            f"For 'load_param_into_net', {name} has dtype {target.dtype} in the net but {value.dtype} "
            "in the checkpoint (strict_load=True refuses to cast)."
        )
    target.copy_(value)


def optimizer_entries(optimizer: torch.optim.Optimizer, names: Mapping[int, str]) -> dict[str, Any]:
    """Flatten an optimizer's state into checkpoint entries named after the parameters.

    ``names`` maps ``id(parameter)`` to its name in the network.  Per-parameter
    state becomes ``optimizer.state.<param name>.<key>`` and each param group's
    hyper-parameters ``optimizer.param_groups.<index>.<key>``.
    """
    entries: dict[str, Any] = {}
    for group_index, group in enumerate(optimizer.param_groups):
        for key, value in group.items():
            if key == "params":
                continue
            if isinstance(value, torch.Tensor):
                entries[f"{_OPTIMIZER_PREFIX}param_groups.{group_index}.{key}"] = value.detach().cpu()
            elif value is None or isinstance(value, _PLAIN_TYPES):
                entries[f"{_OPTIMIZER_PREFIX}param_groups.{group_index}.{key}"] = value
            elif isinstance(value, (list, tuple)) and all(isinstance(v, _PLAIN_TYPES) for v in value):
                entries[f"{_OPTIMIZER_PREFIX}param_groups.{group_index}.{key}"] = tuple(value)
        for param in group["params"]:
            state = optimizer.state.get(param)
            if not state:
                continue
            pname = names.get(id(param), f"param{id(param)}")
            for key, value in state.items():
                entries[f"{_OPTIMIZER_PREFIX}state.{pname}.{key}"] = value
    return entries


def load_optimizer_entries(
    optimizer: torch.optim.Optimizer, names: Mapping[int, str], entries: Mapping[str, Any]
) -> list[str]:
    """Restore what :func:`optimizer_entries` wrote; returns the entry names used."""
    used: list[str] = []
    params_by_id = {id(param): param for param in _params(optimizer)}
    by_name = {name: params_by_id[param_id] for param_id, name in names.items() if param_id in params_by_id}
    for group_index, group in enumerate(optimizer.param_groups):
        prefix = f"{_OPTIMIZER_PREFIX}param_groups.{group_index}."
        for key in list(group):
            entry = prefix + key
            if key != "params" and entry in entries:
                value = entries[entry]
                current = group[key]
                if isinstance(current, torch.Tensor) and isinstance(value, torch.Tensor):
                    current.copy_(value)
                elif isinstance(current, tuple) and isinstance(value, (list, tuple)):
                    group[key] = tuple(value)
                else:
                    group[key] = value
                used.append(entry)
    state_prefix = f"{_OPTIMIZER_PREFIX}state."
    for entry, value in entries.items():
        if not entry.startswith(state_prefix):
            continue
        pname, _, key = entry[len(state_prefix):].rpartition(".")
        param = by_name.get(pname)
        if param is None:
            continue
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            value = value.to(device=param.device, dtype=param.dtype if value.is_floating_point() else value.dtype)
        elif isinstance(value, torch.Tensor):
            value = value.clone()
        optimizer.state.setdefault(param, {})[key] = value
        used.append(entry)
    return used


def _params(optimizer: torch.optim.Optimizer) -> Iterable[torch.Tensor]:
    for group in optimizer.param_groups:
        yield from group["params"]


def describe_network(network: nn.Module) -> dict[str, Any]:
    """A JSON-ready description of a module: its tree, parameters and buffers.

    This is what ``{prefix}-graph.meta`` holds in place of MindSpore's compiled
    graph: enough to see what a checkpoint belongs to without loading code.
    """

    def node(module: nn.Module, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "type": type(module).__name__}
        extra = module.extra_repr()
        if extra:
            entry["config"] = extra
        own = [
            {"name": pname, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", ""), "trainable": p.requires_grad}
            for pname, p in module.named_parameters(recurse=False)
        ]
        if own:
            entry["parameters"] = own
        children = [node(child, cname) for cname, child in module.named_children()]
        if children:
            entry["children"] = children
        return entry

    parameters = [
        {"name": name, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", "")}
        for name, p in network.named_parameters()
    ]
    buffers = [
        {"name": name, "shape": list(b.shape), "dtype": str(b.dtype).replace("torch.", "")}
        for name, b in network.named_buffers()
    ]
    return {
        "format": "nbcallback-graph-meta",
        "version": 1,
        "network": type(network).__name__,
        "parameter_count": sum(p.numel() for p in network.parameters()),
        "parameters": parameters,
        "buffers": buffers,
        "tree": node(network, ""),
        "repr": repr(network),
    }
