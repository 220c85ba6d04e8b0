"""`amfkit assets`: put, get, stat, ls and rm round trips on a file store and a SQLite
store, import and export of a folder tree, and every error as one line on standard error
with exit status 1 and nothing written."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from amfkit.assets import AssetStore
from amfkit.cli.main import main

BINARY = bytes(range(256)) * 3 + b"\r\n\x00\xff"
KINDS = ["file", "sqlite"]


def store_url(kind, tmp_path):
    if kind == "sqlite":
        if importlib.util.find_spec("amfkit.assets.sqlite") is None:
            pytest.skip("the sqlite backend is not there")
        return f"sqlite:///{tmp_path}/assets.db"
    return f"file://{tmp_path}/store"


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv("AMFKIT_ASSETS", raising=False)
    monkeypatch.delenv("AMFKIT_ASSETS_CACHE", raising=False)


def run(capsys, *args):
    """main() in process: (status, stdout, stderr lines); `capsys` is pytest's
    capsysbinary."""
    status = main(["assets", *args])
    out, err = capsys.readouterr()
    return status, out.decode(), err.decode().splitlines()


def stdin_bytes(monkeypatch, data):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def names(url):
    with AssetStore.open(url) as store:
        return list(store.names())


# -- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_put_get_stat_ls_rm_round_trip(kind, tmp_path, capsysbinary, monkeypatch):
    capsys = capsysbinary
    url = store_url(kind, tmp_path)
    src = tmp_path / "blob.bin"
    src.write_bytes(BINARY)
    before = datetime.now(timezone.utc) - timedelta(seconds=2)

    status, out, err = run(capsys, "--store", url, "put", "data/blob.bin", str(src))
    assert (status, err) == (0, [])
    size, modified, ctype, etag, name = out.split()
    assert (size, ctype, name) == (str(len(BINARY)), "application/octet-stream", "data/blob.bin")

    # stdin, the store after the action, an explicit type
    stdin_bytes(monkeypatch, b"<p>hi</p>\n")
    assert run(capsys, "put", "--store", url, "pages/hi.html", "-", "--type", "text/html; charset=utf-8")[0] == 0
    monkeypatch.setenv("AMFKIT_ASSETS", url)  # the store from the environment
    assert run(capsys, "put", "z.txt", str(src))[0] == 0

    assert main(["assets", "get", "data/blob.bin"]) == 0
    assert capsys.readouterr().out == BINARY
    out_file = tmp_path / "out.bin"
    assert run(capsys, "get", "data/blob.bin", "-o", str(out_file)) == (0, "", [])
    assert out_file.read_bytes() == BINARY

    status, out, _ = run(capsys, "stat", "data/blob.bin")
    meta = json.loads(out)
    assert set(meta) == {"name", "size", "etag", "modified", "content_type"}
    assert meta["name"] == "data/blob.bin" and meta["size"] == len(BINARY) and meta["etag"] == etag
    assert meta["content_type"] == "application/octet-stream"
    when = datetime.fromisoformat(meta["modified"].replace("Z", "+00:00"))
    assert when.utcoffset() == timedelta(0) and before <= when <= datetime.now(timezone.utc) + timedelta(seconds=2)
    assert modified == when.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    assert json.loads(run(capsys, "stat", "pages/hi.html")[1])["content_type"] == "text/html; charset=utf-8"

    assert run(capsys, "ls")[1].splitlines() == ["data/blob.bin", "pages/hi.html", "z.txt"]
    assert run(capsys, "ls", "pa")[1].splitlines() == ["pages/hi.html"]
    long_lines = run(capsys, "ls", "-l", "pages/")[1].splitlines()
    assert len(long_lines) == 1
    assert long_lines[0].split("  ")[-3:] == ["text/html; charset=utf-8", json.loads(run(capsys, "stat", "pages/hi.html")[1])["etag"], "pages/hi.html"]
    assert long_lines[0].split()[0] == "10"

    assert run(capsys, "rm", "data/blob.bin", "z.txt") == (0, "", [])
    assert run(capsys, "ls")[1].splitlines() == ["pages/hi.html"]


def test_binary_through_pipes(tmp_path, python_exe, python_env):
    """A real process: standard input to the store and back to standard output, byte for byte."""
    env = dict(python_env, AMFKIT_ASSETS=str(tmp_path / "s"))
    put = subprocess.run([python_exe, "-m", "amfkit", "assets", "put", "b.bin", "-"], input=BINARY, capture_output=True, env=env, timeout=60)
    assert put.returncode == 0, put.stderr
    get = subprocess.run([python_exe, "-m", "amfkit", "assets", "get", "b.bin"], capture_output=True, env=env, timeout=60)
    assert (get.returncode, get.stdout, get.stderr) == (0, BINARY, b"")


def test_get_refuses_binary_on_a_terminal(tmp_path, capsysbinary, monkeypatch):
    capsys = capsysbinary
    url = str(tmp_path / "s")
    stdin_bytes(monkeypatch, BINARY)
    run(capsys, "--store", url, "put", "b.bin", "-")
    stdin_bytes(monkeypatch, b"plain text\n")
    run(capsys, "--store", url, "put", "t.txt", "-")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert run(capsys, "--store", url, "get", "b.bin") == (1, "", ["amfkit assets: refusing to write binary bytes to a terminal; use -o FILE or a pipe"])
    assert run(capsys, "--store", url, "get", "t.txt") == (0, "plain text\n", [])


# -- import and export ----------------------------------------------------------------------


def make_tree(root):
    (root / "img" / "icons").mkdir(parents=True)
    (root / "img" / "logo.png").write_bytes(b"\x89PNG logo")
    (root / "img" / "icons" / "a.svg").write_bytes(b"<svg/>")
    (root / "readme.txt").write_bytes(b"hello\n")
    (root / "back\\slash.txt").write_bytes(b"no")  # a backslash: no valid asset name
    (root / ".hidden").write_bytes(b"no")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_bytes(b"no")
    return {"img/logo.png": b"\x89PNG logo", "img/icons/a.svg": b"<svg/>", "readme.txt": b"hello\n"}


@pytest.mark.parametrize("kind", KINDS)
def test_import_then_export_a_tree(kind, tmp_path, capsysbinary):
    capsys = capsysbinary
    url = store_url(kind, tmp_path)
    src = tmp_path / "src"
    expected = make_tree(src)

    status, out, err = run(capsys, "--store", url, "import", str(src), "--prefix", "site")
    assert status == 0
    total = sum(map(len, expected.values()))
    assert out.startswith(f"imported 3 assets ({total} bytes) into ") and out.endswith("; 3 skipped\n")
    assert len(err) == 3 and all(line.startswith("amfkit assets: skipped ") for line in err)
    assert any(line.startswith(f"amfkit assets: skipped {src / '.git'}: a folder starting with '.'") for line in err)
    assert any(f"{src / 'back'}\\slash.txt" in line and "backslash" in line for line in err)
    assert any(f"{src / '.hidden'}:" in line for line in err)
    assert names(url) == sorted("site/" + n for n in expected)
    with AssetStore.open(url) as store:
        assert store.stat("site/img/logo.png").content_type == "image/png"

    dest = tmp_path / "out" / "deeper"
    status, out, err = run(capsys, "--store", url, "export", str(dest), "--prefix", "site/")
    assert (status, err) == (0, [])
    assert out == f"exported 3 assets ({total} bytes) to {dest}\n"
    got = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert got == expected

    # the whole store, without a prefix, into a folder that exists already
    assert run(capsys, "--store", url, "export", str(tmp_path / "out"))[0] == 0
    assert (tmp_path / "out" / "site" / "img" / "icons" / "a.svg").read_bytes() == b"<svg/>"


def test_export_never_writes_outside_its_folder(tmp_path, capsysbinary):
    capsys = capsysbinary
    url = str(tmp_path / "s")
    with AssetStore.open(url) as store:
        store.put("sub/x.txt", b"inside")
        store.put("victim.txt", b"inside")
        store.put("ok.txt", b"fine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"untouched")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sub").symlink_to(outside, target_is_directory=True)  # a folder link: not followed
    (dest / "victim.txt").symlink_to(outside / "victim.txt")  # a file link: replaced, not written through

    status, out, err = run(capsys, "--store", url, "export", str(dest))
    assert status == 1
    assert out == f"exported 2 assets (10 bytes) to {dest}; 1 failed\n"
    assert err == [f"amfkit assets: cannot write {dest / 'sub' / 'x.txt'}: 'sub' is not a folder"]
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_bytes() == b"untouched"
    assert not (dest / "victim.txt").is_symlink() and (dest / "victim.txt").read_bytes() == b"inside"
    assert (dest / "ok.txt").read_bytes() == b"fine"
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]  # no temporary file left

    # DIR itself may be a link to a folder (what is below it is never followed)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert run(capsys, "--store", url, "export", str(tmp_path / "link"))[0] == 0
    assert (tmp_path / "real" / "sub" / "x.txt").read_bytes() == b"inside"


# -- errors ---------------------------------------------------------------------------------


def test_errors_are_one_line_with_status_1_and_write_nothing(tmp_path, capsysbinary, monkeypatch):
    capsys = capsysbinary
    url = str(tmp_path / "s")
    src = tmp_path / "f.bin"
    src.write_bytes(b"abc")
    assert run(capsys, "--store", url, "put", "keep.txt", str(src))[0] == 0
    out_file = tmp_path / "never.bin"

    cases = [
        (["get", "nope.txt", "-o", str(out_file)], "no asset 'nope.txt'"),
        (["stat", "nope.txt"], "no asset 'nope.txt'"),
        (["rm", "keep.txt", "nope.txt"], "no asset 'nope.txt'"),  # and keep.txt stays
        (["put", "../up.txt", str(src)], "asset name '../up.txt' has a component starting with '.' ('..')"),
        (["put", "a//b", str(src)], "asset name 'a//b' has an empty component"),
        (["get", "/etc/passwd"], "asset name '/etc/passwd' is absolute (names are relative paths)"),
        (["rm", "keep.txt", "bad\\name"], "asset name 'bad\\\\name' holds '\\\\' at 3 (no control characters or backslashes)"),
        (["put", "x.txt", str(src), "--type", "not a type"], "content type 'not a type' is not a media type like 'image/png'"),
        (["put", "x.txt", str(tmp_path / "missing.bin")], f"{tmp_path / 'missing.bin'}: No such file or directory"),
        (["import", str(tmp_path / "nodir")], f"{tmp_path / 'nodir'}: no such folder"),
        (["import", str(src), "--prefix", "p"], f"{src}: not a folder"),
        (["import", str(tmp_path), "--prefix", "../up"], "asset name '../up' has a component starting with '.' ('..')"),
    ]
    for argv, message in cases:
        status, out, err = run(capsys, "--store", url, *argv)
        assert (status, out, err) == (1, "", [f"amfkit assets: {message}"]), argv
    assert names(url) == ["keep.txt"]
    assert not out_file.exists()


def test_store_errors(tmp_path, capsysbinary):
    capsys = capsysbinary
    not_a_folder = tmp_path / "file"
    not_a_folder.write_bytes(b"")
    cases = [
        ([], ["ls"], "no asset store: give --store URL (a folder, sqlite:///FILE, redis://HOST, ...) or set AMFKIT_ASSETS"),
        (["--store", str(tmp_path / "typo")], ["ls"], f"no asset store at {tmp_path / 'typo'} (a put or an import makes it)"),
        (["--store", f"file://{tmp_path}/typo"], ["get", "x"], f"no asset store at {tmp_path}/typo (a put or an import makes it)"),
        (["--store", f"sqlite:///{tmp_path}/typo.db"], ["export", str(tmp_path / "out")], f"no asset store at {tmp_path}/typo.db (a put or an import makes it)"),
        (["--store", "ftp://host/x"], ["ls"], "unsupported asset store 'ftp://host/x' (amfkit has: file://, sqlite://, postgresql://, postgres://, memcached://, redis://, rediss://)"),
        (["--store", str(tmp_path), "--cache", "ftp://host"], ["ls"], "unsupported asset store 'ftp://host' (amfkit has: file://, sqlite://, postgresql://, postgres://, memcached://, redis://, rediss://)"),
        (["--store", f"sqlite:///{not_a_folder}/x.db"], ["put", "a", str(not_a_folder)], f"cannot open the sqlite asset store '{not_a_folder}/x.db': unable to open database file"),
        (["--store", str(not_a_folder / "sub")], ["put", "a", str(not_a_folder)], f"cannot open the asset folder '{not_a_folder / 'sub'}': Not a directory"),
    ]
    for before, argv, message in cases:
        status, out, err = run(capsys, *before, *argv)
        assert (status, out, err) == (1, "", [f"amfkit assets: {message}"]), argv
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["file"]  # reading never makes a store, nor export its folder


def test_usage(capsys):  # text capture: the help is text
    assert main(["assets"]) == 2
    assert "put" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["assets", "rm"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["assets", "put", "--help"])
    assert e.value.code == 0 and "--type CONTENT_TYPE" in capsys.readouterr().out
