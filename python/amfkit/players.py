"""Saves where the players keep them: Flash Player's `#SharedObjects` tree, Ruffle
desktop's `SharedObjects` folder and Ruffle web's localStorage entries; reading any of
them and writing any other, the .sol bytes unchanged (docs/sol.md, "Saves between
players").

    >>> from amfkit import players
    >>> key = players.SaveKey("www.example.com", "games/8planet.swf", "mykaka_starBall")
    >>> key.ruffle_key()
    'www.example.com/games/8planet.swf/mykaka_starBall'
    >>> key.relpath()
    'www.example.com/games/8planet.swf/mykaka_starBall.sol'
    >>> players.SaveKey.from_ruffle_key("localhost/Users/ada/game.swf/#slots/one")
    SaveKey(host='localhost', path='Users/ada/game.swf', name='slots/one')

Every player names a save by the SWF's host, the SWF's path (or the `localPath` given to
`SharedObject.getLocal`) and the shared object's name. The formats, as Ruffle's source
builds them (repository ruffle-rs/ruffle):

- the name: `{host}/{path}/{name}`, with the path's leading and trailing slashes
  removed, `localhost` as the host of a `file:` URL (a Windows drive letter dropped), and
  `#` before a name that holds a `/` (`core/src/avm2/globals/flash/net/shared_object.rs`
  and `core/src/avm1/globals/shared_object.rs`, `get_local`; "to mimic Flash Player");
- Ruffle web: a localStorage entry named that way, holding the .sol file's bytes in
  standard base64 with padding (`web/src/storage.rs`, `LocalStorageBackend`); its save
  manager takes an entry for a save when the decoded bytes hold `TCSO` at offset 6
  (`web/packages/core/src/internal/player/inner.tsx`, `isB64SOL`);
- Ruffle desktop: `{name}.sol` below its `SharedObjects` folder, the name's slashes
  making folders (`desktop/src/backends/storage.rs`, `DiskStorageBackend`; the folder is
  `ruffle/SharedObjects` in the user's local data folder);
- Flash Player: the same `{host}/{path}/{name}.sol` below `#SharedObjects/<8 random
  letters and digits>/` (`~/.macromedia/Flash_Player/` on Linux,
  `%APPDATA%\\Macromedia\\Flash Player\\` on Windows), with `localhost` for local SWFs
  and `#localWithNet` for those in the local-with-networking sandbox (Ruffle reads both
  as `localhost`).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import string
from dataclasses import dataclass
from typing import Iterable, Iterator

from . import _amfkit
from ._text import MAX_SHOWN, clip, shown

__all__ = [
    "FORMATS",
    "MAX_SAVES",
    "Save",
    "SaveKey",
    "SaveError",
    "detect",
    "read_saves",
    "ruffle_web_entries",
    "write_saves",
]

#: The places saves are read from and written to.
FORMATS = ("flash", "ruffle-desktop", "ruffle-web")
#: Most saves one folder or JSON file may hold (a bound on what a scan reads).
MAX_SAVES = 100_000
#: Largest .sol file or JSON document read (the decoders' `max_size`).
MAX_FILE = _amfkit.DEFAULT_MAX_SIZE
LOCAL_WITH_NET = "#localWithNet"
_RANDOM = string.ascii_uppercase + string.digits


class SaveError(ValueError):
    """A folder or JSON document that cannot be read as saves, a save name that cannot
    be a path, or a write that would replace a different save."""


@dataclass(frozen=True)
class SaveKey:
    """Where a player keeps a save: the SWF's host (`localhost` for a local file), its
    path (or `localPath`; no leading or trailing slash, may be empty) and the shared
    object's name (may hold `/`)."""

    host: str
    path: str
    name: str

    def __post_init__(self) -> None:
        _check_segment(self.host, "host")
        for part in self.path.split("/") if self.path else ():
            _check_segment(part, "path")
        if not self.name:
            raise SaveError("a save's name is empty")
        for part in self.name.split("/"):
            _check_segment(part, "name")

    @classmethod
    def for_swf(cls, url: str, name: str, local_path: str | None = None) -> SaveKey:
        """The key `SharedObject.getLocal(name, local_path)` makes in a SWF loaded from
        `url`, as Ruffle makes it (`get_local`): the query and fragment dropped, the
        path's leading and trailing slashes removed, `localhost` for a `file:` URL (with
        a Windows drive letter dropped), and `local_path`, when given, in place of the
        path: it must be a prefix of it, whole segments. Raises SaveError where the
        player refuses (returns null)."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        path = parts.path
        path = path[1:] if path.startswith("/") else path
        path = path[:-1] if path.endswith("/") else path
        if parts.scheme == "file":
            host = "localhost"
            if len(path) >= 3 and path[1:3] == ":/":
                path = path[3:]
        else:
            host = parts.hostname or ""
        if any(c in name for c in "~%&\\;:\"',<>?# "):
            raise SaveError(f"{shown(name)}: Flash Player refuses a shared object name with any of ~%&\\;:\"',<>?# or a space")
        if local_path is not None:
            if not local_path:
                raise SaveError("an empty localPath is refused")
            local = local_path[:-1] if local_path.endswith("/") else local_path
            local = local[1:] if local.startswith("/") else local
            if not (path.startswith(local) and (not local or len(path) == len(local) or path[len(local)] == "/")):
                raise SaveError(f"localPath {shown(local_path)} is not a prefix of the SWF's path {shown(path)}")
            path = local
        return cls(host, path, name)

    def ruffle_key(self) -> str:
        """Ruffle's name for the save: its localStorage key, and its file below
        `SharedObjects` without `.sol`."""
        prefix = "#" if "/" in self.name else ""
        return f"{self.host}/{self.path}/{prefix}{self.name}"

    def relpath(self) -> str:
        """The save's file below Flash Player's `#SharedObjects/<random>/` folder and
        Ruffle desktop's `SharedObjects` folder, `/`-separated."""
        parts = [self.host, *(self.path.split("/") if self.path else ())]
        name = ("#" if "/" in self.name else "") + self.name
        return "/".join([*parts, *name.split("/")]) + ".sol"

    @classmethod
    def from_ruffle_key(cls, key: str) -> SaveKey:
        """The key of a Ruffle name (`ruffle_key()`'s inverse). Raises SaveError."""
        parts = key.split("/")
        if len(parts) < 2:
            raise SaveError(f"{shown(key)} is not a save's name (host/path/name)")
        return cls._from_parts(parts, key)

    @classmethod
    def from_relpath(cls, relpath: str) -> SaveKey:
        """The key of a file below a `SharedObjects` folder (`relpath()`'s inverse)."""
        if not relpath.endswith(".sol"):
            raise SaveError(f"{shown(relpath)} is not a .sol file")
        parts = relpath[: -len(".sol")].split("/")
        if len(parts) < 2:
            raise SaveError(f"{shown(relpath)} is not below a site's folder (host/.../name.sol)")
        return cls._from_parts(parts, relpath)

    @classmethod
    def _from_parts(cls, parts: list[str], text: str) -> SaveKey:
        # A name holding a slash starts with '#' (a URL's path cannot hold a raw '#').
        for i in range(1, len(parts)):
            if parts[i].startswith("#"):
                return cls(parts[0], "/".join(parts[1:i]), "/".join(parts[i:])[1:])
        return cls(parts[0], "/".join(parts[1:-1]), parts[-1])

    def for_ruffle(self) -> SaveKey:
        """This key as Ruffle names it: Flash Player's `#localWithNet` sandbox is
        Ruffle's `localhost`."""
        return SaveKey("localhost", self.path, self.name) if self.host == LOCAL_WITH_NET else self


