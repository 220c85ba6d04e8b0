"""The file system backend (`file:///var/lib/app/assets`, the default): each asset is a
plain file under the root, so any web server can serve the same folder.

A put writes a temporary file in `ROOT/.amfkit-tmp/` (names starting with '.' are never
assets), fsyncs it, renames it over the asset and fsyncs the folder: a reader sees the old
or the new file, never a mix, and a process killed mid-put leaves only a temporary file,
removed by the next store opened on the root once its writer is gone. Every path is
walked from the root's descriptor without following symbolic links, so nothing outside
the root is ever read or written. The content type given to a put is kept in an extended
attribute (`user.amfkit.content_type`) where the file system has them, else it is what
the extension suggests. The ETag is made of the inode, the modification time in
nanoseconds and the size (a put always makes a new inode).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as _stat
from collections.abc import Iterator
from typing import Any

from .._text import shown
from .names import check_name
from .store import DEFAULT_MAX_SIZE, Asset, AssetError, AssetReader, AssetStore, guess_type, not_found, utc

__all__ = ["FileStore", "FileReader", "TMP_DIR", "XATTR"]

TMP_DIR = ".amfkit-tmp"
XATTR = "user.amfkit.content_type"

_O_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_O_DIR = _O_READ | getattr(os, "O_DIRECTORY", 0)
_O_TMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def file_etag(st: os.stat_result) -> str:
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"'


class FileReader(AssetReader):
    """Ranged reads from an open file: the version opened stays readable whatever puts
    and deletes happen meanwhile (they replace the name, not this file)."""

    def __init__(self, asset: Asset, fd: int) -> None:
        self.asset = asset
        self._fd: int | None = fd

    def read(self, offset: int, size: int) -> bytes:
        if self._fd is None:
            raise ValueError("read from a closed reader")
        return os.pread(self._fd, size, offset)

    def fileno(self) -> int | None:
        return self._fd

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


class FileStore(AssetStore):
    """Assets as files under `root` (created when missing). `fsync=False` skips the two
    fsyncs of a put (faster; a power cut may then lose recent puts, never mix them)."""

    def __init__(self, root: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE, fsync: bool = True) -> None:
        self.root = os.path.abspath(os.fspath(root))
        super().__init__("file://" + self.root, max_size=max_size)
        self.fsync = bool(fsync)
        try:
            os.makedirs(os.path.join(self.root, TMP_DIR), exist_ok=True)
            self._root_fd = os.open(self.root, _O_DIR)
        except OSError as e:
            raise AssetError(f"cannot open the asset folder {shown(self.root)}: {e.strerror}") from None
        self._tmp_fd = os.open(TMP_DIR, _O_DIR, dir_fd=self._root_fd)
        self._sweep()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> FileStore:
        """`file:///absolute/path` or `file://relative/path`."""
        path = url.split("://", 1)[1]
        if not path:
            raise ValueError("a file asset store URL is file:///PATH")
        return cls(path, **options)

    def close(self) -> None:
        for attr in ("_tmp_fd", "_root_fd"):
            fd = getattr(self, attr, None)
            if fd is not None:
                setattr(self, attr, None)
                os.close(fd)
        super().close()

    def __del__(self) -> None:
        for attr in ("_tmp_fd", "_root_fd"):
            fd = getattr(self, attr, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    # --- paths -----------------------------------------------------------------------

    def path(self, name: str) -> str:
        """The file an asset is kept in (for tools; reads go through the store)."""
        return os.path.join(self.root, *check_name(name).split("/"))

    def _parent(self, parts: list[str], create: bool) -> int:
        """A descriptor of the folder holding the last of `parts` (the caller closes it
        unless it is the root's), walked without following links."""
        fd = self._root_fd
        if fd is None:
            raise AssetError("the asset store is closed")
        for part in parts[:-1]:
            try:
                try:
                    nxt = os.open(part, _O_DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nxt = os.open(part, _O_DIR, dir_fd=fd)
            finally:
                if fd != self._root_fd:
                    os.close(fd)
            fd = nxt
        return fd

    def _release(self, fd: int) -> None:
        if fd != self._root_fd:
            os.close(fd)

    def _open_fd(self, name: str) -> tuple[int, os.stat_result]:
        parts = name.split("/")
        try:
            parent = self._parent(parts, create=False)
            try:
                fd = os.open(parts[-1], _O_READ, dir_fd=parent)
            finally:
                self._release(parent)
        except OSError as e:
            # Absent, a folder on the way is a file, or a link (ELOOP): not an asset.
            if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR):
                raise not_found(name) from None
            raise AssetError(f"cannot open asset {shown(name)}: {e.strerror}") from None
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise not_found(name)
        return fd, st

    def _content_type(self, fd: int, name: str) -> str:
        try:
            return os.getxattr(fd, XATTR).decode("ascii")
        except (OSError, UnicodeDecodeError):
            return guess_type(name)

    def _asset(self, name: str, fd: int, st: os.stat_result, data: bytes | None = None) -> Asset:
        return Asset(name, st.st_size, file_etag(st), utc(st.st_mtime_ns / 1e9), self._content_type(fd, name), data)

    # --- the primitives --------------------------------------------------------------

    def _stat(self, name: str) -> Asset:
        fd, st = self._open_fd(name)
        try:
            return self._asset(name, fd, st)
        finally:
            os.close(fd)

    def _load(self, name: str) -> Asset:
        fd, st = self._open_fd(name)
        try:
            data = _read_all(fd, st.st_size)
            return self._asset(name, fd, st, data)
        finally:
            os.close(fd)

    def _open(self, name: str) -> FileReader:
        fd, st = self._open_fd(name)
        try:
            asset = self._asset(name, fd, st)
        except BaseException:
            os.close(fd)
            raise
        return FileReader(asset, fd)

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        if self._tmp_fd is None:
            raise AssetError("the asset store is closed")
        tmp = f"{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(tmp, _O_TMP, 0o644, dir_fd=self._tmp_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if content_type != guess_type(name):
                    try:
                        os.setxattr(fd, XATTR, content_type.encode("ascii"))
                    except OSError:
                        pass  # no extended attributes here: the extension's type is served
                if self.fsync:
                    os.fsync(fd)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            self._rename_into_place(tmp, name)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self._tmp_fd)
            except OSError:
                pass
            raise
        return Asset(name, st.st_size, file_etag(st), utc(st.st_mtime_ns / 1e9), content_type)

    def _rename_into_place(self, tmp: str, name: str) -> None:
        parts = name.split("/")
        for attempt in range(3):  # a concurrent delete may remove a folder just made
            try:
                parent = self._parent(parts, create=True)
            except OSError as e:
                if e.errno == errno.ENOENT and attempt < 2:
                    continue
                raise AssetError(f"cannot put asset {shown(name)}: {e.strerror} (a folder on its path is a file?)") from None
            try:
                os.rename(tmp, parts[-1], src_dir_fd=self._tmp_fd, dst_dir_fd=parent)
                if self.fsync:
                    os.fsync(parent)
                return
            except OSError as e:
                if e.errno == errno.ENOENT and attempt < 2:
                    continue
                raise AssetError(f"cannot put asset {shown(name)}: {e.strerror}") from None
            finally:
                self._release(parent)

    def _delete(self, name: str) -> None:
        parts = name.split("/")
        try:
            parent = self._parent(parts, create=False)
        except OSError:
            raise not_found(name) from None
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            if not _stat.S_ISREG(st.st_mode):
                raise not_found(name)
            os.unlink(parts[-1], dir_fd=parent)
        except FileNotFoundError:
            raise not_found(name) from None
        finally:
            self._release(parent)
        self._prune(parts[:-1])

    def _prune(self, folders: list[str]) -> None:
        """Remove the folders of a deleted asset that are now empty (a put racing this
        makes them again)."""
        while folders:
            try:
                parent = self._parent(folders, create=False)
            except OSError:
                return
            try:
                os.rmdir(folders[-1], dir_fd=parent)
            except OSError:
                return
            finally:
                self._release(parent)
            folders = folders[:-1]

    def _names(self, prefix: str) -> Iterator[str]:
        start = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        top = os.path.join(self.root, *start.split("/")) if start else self.root
        found = []
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(folder, self.root)
            base = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for f in files:
                name = base + f
                if not name.startswith(prefix) or f.startswith("."):
                    continue
                if not _stat.S_ISREG(os.lstat(os.path.join(folder, f)).st_mode):
                    continue
                try:
                    check_name(name)
                except ValueError:
                    continue  # a file put there by other means that is no valid name
                found.append(name)
        found.sort()
        return iter(found)

    def _sweep(self) -> None:
        """Remove temporary files whose writer is gone (killed mid-put)."""
        assert self._tmp_fd is not None
        for entry in os.listdir(self._tmp_fd):
            pid_text = entry.split("-", 1)[0]
            if pid_text.isdigit() and _alive(int(pid_text)):
                continue
            try:
                os.unlink(entry, dir_fd=self._tmp_fd)
            except OSError:
                pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_all(fd: int, size: int) -> bytes:
    """The whole file (`size` from fstat; a file still growing is read as it is now)."""
    data = os.pread(fd, size, 0)
    if len(data) == size:
        return data
    chunks = [data]
    offset = len(data)
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)
