"""The one facade every interface calls: the CLI, the TUI and the MCP server.

It owns the repository root, the settings and the index file, and returns the frozen
dataclasses of `coderag_tui.models`. Each thread gets its own SQLite connection.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from coderag_tui.config import Settings, load_settings
from coderag_tui.errors import RepoError
from coderag_tui.indexing.indexer import Indexer, ProgressFn
from coderag_tui.models import EdgeRef, IndexStatus, IndexSummary, UnitRef
from coderag_tui.store import read
from coderag_tui.store.db import Database, open_database


def find_repo_root(start: Path) -> Path:
    """The repository containing `start` (like git: the nearest folder with .git), else start."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def default_db_path(root: Path, settings: Settings) -> Path:
    if settings.index.db_path:
        return Path(settings.index.db_path).expanduser()
    if settings.index.location == "repo":
        folder = root / ".coderag"
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")
        return folder / "index.db"
    from platformdirs import user_cache_dir

    digest = hashlib.sha1(str(root).encode()).hexdigest()[:12]
    return Path(user_cache_dir("coderag")) / "index" / f"{root.name}-{digest}.db"


class CodeRag:
    """A repository and its index."""

    def __init__(self, root: Path, settings: Settings, db_path: Path | None = None) -> None:
        self.root = root.resolve()
        self.settings = settings
        self.db_path = db_path or default_db_path(self.root, settings)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[Database] = []

    @classmethod
    def open(
        cls,
        repo: str | Path | None = None,
        *,
        config: str | Path | None = None,
        db_path: str | Path | None = None,
        settings: Settings | None = None,
    ) -> CodeRag:
        """Open a repository given as a folder (or None: the one containing the cwd)."""
        if repo is None:
            root = find_repo_root(Path.cwd())
        else:
            path = Path(repo).expanduser()
            if not path.exists():
                raise RepoError(f"no such folder: {repo}", "give a path to a repository or a git URL")
            if not path.is_dir():
                raise RepoError(f"not a folder: {repo}")
            root = path.resolve()
        if settings is None:
            settings = load_settings(root, config)
        return cls(root, settings, Path(db_path) if db_path else None)

    # ------------------------------------------------------------------ connections
    @property
    def db(self) -> Database:
        """This thread's connection to the index (opened, created and migrated on first use)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = open_database(self.db_path)
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()

    # ------------------------------------------------------------------ indexing (issue 2)
    def index(
        self, *, rebuild: bool = False, only: list[str] | None = None, progress: ProgressFn | None = None
    ) -> IndexSummary:
        """Bring the structural index up to date (parse, chunk, keywords, graph)."""
        return Indexer(self.db, self.root, self.settings).run(only=only, rebuild=rebuild, progress=progress)

    def status(self) -> IndexStatus:
        return read.status(self.db, str(self.root))

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return read.find_symbols(self.db, name, limit)

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        """Who calls the definitions named `name`."""
        units = self._definitions(name)
        return read.callers(self.db, [u.id for u in units])[:limit]

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        """What the definitions named `name` call (resolved units or external names)."""
        units = self._definitions(name)
        return read.callees(self.db, [u.id for u in units])[:limit]

    def tests_for(self, name: str) -> list[EdgeRef]:
        units = self._definitions(name)
        return read.callers(self.db, [u.id for u in units], kinds=("TESTS",))

    def outline(self, path: str) -> list[UnitRef]:
        return read.file_outline(self.db, path)

    def unit(self, unit_id: int) -> UnitRef | None:
        return read.get_unit(self.db, unit_id)

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        return read.units_at(self.db, path, line)

    def _definitions(self, name: str) -> list[UnitRef]:
        """The units a name denotes: exact matches when there are any, else the best fuzzy one."""
        found = read.find_symbols(self.db, name, limit=50)
        q = name.strip().rstrip("()")
        exact = [u for u in found if u.name == q or u.qualname == q or u.qualname.endswith("." + q)]
        return exact or found[:1]

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        """Lines of a repository file (1-based, inclusive), decoded leniently."""
        full = (self.root / path).resolve()
        if self.root not in full.parents and full != self.root:
            raise RepoError(f"{path} is outside the repository")
        try:
            text = full.read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise RepoError(f"cannot read {path}: {exc.strerror}") from exc
        lines = text.splitlines()
        return lines[start - 1 : end]

    # ------------------------------------------------------------------ retrieval (issue 3)

    # ------------------------------------------------------------------ answering (issue 4)

    # ------------------------------------------------------------------ remote & watch (issue 6)

    # ------------------------------------------------------------------ review (issue 7)
