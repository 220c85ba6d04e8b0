"""`amfkit assets`: put, get, list, remove, import and export the named blobs of an asset
store (`amfkit.assets`, docs/assets.md) from the command line.

    amfkit assets --store URL put NAME FILE|- [--type CONTENT_TYPE]
    amfkit assets --store URL get NAME [-o FILE]
    amfkit assets --store URL stat NAME
    amfkit assets --store URL ls [PREFIX] [-l]
    amfkit assets --store URL rm NAME...
    amfkit assets --store URL import DIR [--prefix P]
    amfkit assets --store URL export DIR [--prefix P]

The store is `--store` (before or after the action), else `$AMFKIT_ASSETS`; there is no
default, so a forgotten option never makes a folder where it was run. `--cache`
(`$AMFKIT_ASSETS_CACHE`) puts a memcached or Redis cache in front of it. An action that
only reads refuses a local store (a folder, a SQLite file) that does not exist yet
rather than creating it. Errors are one line on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import secrets
import stat as _stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO

from .._text import shown
from .errors import CLIError
from .files import read_input

if TYPE_CHECKING:
    from ..assets import Asset, AssetStore

__all__ = ["add_parser", "ENV_STORE", "ENV_CACHE"]

ENV_STORE = "AMFKIT_ASSETS"
ENV_CACHE = "AMFKIT_ASSETS_CACHE"

_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_O_TOP = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


# -- the parser ------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """Register `assets` and its actions on the top-level subparsers `sub`."""
    p = sub.add_parser(
        "assets",
        help="put, get, list, remove, import and export the files of an asset store",
        description=(
            "Manage the named binary files of an asset store (docs/assets.md). The store is "
            f"--store URL, else ${ENV_STORE}; there is no default. URL: a folder path, "
            "file:///PATH, sqlite:///FILE, postgresql://USER@HOST/DB, memcached://HOST:PORT or "
            "redis://HOST:PORT/DB. Errors: one line on standard error, exit status 1."
        ),
        epilog="Run `amfkit assets ACTION --help` for an action's options.",
    )
    _store_flags(p, None)
    acts = p.add_subparsers(dest="action", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    _store_flags(common, argparse.SUPPRESS)

    put = acts.add_parser("put", parents=[common], help="store a file under NAME", description=(
        "Store FILE (- for standard input) under NAME, replacing what was there, and print "
        "the asset's line as `ls -l` does: size, modified, content type, ETag, name."
    ))
    put.add_argument("name", metavar="NAME", help="the asset's name, a relative path such as logos/amfkit.png")
    put.add_argument("file", metavar="FILE", help="the file to store, or - for standard input")
    put.add_argument("--type", dest="content_type", metavar="CONTENT_TYPE", help="its media type (default: what NAME's extension suggests)")
    put.set_defaults(func=cmd_put)

    get = acts.add_parser("get", parents=[common], help="write an asset's bytes", description=(
        "Write the asset's bytes to standard output (binary safe; refused on a terminal when "
        "they are not text) or to -o FILE (replaced whole, or not at all)."
    ))
    get.add_argument("name", metavar="NAME")
    get.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write (default -: standard output)")
    get.set_defaults(func=cmd_get)

    st = acts.add_parser("stat", parents=[common], help="print an asset's metadata as JSON", description=(
        "Print the asset's metadata as JSON: name, size (bytes), etag (as HTTP sends it), "
        "modified (ISO 8601, UTC) and content_type."
    ))
    st.add_argument("name", metavar="NAME")
    st.set_defaults(func=cmd_stat)

    ls = acts.add_parser("ls", parents=[common], help="list asset names", description=(
        "Print the names starting with PREFIX (all by default), sorted, one a line; with -l "
        "each line is size, modified (UTC), content type, ETag, then the name."
    ))
    ls.add_argument("prefix", nargs="?", default="", metavar="PREFIX")
    ls.add_argument("-l", dest="long", action="store_true", help="long form: size, modified, content type, ETag")
    ls.set_defaults(func=cmd_ls)

    rm = acts.add_parser("rm", parents=[common], help="remove assets", description=(
        "Remove the named assets. Every name is checked first: if one is invalid or missing, "
        "none is removed."
    ))
    rm.add_argument("names", nargs="+", metavar="NAME")
    rm.set_defaults(func=cmd_rm)

    imp = acts.add_parser("import", parents=[common], help="store a folder tree", description=(
        "Store every file under DIR as an asset named by its path relative to DIR ('/' "
        "between folders), under P/ with --prefix P. A file whose path is no valid asset "
        "name (a part starting with '.', a backslash, ...) is skipped with a warning; a "
        "folder starting with '.' is skipped whole, with one warning; links to folders are "
        "not followed. Prints a summary line; exit status 1 if a file could not be stored."
    ))
    imp.add_argument("dir", metavar="DIR")
    imp.add_argument("--prefix", default="", metavar="P", help="put the assets under P/")
    imp.set_defaults(func=cmd_import)

    exp = acts.add_parser("export", parents=[common], help="write assets into a folder tree", description=(
        "Write the store's assets (those under P/ with --prefix P, without P/) as files "
        "under DIR, creating DIR and sub-folders; files there are replaced. Nothing is "
        "written outside DIR: links inside it are never followed. Prints a summary line; "
        "exit status 1 if an asset could not be written."
    ))
    exp.add_argument("dir", metavar="DIR")
    exp.add_argument("--prefix", default="", metavar="P", help="export only the assets under P/")
    exp.set_defaults(func=cmd_export)

    p.set_defaults(func=cmd_assets, assets_parser=p)


def _store_flags(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--store", default=default, metavar="URL", help=f"the asset store (default ${ENV_STORE})")
    p.add_argument("--cache", default=default, metavar="URL", help=f"a memcached:// or redis:// cache in front of it (default ${ENV_CACHE})")


def cmd_assets(args: argparse.Namespace) -> int:
    """`amfkit assets` without an action: its help, exit status 2."""
    args.assets_parser.print_help(sys.stderr)
    return 2


# -- the actions -----------------------------------------------------------------------


def cmd_put(args: argparse.Namespace) -> int:
    from ..assets import check_name
    from ..assets.names import check_content_type

    with _errors():
        check_name(args.name)
        if args.content_type is not None:
            check_content_type(args.content_type)
    data = read_input(args.file)
    with _open_store(args, create=True) as store, _errors():
        asset = store.put(args.name, data, content_type=args.content_type)
    _print(_long_line(asset))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with _open_store(args) as store, _errors():
        data = store.get(args.name)
    if args.output == "-":
        _write_stdout(data)
    else:
        _write_file(args.output, data)
    return 0


def cmd_stat(args: argparse.Namespace) -> int:
    with _open_store(args) as store, _errors():
        asset = store.stat(args.name)
    doc = {
        "name": asset.name,
        "size": asset.size,
        "etag": asset.etag,
        "modified": _iso(asset.modified),
        "content_type": asset.content_type,
    }
    _print(json.dumps(doc, indent=2, ensure_ascii=False))
    return 0


def cmd_ls(args: argparse.Namespace) -> int:
    from ..assets import AssetNotFound

    with _open_store(args) as store, _errors():
        for name in store.names(args.prefix):
            if not args.long:
                _print(name)
                continue
            try:
                _print(_long_line(store.stat(name)))
            except AssetNotFound:
                continue  # removed since it was listed
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    from ..assets import check_name

    with _errors():
        for name in args.names:
            check_name(name)
    with _open_store(args) as store, _errors():
        for name in args.names:
            store.stat(name)  # every one exists, or nothing is removed
        for name in dict.fromkeys(args.names):
            store.delete(name)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..assets import AssetError, AssetTooLarge, check_name

    prefix = _prefix(args.prefix)
    top = args.dir
    if not os.path.isdir(top):
        raise CLIError(f"{top}: {'no such folder' if not os.path.exists(top) else 'not a folder'}")
    count = size = skipped = failed = 0
    with _open_store(args, create=True) as store:
        for rel, path, problem in _walk(top):
            name = prefix + rel
            if problem is None:
                try:
                    check_name(name)
                except ValueError as e:
                    problem = str(e)
            if problem is not None:
                _warn(f"skipped {path}: {problem}")
                skipped += 1
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                _warn(f"cannot read {path}: {e.strerror or e}")
                failed += 1
                continue
            try:
                store.put(name, data)
            except AssetTooLarge as e:
                _warn(f"{path}: {e}")
                failed += 1
                continue
            except (AssetError, ValueError) as e:
                raise CLIError(str(e)) from None
            count += 1
            size += len(data)
    _print(f"imported {_count(count, 'asset')} ({_count(size, 'byte')}) into {store.url}" + _tail(skipped, failed))
    return 1 if failed else 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..assets import AssetError, AssetNotFound

    prefix = _prefix(args.prefix)
    count = size = failed = 0
    with _open_store(args) as store:
        with _errors():
            names = list(store.names(prefix))
        try:
            os.makedirs(args.dir, exist_ok=True)
            root = os.open(args.dir, _O_TOP)  # DIR itself may be a link; nothing below it is followed
        except OSError as e:
            raise CLIError(f"{args.dir}: {e.strerror or e}") from None
        try:
            for name in names:
                try:
                    data = store.get(name)
                except AssetNotFound:
                    continue  # removed since it was listed
                except AssetError as e:
                    raise CLIError(str(e)) from None
                try:
                    _write_below(root, name[len(prefix) :].split("/"), data)
                except OSError as e:
                    _warn(f"cannot write {os.path.join(args.dir, *name[len(prefix):].split('/'))}: {e.strerror or e}")
                    failed += 1
                    continue
                count += 1
                size += len(data)
        finally:
            os.close(root)
    _print(f"exported {_count(count, 'asset')} ({_count(size, 'byte')}) to {args.dir}" + _tail(0, failed))
    return 1 if failed else 0


# -- the store -------------------------------------------------------------------------


@contextmanager
def _errors() -> Iterator[None]:
    """Turns what the store refuses (an `AssetError`, an invalid name or content type)
    into one line: a `CLIError`."""
    from ..assets import AssetError

    try:
        yield
    except (AssetError, ValueError) as e:
        raise CLIError(str(e)) from None


def _open_store(args: argparse.Namespace, *, create: bool = False) -> AssetStore:
    from ..assets import AssetError, AssetStore
    from ..assets.store import shown_url

    url = getattr(args, "store", None) or os.environ.get(ENV_STORE)
    if not url:
        raise CLIError(f"no asset store: give --store URL (a folder, sqlite:///FILE, redis://HOST, ...) or set {ENV_STORE}")
    cache = getattr(args, "cache", None) or os.environ.get(ENV_CACHE) or None
    if not create:
        missing = _missing_local_store(url)
        if missing is not None:
            raise CLIError(f"no asset store at {missing} (a put or an import makes it)")
    try:
        return AssetStore.open(url, cache=cache)
    except (AssetError, ValueError) as e:
        raise CLIError(str(e)) from None
    except (ImportError, OSError) as e:
        raise CLIError(f"cannot open the asset store {shown(shown_url(url))}: {e}") from None


def _missing_local_store(url: str) -> str | None:
    """The folder of a file store or the file of a SQLite store when it does not exist
    (opening the store would make it), else None."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        path = url
    elif scheme.lower() == "file":
        path = rest
    elif scheme.lower() == "sqlite" and rest.startswith("/"):
        path = rest[1:]
    else:
        return None
    return None if not path or os.path.exists(path) else path


