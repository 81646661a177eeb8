"""Where things live: the repository root, the index file and its folder, the models/ folder of
the user's GGUFs and per-user cache/data folders."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.errors import RepoError


def models_dir() -> Path:
    """The models/ folder searched for GGUF chat models: $CODERAG_MODELS_DIR, else the one beside
    the package (a source checkout or an editable install), else the user's data folder."""
    env = os.environ.get("CODERAG_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    beside = Path(__file__).resolve().parent.parent / "models"
    if beside.is_dir():
        return beside
    from platformdirs import user_data_dir

    return Path(user_data_dir("coderag")) / "models"


# The line every file coderag writes for people (a conversation's export) carries: discovery
# skips a file that contains it near its start, wherever it was put.
EXPORT_MARK = "<!-- written by coderag; not indexed -->"


def exports_dir() -> Path:
    """Where conversations are exported: $CODERAG_EXPORTS_DIR, else the user's data folder
    (never the repository: an export there would be indexed and then cited as the code)."""
    env = os.environ.get("CODERAG_EXPORTS_DIR")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("coderag")) / "exports"


def cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("coderag"))


def find_repo_root(start: Path) -> Path:
    """The repository containing `start` (like git: the nearest folder with .git), else start."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def indexed_root(start: Path, settings: Settings) -> Path:
    """The folder whose index covers `start`: `start` itself when it has an index (or the index
    file is configured), else the nearest folder above it that has one (a subfolder of an indexed
    repository is that repository), else `start`. Looks only: creates nothing."""
    if settings.index.db_path:
        return start
    for folder in (start, *start.parents):
        if default_db_path(folder, settings).is_file() or (folder / ".coderag" / "index.db").is_file():
            return folder
    return start


def default_db_path(root: Path, settings: Settings) -> Path:
    """Where the index lives (nothing is created here: see `prepare_db_folder`)."""
    if settings.index.db_path:
        return Path(settings.index.db_path).expanduser()
    if settings.index.location == "repo":
        return root / ".coderag" / "index.db"
    from platformdirs import user_cache_dir

    digest = hashlib.sha1(str(root).encode()).hexdigest()[:12]
    return Path(user_cache_dir("coderag")) / "index" / f"{root.name}-{digest}.db"


def private_folder(folder: Path) -> Path:
    """`folder`, created (with its missing parents) for this user alone (0700): what coderag
    keeps there (indexes, clones, saved questions) is code and questions that other local
    users must not read. An existing one this user owns is narrowed to 0700 too."""
    missing: list[Path] = []
    at = folder
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for part in reversed(missing):
        part.mkdir(mode=0o700, exist_ok=True)
    private(folder, 0o700)
    return folder


def private(path: Path, mode: int = 0o600) -> None:
    """Narrow an existing file or folder this user owns to `mode` (nothing on other platforms)."""
    if os.name != "posix":
        return
    try:
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o777 & ~mode:
            path.chmod(mode)
    except OSError:
        pass  # gone meanwhile, or not ours to change: left as it is


def prepare_db_folder(root: Path, db_path: Path, settings: Settings, given: bool = False) -> None:
    """Before the index is first written: the default cache folder is created (for this user
    alone), and an index kept in the repository gets a .gitignore. (A folder the user names
    must exist: see open_database.)"""
    if not given and not settings.index.db_path and settings.index.location != "repo":
        try:
            private_folder(cache_dir())  # the clones beside the indexes too
            private_folder(db_path.parent)
        except OSError as exc:
            raise RepoError(f"cannot create {db_path.parent}: {exc.strerror}") from exc
        return
    folder = root / ".coderag"
    if db_path.parent != folder:
        return
    if folder.is_dir():
        private(folder, 0o700)
        return
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        (folder / ".gitignore").write_text("*\n")
    except OSError as exc:
        raise RepoError(f"cannot create {folder}: {exc.strerror}") from exc


def server_token_file(url: str) -> Path:
    """Where a `coderag serve` on this machine keeps the token it made for itself (0600, in a
    0700 folder), so that this user's clients of that URL find it: one file per host and port."""
    from urllib.parse import urlsplit

    from platformdirs import user_data_dir

    parts = urlsplit(url)
    name = f"{parts.hostname or 'localhost'}-{parts.port or 80}".replace(":", "_")
    return Path(user_data_dir("coderag")) / "servers" / f"{name}.token"