@dataclass(frozen=True)
class Save:
    """One save: its key, the .sol file's bytes, and where it was read (a file's path, or
    a JSON key)."""

    key: SaveKey
    data: bytes
    source: str


def _check_segment(part: str, what: str) -> None:
    if not part or part in (".", "..") or part.startswith(".") or "\\" in part or "\0" in part or "/" in part:
        # Ruffle refuses a path segment starting with '.', as Flash Player fails to save one.
        raise SaveError(f"a save's {what} cannot hold the path segment {shown(part)}")
    if part == "#SharedObjects":
        raise SaveError(f"a save's {what} cannot be {part}")


def is_sol(data: bytes) -> bool:
    """Whether `data` starts as a .sol file does (magic `00 bf`, `TCSO` at offset 6), the
    test Ruffle's save manager makes of a localStorage entry."""
    return len(data) >= 10 and data[:2] == b"\x00\xbf" and data[6:10] == b"TCSO"


# -- where saves are --------------------------------------------------------------------


def detect(source: str) -> str:
    """The format of `source`: `ruffle-web` for a file (a JSON object of localStorage
    entries), `flash` for a folder that is, holds or is inside `#SharedObjects`, else
    `ruffle-desktop` (a `SharedObjects` folder, or the `ruffle` folder holding one)."""
    if os.path.isfile(source):
        return "ruffle-web"
    if not os.path.isdir(source):
        raise SaveError(f"{source}: no such file or folder")
    if _flash_roots(source) is not None:
        return "flash"
    return "ruffle-desktop"