# -- files -----------------------------------------------------------------------------


def _walk(top: str) -> Iterator[tuple[str, str, str | None]]:
    """(relative path with '/', path, why it is skipped or None) for every file under
    `top`, sorted; a folder starting with '.' or a link to a folder comes as one entry."""
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        files.sort()
        rel = os.path.relpath(folder, top)
        base = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        keep = []
        for d in dirs:
            path = os.path.join(folder, d)
            if os.path.islink(path):
                yield base + d, path, "a link to a folder (not followed)"
            elif d.startswith("."):
                yield base + d, path, "a folder starting with '.' (no asset name has such a part)"
            else:
                keep.append(d)
        dirs[:] = keep
        for f in files:
            path = os.path.join(folder, f)
            try:
                regular = _stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                regular = False
            if not regular:
                yield base + f, path, "not a regular file"
            else:
                yield base + f, path, None


def _write_below(root: int, parts: list[str], data: bytes) -> None:
    """Write `data` at `parts` below the folder `root`, whole or not at all: folders made
    as needed, none followed if it is a link, the file put in place by a rename."""
    fd = root
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _O_DIR, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, _O_DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(e.errno, f"{part!r} is not a folder") from None
                raise
            if fd != root:
                os.close(fd)
            fd = nxt
        tmp = f".{parts[-1][:200]}.{secrets.token_hex(4)}.tmp"
        out = os.open(tmp, _O_NEW, 0o666, dir_fd=fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
            finally:
                os.close(out)
            try:
                if _stat.S_ISDIR(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                    raise OSError(errno.EISDIR, "a folder is in the way")
            except FileNotFoundError:
                pass
            os.rename(tmp, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
    finally:
        if fd != root:
            os.close(fd)


def _write_file(path: str, data: bytes) -> None:
    """Replace the file at `path` with `data`, whole or not at all."""
    if not os.path.basename(path) or os.path.isdir(path):
        raise CLIError(f"{path}: a folder (give a file name)")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        root = os.open(folder, _O_TOP)
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
    try:
        _write_below(root, [os.path.basename(path)], data)
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
    finally:
        os.close(root)


def _write_stdout(data: bytes) -> None:
    if sys.stdout.isatty() and not _is_text(data):
        raise CLIError("refusing to write binary bytes to a terminal; use -o FILE or a pipe")
    sys.stdout.flush()
    stream: BinaryIO | None = getattr(sys.stdout, "buffer", None)
    if stream is None:
        raise CLIError("standard output takes no bytes here; use -o FILE")
    stream.write(data)
    stream.flush()


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# -- text ------------------------------------------------------------------------------


def _prefix(value: str) -> str:
    """`--prefix P` as the start of names: '' or a valid name plus '/'."""
    from ..assets import check_name

    value = value.strip("/")
    if not value:
        return ""
    with _errors():
        check_name(value)
    return value + "/"


def _iso(when: datetime, timespec: str = "auto") -> str:
    return when.astimezone(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def _long_line(asset: Asset) -> str:
    return f"{asset.size:>10}  {_iso(asset.modified, 'seconds')}  {asset.content_type}  {asset.etag}  {asset.name}"


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _tail(skipped: int, failed: int) -> str:
    out = f"; {skipped:,} skipped" if skipped else ""
    return out + (f"; {failed:,} failed" if failed else "")


def _print(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _warn(line: str) -> None:
    print(f"amfkit assets: {line}", file=sys.stderr)
