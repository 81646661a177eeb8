"""The files and skips tables as the indexer and the watcher read and write them: what each
file was when it was indexed, what discovery skipped and why, and clearing an index."""

from __future__ import annotations

from collections.abc import Iterable

from coderag_tui.store.backend import StoreBackend

_FILE_STATE = "SELECT id, path, hash, size, mtime_ns FROM files"
# every table a rebuild empties (the keyword table is emptied by its own statement)
_INDEX_TABLES = ("files", "units", "chunks", "imports", "edges", "skips", "summaries", "file_runs", "file_inbound")


def is_empty(db: StoreBackend) -> bool:
    """No file indexed and none skipped: a first build."""
    return not db.one("SELECT 1 FROM files") and not db.one("SELECT 1 FROM skips")


def file_states(db: StoreBackend, paths: Iterable[str] | None = None) -> dict[str, tuple[int, str, int, int]]:
    """path -> (file id, hash, size, mtime_ns), of every file or of these paths."""
    rows = db.execute(_FILE_STATE) if paths is None else db.rows_in(_FILE_STATE + " WHERE path IN ({marks})",
                                                                      sorted(paths))
    return {path: (fid, h, size, mtime) for fid, path, h, size, mtime in rows}


def touch_file(db: StoreBackend, path: str, size: int, mtime_ns: int) -> None:
    """A file whose bytes did not change: only its size and time are new."""
    db.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))


def skips(db: StoreBackend) -> dict[str, tuple[str, int, int]]:
    """path -> (reason, size, mtime_ns) of every file discovery skipped."""
    return {p: (r, s, m) for p, r, s, m in db.execute("SELECT path, reason, size, mtime_ns FROM skips")}


def replace_skips(db: StoreBackend, skipped: dict[str, tuple[str, int, int]]) -> None:
    """Make the skips table hold these rows, writing only the rows that differ (an update that
    skips nothing new rewrote thousands of rows)."""
    stored = skips(db)
    gone = sorted(p for p, v in stored.items() if skipped.get(p) != v)
    for i in range(0, len(gone), 500):
        part = gone[i:i + 500]
        db.execute(f"DELETE FROM skips WHERE path IN ({','.join('?' * len(part))})", part)
    db.insert_rows("skips", ("path", "reason", "size", "mtime_ns"),
                   [(p, r, s, m) for p, (r, s, m) in sorted(skipped.items()) if stored.get(p) != (r, s, m)])


def edge_count(db: StoreBackend) -> int:
    return int(db.scalar("SELECT count(*) FROM edges", default=0))


def paths_under(db: StoreBackend, folder: str) -> list[str]:
    """The indexed paths inside a folder (a repository path without the trailing slash)."""
    lo, hi = folder + "/", folder + "0"  # "0" follows "/": every path starting with folder/
    return [r[0] for r in db.execute("SELECT path FROM files WHERE path >= ? AND path < ?", (lo, hi))]


def clear_index(db: StoreBackend) -> None:
    """Empty every table an index build fills (in the caller's transaction)."""
    for table in _INDEX_TABLES:
        db.execute(f"DELETE FROM {table}")
    db.clear_keyword_rows()