def _flash_roots(folder: str) -> list[str] | None:
    """The `<random>` folders of a Flash Player tree at `folder`, or None when `folder`
    is not one: `folder` is a `<random>` folder, `#SharedObjects`, or holds it (the
    `Flash_Player` folder)."""
    folder = os.path.abspath(folder)
    if os.path.basename(os.path.dirname(folder)) == "#SharedObjects":
        return [folder]
    if os.path.basename(folder) == "#SharedObjects":
        shared = folder
    elif os.path.isdir(os.path.join(folder, "#SharedObjects")):
        shared = os.path.join(folder, "#SharedObjects")
    else:
        return None
    return sorted(os.path.join(shared, d) for d in os.listdir(shared) if os.path.isdir(os.path.join(shared, d)))


def _ruffle_root(folder: str) -> str:
    inside = os.path.join(folder, "SharedObjects")
    return inside if os.path.isdir(inside) else folder


def read_saves(source: str, format: str | None = None, *, problems: list[str] | None = None) -> list[Save]:
    """Every save at `source`: a Flash Player tree, a Ruffle desktop folder, or a JSON
    file of Ruffle web's localStorage entries (`format` as `detect` tells, when None).
    What is not a save (a file without the .sol header, another site's localStorage
    entry, a file at the wrong place) is left out, with a line in `problems` when given.
    Raises SaveError for a source that cannot be read at all, or past `MAX_SAVES`."""
    fmt = format or detect(source)
    if fmt not in FORMATS:
        raise SaveError(f"unknown save format {shown(fmt)} (known: {', '.join(FORMATS)})")
    notes = problems if problems is not None else []
    if fmt == "ruffle-web":
        return _read_web(source, notes)
    if not os.path.isdir(source):
        raise SaveError(f"{source}: not a folder")
    if fmt == "flash":
        roots = _flash_roots(source)
        if roots is None:
            roots = [source]
    else:
        roots = [_ruffle_root(source)]
    saves: list[Save] = []
    for root in roots:
        for path, rel in _sol_files(root):
            try:
                key = SaveKey.from_relpath(rel)
            except SaveError as e:
                notes.append(f"{path}: {e}")
                continue
            data = _read_file(path, notes)
            if data is None:
                continue
            saves.append(Save(key, data, path))
            if len(saves) > MAX_SAVES:
                raise SaveError(f"{source}: more than {MAX_SAVES} saves")
    return saves


def _sol_files(root: str) -> Iterator[tuple[str, str]]:
    """(path, path below root with '/') of each .sol file below root; symbolic links
    are not followed."""
    seen = 0
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".sol"):
                continue
            path = os.path.join(top, name)
            if os.path.islink(path):
                continue
            seen += 1
            if seen > MAX_SAVES:
                raise SaveError(f"{root}: more than {MAX_SAVES} .sol files")
            yield path, os.path.relpath(path, root).replace(os.sep, "/")


def _read_file(path: str, notes: list[str]) -> bytes | None:
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE:
            notes.append(f"{path}: {size} bytes, more than the {MAX_FILE} a save may have")
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        notes.append(f"{path}: {e.strerror or e}")
        return None
    if not is_sol(data):
        notes.append(f"{path}: not a .sol file (no 00 bf ... TCSO header)")
        return None
    return data


def _read_web(source: str, notes: list[str]) -> list[Save]:
    try:
        size = os.path.getsize(source)
        if size > MAX_FILE:
            raise SaveError(f"{source}: {size} bytes, more than the {MAX_FILE} read")
        with open(source, "rb") as f:
            text = f.read()
    except OSError as e:
        raise SaveError(f"{source}: {e.strerror or e}") from None
    if is_sol(text):
        raise SaveError(f"{source}: a .sol file, not a JSON file of localStorage entries (give the folder that holds it)")
    try:
        entries = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise SaveError(f"{source}: not JSON ({clip(str(e), MAX_SHOWN * 2)})") from None
    if not isinstance(entries, dict):
        raise SaveError(f"{source}: not a JSON object of localStorage entries (key -> base64 text)")
    saves: list[Save] = []
    for k, v in entries.items():
        if not isinstance(v, str):
            notes.append(f"{shown(k)}: not a string, not a save")
            continue
        try:
            data = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            notes.append(f"{shown(k)}: not base64, not a save")
            continue
        if not is_sol(data):
            notes.append(f"{shown(k)}: not a .sol file, not a save")
            continue
        try:
            key = SaveKey.from_ruffle_key(k)
        except SaveError as e:
            notes.append(f"{shown(k)}: {e}")
            continue
        saves.append(Save(key, data, k))
        if len(saves) > MAX_SAVES:
            raise SaveError(f"{source}: more than {MAX_SAVES} saves")
    return saves


