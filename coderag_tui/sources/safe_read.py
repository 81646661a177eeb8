"""Reading a repository's file after it was indexed, as discovery would have read it.

Between indexing and reading, a file (or a folder on its path) can be replaced by a symbolic
link: to the repository's `.env`, or out of the repository. Following it would hand out what
the index never held. So a file is opened one path component at a time, each relative to the
folder before it, none of them followed if it is a link (`O_NOFOLLOW`), and only a regular
file is read; and the rules discovery applies (secret file names, excludes, ignore files,
includes) are applied again to the path, since they or the tree may have changed too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from coderag_tui.config import IndexSettings
from coderag_tui.errors import RepoError
from coderag_tui.sources.discovery import IgnoreMatcher, secret_matcher
from coderag_tui.sources.names import fs_path

MAX_READ_BYTES = 64 * 1024 * 1024  # a file read for display or context (indexing has its own cap)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_BINARY = getattr(os, "O_BINARY", 0)


def _parts(path: str) -> list[str]:
    name = fs_path(path).replace(os.sep, "/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or name.startswith("/"):
        raise RepoError(f"{path} is outside the repository")
    return parts


def _refused(path: str, exc: OSError) -> RepoError:
    if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and _NOFOLLOW):
        return RepoError(f"cannot read {path}: it is (or is under) a symbolic link",
                         "coderag reads no file through a link")
    return RepoError(f"cannot read {path}: {exc.strerror or exc}")


def _open_no_links(root: Path, parts: list[str]) -> int:
    """A descriptor of root/parts..., no component of which is a link (else OSError ELOOP)."""
    if os.open in os.supports_dir_fd and _NOFOLLOW:
        folder = os.open(root, os.O_RDONLY | _DIRECTORY)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY, dir_fd=folder)
        finally:
            os.close(folder)
    # (no openat here: each component is checked, then the file opened without following it)
    at = root
    for part in parts:
        at = at / part
        if stat.S_ISLNK(os.lstat(at).st_mode):
            raise OSError(errno.ELOOP, "a symbolic link", str(at))
    return os.open(at, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)


def check_rules(root: Path, path: str, settings: IndexSettings) -> None:
    """RepoError when discovery would not read `path` (a repository path) under `root`: a
    secret file's name, or a path its excludes, ignore files or includes leave out."""
    name = PurePosixPath(fs_path(path)).name
    if secret_matcher(settings.secret_files)(name):
        raise RepoError(f"{path} is not read: its name is one that holds secrets ([index] secret_files)")
    if IgnoreMatcher(root, settings).is_ignored(path):
        raise RepoError(f"{path} is not read: it is excluded or ignored")


def read_repo_file(root: Path, path: str, settings: IndexSettings | None = None,
                   limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file `path` (a repository path) of the repository at `root`,
    reached through no symbolic link; with `settings`, only when discovery's rules would read
    it (see the module doc). RepoError (one line) otherwise."""
    parts = _parts(path)
    if settings is not None:
        check_rules(root, path, settings)
    try:
        fd = _open_no_links(root, parts)
    except OSError as exc:
        raise _refused(path, exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RepoError(f"cannot read {path}: not a regular file")
        if st.st_size > limit:
            raise RepoError(f"cannot read {path}: larger than {limit // (1024 * 1024)} MiB")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            chunks.append(part)
            left -= len(part)
    except OSError as exc:
        raise _refused(path, exc) from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise RepoError(f"cannot read {path}: larger than {limit // (1024 * 1024)} MiB")
    return data
