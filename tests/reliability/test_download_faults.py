"""download_mnist against a misbehaving loopback mirror.

Faults: the server closes mid-transfer (at seeded random points), announces a
wrong Content-Length (too long, too short), is slow beyond ``timeout=`` (before
the headers, or after some bytes), redirects in a loop, serves zips with
``..``/absolute/drive/backslash members or a symlink in place of an MNIST
file, or a ``.gz`` folder whose third file is cut short.

Every time: ``DownloadError`` naming the URL and the reason; the file tree
around the target is exactly as before (nothing written outside the target,
no unverified file in ``MNIST_Data``, no staging folder left); verified data
already in place survives a failed ``replace=True``.
"""
from __future__ import annotations

import gzip
import http.server
import io
import os
import shutil
import stat
import time
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Iterator

import pytest

import nbcallback.dataset.download as dl
from nbcallback.dataset import DownloadError, download_mnist
from tests.support.mirror import LoopbackServer, cut_short, mnist_zip, on_paths, stall

Fault = Callable[[http.server.BaseHTTPRequestHandler], bool]
TIMEOUT = 0.5


def _body(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    folder = Path(getattr(handler, "directory", "."))
    return (folder / handler.path.split("?", 1)[0].lstrip("/")).read_bytes()


def wrong_length(delta: int) -> Fault:
    """Announce ``len + delta`` bytes, send the whole file, close."""

    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        data = _body(handler)
        handler.send_response(200)
        handler.send_header("Content-Length", str(max(0, len(data) + delta)))
        handler.end_headers()
        try:
            handler.wfile.write(data)
            handler.wfile.flush()
        except OSError:
            pass
        handler.close_connection = True
        return True

    return fault


def silent_before_headers(seconds: float) -> Fault:
    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        time.sleep(seconds)
        return False  # then serve normally (the client is gone by then)

    return fault


def redirect_to(path: str) -> Fault:
    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        handler.send_response(302)
        handler.send_header("Location", path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    return fault


class Faults:
    """Faults by path that a test may set while the module's server runs."""

    def __init__(self) -> None:
        self.by_path: dict[str, Fault] = {}

    def __call__(self, handler: http.server.BaseHTTPRequestHandler) -> bool:
        return on_paths(self.by_path)(handler)


def _zip(entries: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def mnist_members() -> dict[str, bytes]:
    with zipfile.ZipFile(mnist_zip()) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, mnist_members) -> Iterator[tuple[str, Faults, Path]]:
    folder = tmp_path_factory.mktemp("faulty_mirror")
    shutil.copy(mnist_zip(), folder / "MNIST_Data.zip")
    (folder / "gz").mkdir()
    for name, content in mnist_members.items():
        (folder / "gz" / f"{Path(name).name}.gz").write_bytes(gzip.compress(content, compresslevel=1, mtime=0))
    faults = Faults()
    with LoopbackServer(folder, fault=faults) as server:
        yield server.url, faults, folder


def _tree(folder: Path) -> dict[str, tuple[int, int] | str]:
    """Every path under ``folder``: files with size and mtime, folders by name only
    (their mtimes change when the staging folder inside the target comes and goes)."""
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in folder.rglob("*")}


def _assert_refused(sandbox: Path, root: Path, url: str, reason: str, **kwargs) -> DownloadError:
    before = _tree(sandbox)
    with pytest.raises(DownloadError) as caught:
        download_mnist(root, url=url, progress=False, timeout=kwargs.pop("timeout", TIMEOUT), **kwargs)
    message = str(caught.value)
    assert caught.value.failures and caught.value.failures[0][0].startswith(url.rsplit("/", 1)[0]), message
    assert url.rsplit("/", 1)[0] in message and reason in message, message
    assert "No unverified file was written" in message
    assert _tree(sandbox) == before, "files changed outside the target or unverified files were left"
    return caught.value


def _sandbox(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "outer" / "root"
    root.mkdir(parents=True)
    (tmp_path / "outer" / "neighbour.txt").write_text("keep me")
    return tmp_path, root


@pytest.mark.parametrize("index", range(3))
def test_server_closes_mid_transfer(tmp_path, mirror, seeded, index):
    url, faults, _ = mirror
    fraction = seeded(f"download-cut-{index}").uniform(0.0, 0.999)
    print(f"closing after {fraction:.4f} of the file")
    faults.by_path = {f"/cut{index}.zip": cut_short(fraction)}
    shutil.copy(mnist_zip(), mirror[2] / f"cut{index}.zip")
    _assert_refused(*_sandbox(tmp_path), f"{url}/cut{index}.zip", "transfer cut short")


@pytest.mark.parametrize("delta, reason", [(+1, "transfer cut short"), (+4096, "transfer cut short"),
                                           (-1, "not a valid zip archive"), (-(1 << 20), "not a valid zip archive")])
def test_wrong_content_length(tmp_path, mirror, delta, reason):
    url, faults, folder = mirror
    faults.by_path = {"/lying.zip": wrong_length(delta)}
    shutil.copy(mnist_zip(), folder / "lying.zip")
    _assert_refused(*_sandbox(tmp_path), f"{url}/lying.zip", reason)


def test_server_silent_beyond_the_timeout(tmp_path, mirror):
    url, faults, folder = mirror
    faults.by_path = {"/silent.zip": silent_before_headers(TIMEOUT * 6)}
    shutil.copy(mnist_zip(), folder / "silent.zip")
    _assert_refused(*_sandbox(tmp_path), f"{url}/silent.zip", f"timed out after {TIMEOUT:g} s")


def test_server_stalls_mid_body_beyond_the_timeout(tmp_path, mirror, seeded):
    url, faults, folder = mirror
    sent = seeded("download-stall").randrange(1, 1 << 20)
    faults.by_path = {"/stall.zip": stall(TIMEOUT * 6, sent=sent)}
    shutil.copy(mnist_zip(), folder / "stall.zip")
    _assert_refused(*_sandbox(tmp_path), f"{url}/stall.zip", f"timed out after {TIMEOUT:g} s")


def test_two_hop_redirect_loop(tmp_path, mirror):
    url, faults, _ = mirror
    faults.by_path = {"/a.zip": redirect_to("/b.zip"), "/b.zip": redirect_to("/a.zip")}
    _assert_refused(*_sandbox(tmp_path), f"{url}/a.zip", "redirect loop")


@pytest.mark.parametrize("member", [
    "MNIST_Data/../../evil.txt",
    "MNIST_Data/train/../../../evil.txt",
    "..\\..\\evil.txt",
    "C:/evil.txt",
    "{sandbox}/outer/abs-evil.txt",
])
def test_zip_members_outside_the_folder_refuse_the_whole_archive(tmp_path, mirror, mnist_members, member):
    url, faults, folder = mirror
    faults.by_path = {}
    sandbox, root = _sandbox(tmp_path)
    member = member.format(sandbox=sandbox)
    # Otherwise a perfect archive: the four verified files plus one hostile member.
    name = f"evil-{zlib.crc32(member.encode())}.zip"
    (folder / name).write_bytes(_zip({**mnist_members, member: b"pwned"}))
    _assert_refused(sandbox, root, f"{url}/{name}", "refused: the archive has members outside its folder")
    assert not any(p.name.endswith("evil.txt") for p in sandbox.rglob("*"))


def test_symlink_in_place_of_an_mnist_file(tmp_path, mirror, mnist_members):
    url, faults, folder = mirror
    faults.by_path = {}
    images = next(n for n in mnist_members if n.endswith("train-images-idx3-ubyte"))
    entries = {n: d for n, d in mnist_members.items() if n != images}
    (folder / "symlink.zip").write_bytes(_zip(entries, symlinks={images: "/etc/passwd"}))
    _assert_refused(*_sandbox(tmp_path), f"{url}/symlink.zip", "train-images-idx3-ubyte in the archive is")


def test_gz_folder_whose_third_file_is_cut_short(tmp_path, mirror):
    url, faults, _ = mirror
    third = dl.MNIST_FILES[2].name
    faults.by_path = {f"/gz/{third}.gz": cut_short(0.5)}
    error = _assert_refused(*_sandbox(tmp_path), f"{url}/gz/", "transfer cut short")
    assert error.failures[0][0] == f"{url}/gz/{third}.gz"  # the first two were fetched, then discarded


def test_verified_data_survives_a_failed_replace(tmp_path, mirror):
    url, faults, folder = mirror
    faults.by_path = {"/replace-cut.zip": cut_short(0.7)}
    shutil.copy(mnist_zip(), folder / "replace-cut.zip")
    sandbox, root = _sandbox(tmp_path)
    faults_free = download_mnist(root, url=f"{url}/MNIST_Data.zip", progress=False, timeout=30)
    identities = {spec.relpath: os.stat(faults_free / spec.relpath).st_ino for spec in dl.MNIST_FILES}
    _assert_refused(sandbox, root, f"{url}/replace-cut.zip", "transfer cut short", replace=True)
    assert {spec.relpath: os.stat(faults_free / spec.relpath).st_ino for spec in dl.MNIST_FILES} == identities
    assert dl._is_verified(faults_free)