# -- writing ---------------------------------------------------------------------------


def ruffle_web_entries(saves: Iterable[Save]) -> dict[str, str]:
    """Ruffle web's localStorage entries for `saves`: key -> standard base64, sorted by
    key. Raises SaveError when two saves get one key."""
    out: dict[str, str] = {}
    sources: dict[str, str] = {}
    for save in saves:
        key = save.key.for_ruffle().ruffle_key()
        if key in out:
            raise SaveError(f"two saves are {shown(key)} for Ruffle: {sources[key]} and {save.source}")
        out[key] = base64.b64encode(save.data).decode("ascii")
        sources[key] = save.source
    return dict(sorted(out.items()))


def write_saves(saves: Iterable[Save], folder: str, format: str, *, replace: bool = False) -> list[tuple[str, str]]:
    """Write `saves` into `folder` as `format` ("flash" or "ruffle-desktop") keeps
    them; returns (path, "written" | "same") for each. Flash Player: `folder` is its
    `<random>` folder, `#SharedObjects`, or the folder holding it (the existing
    `<random>` folder is used; one is made when there is none). Ruffle desktop:
    `folder` is its `SharedObjects` folder, or the folder that holds (or will hold)
    one. Nothing is written when a file is there with other bytes, unless `replace`,
    or when a save's name cannot be a file there. Raises SaveError."""
    if format == "flash":
        root = _flash_target(folder)
    elif format == "ruffle-desktop":
        root = folder if os.path.basename(os.path.abspath(folder)) == "SharedObjects" else os.path.join(folder, "SharedObjects")
    else:
        raise SaveError(f"{shown(format)} is not a folder format (flash, ruffle-desktop)")
    plan: list[tuple[str, bytes, str]] = []
    targets: dict[str, str] = {}
    for save in saves:
        key = save.key if format == "flash" else save.key.for_ruffle()
        parts = key.relpath().split("/")
        _check_folders(root, parts[:-1])
        path = os.path.join(root, *parts)
        if path in targets:
            raise SaveError(f"two saves are {key.relpath()}: {targets[path]} and {save.source}")
        targets[path] = save.source
        state = "written"
        if os.path.lexists(path):
            if os.path.islink(path) or not os.path.isfile(path):
                raise SaveError(f"{path} is there and is not a plain file: nothing written")
            with open(path, "rb") as f:
                same = f.read(len(save.data) + 1) == save.data
            if same:
                state = "same"
            elif not replace:
                raise SaveError(f"{path} is there with other bytes: nothing written (--replace writes over it)")
        plan.append((path, save.data, state))
    out: list[tuple[str, str]] = []
    os.makedirs(root, exist_ok=True)
    for path, data, state in plan:
        if state == "same":
            out.append((path, state))
            continue
        _make_folders(root, os.path.relpath(os.path.dirname(path), root).split(os.sep))
        _write_file(path, data)
        out.append((path, state))
    return out


def _check_folders(root: str, parts: list[str]) -> None:
    """The folders of `parts` below `root` that exist are folders, not symbolic links
    (which could lead out of `root`)."""
    path = root
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise SaveError(f"{path} is a symbolic link (it may lead out of {root}): nothing written")
        if not os.path.lexists(path):
            return
        if not os.path.isdir(path):
            raise SaveError(f"{path} is there and is not a folder: nothing written")


def _make_folders(root: str, parts: list[str]) -> None:
    path = root
    for part in parts:
        if part in ("", "."):
            continue
        path = os.path.join(path, part)
        try:
            os.mkdir(path)
        except FileExistsError:
            if os.path.islink(path) or not os.path.isdir(path):
                raise SaveError(f"{path} is not a folder (or a symbolic link): not written") from None


def _flash_target(folder: str) -> str:
    roots = _flash_roots(folder) if os.path.isdir(folder) else None
    if roots is not None and len(roots) == 1:
        return roots[0]
    if roots is not None and len(roots) > 1:
        raise SaveError(f"{folder} holds {len(roots)} Flash Player profiles ({', '.join(os.path.basename(r) for r in roots)}): give one of them")
    base = folder if os.path.basename(os.path.abspath(folder)) == "#SharedObjects" else os.path.join(folder, "#SharedObjects")
    return os.path.join(base, "".join(secrets.choice(_RANDOM) for _ in range(8)))


def _write_file(path: str, data: bytes) -> None:
    """Write through a new file beside `path`, renamed over it: a reader never sees half
    a save, and a symbolic link at `path` is replaced, not followed."""
    tmp = f"{path}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
