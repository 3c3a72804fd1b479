"""download_mnist against loopback mirrors: success, caching, and every failure mode.

No test reaches the internet: sources are 127.0.0.1 servers, and the default
source list is monkeypatched to loopback URLs where the fallback is tested.
"""
from __future__ import annotations

import gzip
import io
import os
import shutil
import socket
import time
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

import nbcallback.dataset.download as dl
from nbcallback.dataset import DownloadError, download_mnist
from tests.support.mirror import LoopbackServer, cut_short, mnist_zip, on_paths, redirect_loop, stall

FILES = [spec.relpath for spec in dl.MNIST_FILES]


def _zip(entries: dict[str, bytes], level: int = 1) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A mirror serving good and broken variants of MNIST; yields its base URL."""
    folder = tmp_path_factory.mktemp("mirror_variants")
    original = mnist_zip()
    shutil.copy(original, folder / "MNIST_Data.zip")
    data = original.read_bytes()
    (folder / "truncated.zip").write_bytes(data[: len(data) // 2])
    with zipfile.ZipFile(original) as zf:
        members = {Path(n).name: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    # Right names and sizes, wrong content: only the checksum can tell.
    (folder / "zeros.zip").write_bytes(
        _zip({f"MNIST_Data/{spec.relpath}": bytes(spec.size) for spec in dl.MNIST_FILES})
    )
    (folder / "evil.zip").write_bytes(_zip({"MNIST_Data/train/ok.txt": b"ok", "../../evil.txt": b"pwned"}))
    (folder / "absolute.zip").write_bytes(_zip({"/tmp/nbcallback-evil.txt": b"pwned"}))
    (folder / "gz").mkdir()
    for name, content in members.items():
        (folder / "gz" / f"{name}.gz").write_bytes(gzip.compress(content, compresslevel=1, mtime=0))
    (folder / "badgz").mkdir()  # a mirror whose first file is cut short
    packed = (folder / "gz" / "train-images-idx3-ubyte.gz").read_bytes()
    (folder / "badgz" / "train-images-idx3-ubyte.gz").write_bytes(packed[: len(packed) // 2])
    faults = on_paths({"/loop.zip": redirect_loop(), "/cut.zip": cut_short(0.5), "/stall.zip": stall(3.0)})
    shutil.copy(original, folder / "cut.zip")
    shutil.copy(original, folder / "stall.zip")
    with LoopbackServer(folder, fault=faults) as mirror:
        yield mirror.url


@pytest.fixture
def closed_url() -> str:
    """A loopback URL on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/MNIST_Data.zip"


@pytest.fixture(scope="module")
def pristine(server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One verified download, copied by tests that only need data already in place."""
    return download_mnist(tmp_path_factory.mktemp("pristine"), url=f"{server}/MNIST_Data.zip", progress=False)


def copy_of(pristine: Path, root: Path) -> Path:
    """A copy of the verified tree under ``root`` (new inodes: its stamp no longer matches)."""
    shutil.copytree(pristine, root / "MNIST_Data")
    return root / "MNIST_Data"


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust the stamp right after writing it (normally files must be 2 s older)."""
    monkeypatch.setattr(dl, "_RACY_WINDOW_NS", 0)


def assert_nothing_left(root: Path) -> None:
    """No temporary folder in ``root`` and no MNIST file in ``root/MNIST_Data``."""
    leftovers = [p.name for p in root.iterdir() if p.name != "MNIST_Data"] if root.exists() else []
    assert leftovers == []
    target = root / "MNIST_Data"
    assert not any((target / f).exists() for f in FILES)


def assert_complete(target: Path) -> None:
    assert [p.name for p in target.parent.iterdir()] == ["MNIST_Data"]
    for spec in dl.MNIST_FILES:
        assert (target / spec.relpath).stat().st_size == spec.size
    assert (target / dl.STAMP_NAME).is_file()


# --------------------------------------------------------------------------- success


def test_first_download(tmp_path: Path, server: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = download_mnist(tmp_path / "data", url=f"{server}/MNIST_Data.zip")
    assert target == tmp_path / "data" / "MNIST_Data"
    assert_complete(target)
    out = capsys.readouterr().out
    assert "Downloading data from" in out and "file_sizes" in out  # the download package's own bar


def test_second_call_needs_no_network(mnist_root: Path, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert download_mnist(mnist_root.parent, url=closed_url, progress=False) == mnist_root
    monkeypatch.setenv(dl.URL_ENV, closed_url)
    assert download_mnist(mnist_root.parent, progress=False) == mnist_root


def test_second_call_does_not_rehash(tmp_path: Path, pristine: Path, closed_url: str, no_racy_window: None, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_of(pristine, tmp_path)
    time.sleep(0.05)  # past the filesystem's timestamp tick
    download_mnist(tmp_path, url=closed_url, progress=False)  # hashes the copy once, stamps it

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"re-hashed {path}")

    monkeypatch.setattr(dl, "_sha256", no_hashing)
    assert download_mnist(tmp_path, url=closed_url, progress=False) == tmp_path / "MNIST_Data"


def test_recent_files_are_rehashed(tmp_path: Path, pristine: Path, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_of(pristine, tmp_path)
    download_mnist(tmp_path, url=closed_url, progress=False)
    hashed: list[Path] = []
    real = dl._sha256
    monkeypatch.setattr(dl, "_sha256", lambda p: hashed.append(p) or real(p))
    download_mnist(tmp_path, url=closed_url, progress=False)
    assert len(hashed) == 4  # within the racy window the stamp is not trusted


def test_modified_file_is_detected_and_replaced(tmp_path: Path, pristine: Path, server: str, closed_url: str, no_racy_window: None) -> None:
    target = copy_of(pristine, tmp_path)
    time.sleep(0.05)
    download_mnist(tmp_path, url=closed_url, progress=False)  # verified and stamped
    labels = target / "train" / "train-labels-idx1-ubyte"
    time.sleep(0.05)  # past the filesystem's timestamp tick
    with open(labels, "r+b") as f:  # same size, one byte changed
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(DownloadError, match="did not pass verification and were left as they are"):
        download_mnist(tmp_path, url=closed_url, progress=False)
    download_mnist(tmp_path, url=f"{server}/MNIST_Data.zip", progress=False)
    assert dl._sha256(labels) == dl.MNIST_FILES[1].sha256
    assert_complete(target)


def test_missing_file_triggers_download(tmp_path: Path, pristine: Path, server: str) -> None:
    target = copy_of(pristine, tmp_path)
    (target / "test" / "t10k-images-idx3-ubyte").unlink()
    download_mnist(tmp_path, url=f"{server}/MNIST_Data.zip", progress=False)
    assert_complete(target)


def test_replace_downloads_again(tmp_path: Path, pristine: Path, server: str, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    target = copy_of(pristine, tmp_path)
    inode = (target / FILES[0]).stat().st_ino
    calls: list[str] = []
    real = dl._download_pkg.download
    monkeypatch.setattr(dl._download_pkg, "download", lambda url, *a, **k: calls.append(url) or real(url, *a, **k))
    download_mnist(tmp_path, url=f"{server}/MNIST_Data.zip", replace=True, progress=False)
    assert calls == [f"{server}/MNIST_Data.zip"]
    assert (target / FILES[0]).stat().st_ino != inode
    assert_complete(target)
    with pytest.raises(DownloadError, match="Connection refused"):
        download_mnist(tmp_path, url=closed_url, replace=True, progress=False)
    assert_complete(target)  # the verified copy survives a failed replace


def test_gz_folder(tmp_path: Path, server: str) -> None:
    assert_complete(download_mnist(tmp_path, url=f"{server}/gz/", progress=False))


def test_environment_variable(tmp_path: Path, server: str, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.URL_ENV, f"{server}/MNIST_Data.zip")
    assert_complete(download_mnist(tmp_path / "a", progress=False))
    monkeypatch.setenv(dl.URL_ENV, closed_url)
    with pytest.raises(DownloadError, match=rf"  - {closed_url}: "):
        download_mnist(tmp_path / "b", progress=False)
    # url= wins over the variable (here a folder URL without the trailing slash)
    assert_complete(download_mnist(tmp_path / "c", url=f"{server}/gz", progress=False))


def test_default_list_falls_back(tmp_path: Path, server: str, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.URL_ENV, raising=False)
    monkeypatch.setattr(dl, "DEFAULT_URLS", (f"{server}/missing.zip", closed_url, f"{server}/gz/"))
    assert_complete(download_mnist(tmp_path, progress=False))


def test_all_sources_fail(tmp_path: Path, server: str, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.URL_ENV, raising=False)
    sources = (f"{server}/missing.zip", closed_url, f"{server}/badgz/", f"{server}/zeros.zip")
    monkeypatch.setattr(dl, "DEFAULT_URLS", sources)
    with pytest.raises(DownloadError) as caught:
        download_mnist(tmp_path, progress=False)
    error = caught.value
    assert [url for url, _ in error.failures] == [
        sources[0], sources[1], f"{server}/badgz/train-images-idx3-ubyte.gz", sources[3]
    ]
    message = str(error)
    assert f"Could not download MNIST into {tmp_path / 'MNIST_Data'}; every source failed:" in message
    assert f"  - {sources[0]}: HTTP Error 404" in message
    assert f"  - {sources[1]}: <urlopen error [Errno 111] Connection refused>" in message
    assert "badgz/train-images-idx3-ubyte.gz: not valid gzip data (corrupt or truncated)" in message
    assert "zeros.zip: checksum mismatch for train-images-idx3-ubyte" in message
    assert_nothing_left(tmp_path)


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("missing.zip", r"HTTP Error 404: File not found"),
        ("truncated.zip", r"the downloaded file is not a valid zip archive \(corrupt, truncated or another format\)"),
        ("zeros.zip", r"checksum mismatch for train-images-idx3-ubyte: SHA-256 [0-9a-f]{64}, expected ba891046"),
        ("cut.zip", r"transfer cut short: received \d+ of 11\d{6} bytes"),
        ("loop.zip", r"redirect loop: HTTP Error 302"),
        ("gz/MNIST_Data", r"HTTP Error 404"),  # a folder URL without the .gz files
    ],
)
def test_failure_modes(tmp_path: Path, server: str, path: str, reason: str) -> None:
    url = f"{server}/{path}"
    with pytest.raises(DownloadError, match=reason) as caught:
        download_mnist(tmp_path, url=url, progress=False)
    assert caught.value.failures[0][0].startswith(url)
    assert_nothing_left(tmp_path)


def test_unreachable_host(tmp_path: Path, closed_url: str) -> None:
    with pytest.raises(DownloadError, match=rf"  - {closed_url}: <urlopen error \[Errno 111\] Connection refused>"):
        download_mnist(tmp_path, url=closed_url, progress=False)
    assert_nothing_left(tmp_path)


def test_stalled_server_times_out(tmp_path: Path, server: str) -> None:
    start = time.monotonic()
    with pytest.raises(DownloadError, match=r"stall.zip: timed out after 0.5 s"):
        download_mnist(tmp_path, url=f"{server}/stall.zip", progress=False, timeout=0.5)
    # It waited for the timeout, and gave up before the server woke up: a server that ends its 3 s stall closes
    # the connection, which reads as "transfer cut short", not as the timeout matched above.
    assert time.monotonic() - start >= 0.5
    assert socket.getdefaulttimeout() is None  # the temporary default was restored
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("name", ["evil.zip", "absolute.zip"])
def test_unsafe_zip_members_refused(tmp_path: Path, server: str, name: str) -> None:
    root = tmp_path / "a" / "b"
    with pytest.raises(DownloadError, match=r"refused: the archive has members outside its folder"):
        download_mnist(root, url=f"{server}/{name}", progress=False)
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "a" / "evil.txt").exists()
    assert not Path("/tmp/nbcallback-evil.txt").exists()
    assert_nothing_left(root)


def test_interrupted_download_leaves_nothing(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(url: str, path: str, **kwargs: object) -> str:
        Path(path).write_bytes(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(dl._download_pkg, "download", interrupted)
    with pytest.raises(KeyboardInterrupt):
        download_mnist(tmp_path, url=f"{server}/MNIST_Data.zip", progress=False)
    assert_nothing_left(tmp_path)


def test_stale_staging_of_a_killed_process_is_removed(tmp_path: Path, server: str) -> None:
    stale = tmp_path / f"{dl._TEMP_PREFIX}killed"
    (stale / "MNIST_Data").mkdir(parents=True)
    (stale / "MNIST_Data.zip").write_bytes(b"partial")
    old = time.time() - 3600
    for path in (stale / "MNIST_Data.zip", stale / "MNIST_Data", stale):
        os.utime(path, (old, old))
    live = tmp_path / f"{dl._TEMP_PREFIX}live"  # another process downloading right now
    live.mkdir()
    download_mnist(tmp_path, url=f"{server}/MNIST_Data.zip", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["MNIST_Data", live.name])


# --------------------------------------------------------------------------- arguments


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="url must be a str URL or path, but got int: 5"):
        download_mnist(tmp_path, url=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"url must be an http\(s\), ftp or file:// URL or a local path, but got 'gopher://h/x.zip'"):
        download_mnist(tmp_path, url="gopher://h/x.zip")
    with pytest.raises(ValueError, match=r"url 'http:///x.zip' has no host"):
        download_mnist(tmp_path, url="http:///x.zip")
    with pytest.raises(ValueError, match=r"names a remote host; a file:// URL is file:///ABSOLUTE/PATH"):
        download_mnist(tmp_path, url="file://server/x.zip")
    with pytest.raises(ValueError, match="Input timeout must be a positive number of seconds, but got 0"):
        download_mnist(tmp_path, timeout=0)
    with pytest.raises(TypeError, match="Argument timeout with value '5'"):
        download_mnist(tmp_path, timeout="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Argument replace with value 1"):
        download_mnist(tmp_path, replace=1)  # type: ignore[arg-type]
    (tmp_path / "MNIST_Data").write_text("not a folder")
    with pytest.raises(NotADirectoryError, match="MNIST_Data exists and is not a folder"):
        download_mnist(tmp_path, url="http://127.0.0.1:1/x.zip")


def test_bad_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.URL_ENV, "gopher://host/MNIST_Data.zip")
    with pytest.raises(ValueError, match=r"\$NBCALLBACK_MNIST_URL must be an http\(s\), ftp or file:// URL or a local path"):
        download_mnist(tmp_path, progress=False)
    monkeypatch.setenv(dl.URL_ENV, str(tmp_path / "nowhere.zip"))
    with pytest.raises(FileNotFoundError, match=r"\$NBCALLBACK_MNIST_URL '.*nowhere\.zip': no such file"):
        download_mnist(tmp_path, progress=False)
    assert not os.path.exists(tmp_path / "MNIST_Data")


# --------------------------------------------------------------------------- local sources (issue 18)


def test_file_url(tmp_path: Path) -> None:
    """The README's example: ``download_mnist(".", url="file:///path/MNIST_Data.zip")``."""
    target = download_mnist(tmp_path, url=mnist_zip().resolve().as_uri(), progress=False)
    assert target == tmp_path / "MNIST_Data"
    assert_complete(target)  # and no staging folder or zip copy left beside it


def test_local_zip_path_relative_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_complete(download_mnist(tmp_path / "abs", url=str(mnist_zip().resolve()), progress=False))
    shutil.copy(mnist_zip(), tmp_path / "copy.zip")
    monkeypatch.chdir(tmp_path)
    assert_complete(download_mnist(tmp_path / "rel", url="copy.zip", progress=False))
    assert_complete(download_mnist(tmp_path / "pathlike", url=Path("copy.zip"), progress=False))  # type: ignore[arg-type]


def test_local_gz_folder(tmp_path: Path) -> None:
    folder = tmp_path / "gz"
    folder.mkdir()
    with zipfile.ZipFile(mnist_zip()) as zf:
        for name in zf.namelist():
            if not name.endswith("/"):
                (folder / f"{Path(name).name}.gz").write_bytes(gzip.compress(zf.read(name), compresslevel=1))
    assert_complete(download_mnist(tmp_path / "a", url=str(folder), progress=False))
    assert_complete(download_mnist(tmp_path / "b", url=folder.as_uri() + "/", progress=False))


def test_local_path_in_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.URL_ENV, str(mnist_zip()))
    assert_complete(download_mnist(tmp_path, progress=False))


@pytest.mark.parametrize("form", ["path", "file_url"])
def test_missing_local_file_is_reported_as_missing(tmp_path: Path, form: str) -> None:
    missing = tmp_path / "missing.zip"
    url = str(missing) if form == "path" else missing.as_uri()
    with pytest.raises(FileNotFoundError, match=r"url '.*missing\.zip': no such file '.*missing\.zip'"):
        download_mnist(tmp_path / "data", url=url, progress=False)
    assert not (tmp_path / "data").exists()


def test_local_file_that_is_not_a_zip(tmp_path: Path) -> None:
    bad = tmp_path / "notes.zip"
    bad.write_text("these are not the files you are looking for")
    with pytest.raises(DownloadError, match=rf"{bad}: {bad} is not a valid zip archive") as caught:
        download_mnist(tmp_path / "data", url=str(bad), progress=False)
    assert caught.value.failures == ((str(bad), caught.value.failures[0][1]),)
    assert "Pass url=... or set $NBCALLBACK_MNIST_URL" in str(caught.value)
    assert "Pass --url URL or set" in caught.value.message("--url URL")
    assert bad.read_text().startswith("these")  # the user's file is left alone
    assert_nothing_left(tmp_path / "data")


# --------------------------------------------------------------------------- where the data lives (issue 18)


def test_data_home_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An argument, then $NBCALLBACK_DATA, then $XDG_CACHE_HOME/nbcallback, then ~/.cache/nbcallback."""
    from nbcallback.paths import data_home

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("NBCALLBACK_DATA", raising=False)
    assert data_home() == tmp_path / "home" / ".cache" / "nbcallback"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_home() == tmp_path / "xdg" / "nbcallback"
    monkeypatch.setenv("NBCALLBACK_DATA", str(tmp_path / "env"))
    assert data_home() == tmp_path / "env"
    assert data_home(tmp_path / "arg") == tmp_path / "arg"
    assert data_home("~/x") == tmp_path / "home" / "x"


def test_default_root_is_shared_by_every_working_directory(tmp_path: Path, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Downloaded once from one folder, found again from another one, offline."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("NBCALLBACK_DATA", raising=False)
    (tmp_path / "repo" / "notebooks").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo")
    first = download_mnist(url=str(mnist_zip()), progress=False)
    assert first == tmp_path / "home" / ".cache" / "nbcallback" / "MNIST_Data"
    monkeypatch.chdir(tmp_path / "repo" / "notebooks")
    monkeypatch.setenv(dl.URL_ENV, closed_url)  # no network: only the cached copy can satisfy this call
    assert download_mnist(progress=False) == first
    assert sorted(p.name for p in (tmp_path / "repo").rglob("*")) == ["notebooks"]


def test_run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbcallback.paths import run_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = run_dir("1_callback_tutorial")
    assert folder == tmp_path / "nbcallback" / "runs" / "1_callback_tutorial" and folder.is_dir()
    for bad in ("", "..", "a/b", "../x"):
        with pytest.raises(ValueError, match="run_dir name must be letters, digits"):
            run_dir(bad)
