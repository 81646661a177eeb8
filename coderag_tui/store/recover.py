"""Replace a broken index file before a rebuild, keeping what only it holds (conversations).

`--rebuild` must work whatever state the file is in: a damaged file is moved aside (never
deleted: it is the user's data), a fresh one takes its place, and the saved conversations are
copied over from the old file as far as it can still be read.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import apsw

from coderag_tui.errors import CorruptIndexError, StoreError
from coderag_tui.store.db import load_vec, open_database

_TABLES = {  # the conversation tables and the columns carried over
    "conversations": ("id", "title", "created", "updated"),
    "messages": ("id", "conversation_id", "role", "content", "sources", "created", "outcome", "invalid",
                 "opening"),
}


def replace_if_broken(path: Path) -> str:
    """Check the index at `path` thoroughly; when it is damaged (or not an index), move it aside,
    create a fresh index there and carry the conversations over. Returns what was done, in one
    line ("" when the file was sound or absent)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return ""
    problem = _problem(path)
    if not problem:
        return ""
    aside = _move_aside(path)
    rows, failure = _read_conversations(aside)
    fresh = open_database(path)
    try:
        with fresh.transaction():
            for table, columns in _TABLES.items():
                marks = ",".join("?" * len(columns))
                fresh.executemany(f"INSERT OR IGNORE INTO {table}({','.join(columns)}) VALUES({marks})",
                                  rows[table])
    finally:
        fresh.close()
    said = f"the index {path} {problem}: moved it aside to {aside.name}, a fresh index takes its place"
    convs, msgs = len(rows["conversations"]), len(rows["messages"])
    if failure:
        kept = f"; {convs} conversations ({msgs} messages) recovered" if convs or msgs else ""
        return f"{said}; its saved conversations could not all be recovered ({failure}){kept}"
    return f"{said}; {convs} saved conversations ({msgs} messages) carried over"


def _problem(path: Path) -> str:
    """Why the file is not a sound index ("" when it is)."""
    try:
        db = open_database(path)
    except CorruptIndexError as exc:
        return exc.message.replace(f"the index {path} ", "").replace(f"{path} ", "")
    except StoreError as exc:
        low = exc.message.lower()
        # locked by another process, no permission, no sqlite-vec: not the file's content
        if "cannot use the index" not in exc.message or any(
                w in low for w in ("locked", "busy", "readonly", "read-only", "unable to open", "permission")):
            raise
        return f"cannot be used ({exc.message.replace(f'cannot use the index {path}: ', '')})"
    try:
        db.verify()
    except CorruptIndexError as exc:
        return exc.message.replace(f"the index {path} ", "")
    finally:
        db.close()
    return ""


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.broken-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.broken-{stamp}-{n}")
    try:
        path.rename(aside)
        for suffix in ("-wal", "-shm"):  # its journal goes with it: it holds its last commits
            extra = Path(f"{path}{suffix}")
            if extra.exists():
                extra.rename(f"{aside}{suffix}")
    except OSError as exc:
        raise StoreError(f"cannot move the damaged index {path} aside: {exc.strerror}",
                         "move or delete it by hand") from exc
    return aside


def _read_conversations(path: Path) -> tuple[dict[str, list[tuple[Any, ...]]], str]:
    """The rows of the conversation tables that can still be read, and what stopped the rest."""
    rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _TABLES}
    if path.is_dir():
        return rows, ""
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return rows, _why(exc)
    failure = ""
    try:
        with contextlib.suppress(StoreError):
            load_vec(conn)  # (its schema names the vector table's module)
        for table, columns in _TABLES.items():
            try:
                names = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
                if not names:
                    if table == "conversations" and not _has_tables(conn):
                        break  # an empty or foreign file: nothing was saved in it
                    failure = failure or f"no table {table}"
                    continue
                picked = [c if c in names else "NULL" for c in columns]
                for row in conn.execute(f"SELECT {','.join(picked)} FROM {table} ORDER BY id"):
                    rows[table].append(row)
            except apsw.Error as exc:
                failure = failure or _why(exc)
    finally:
        conn.close()
    _drop_incomplete(rows)
    return rows, failure


def _has_tables(conn: apsw.Connection) -> bool:
    return bool(next(iter(conn.execute("SELECT count(*) FROM sqlite_master WHERE name='messages'")))[0])


def _drop_incomplete(rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """Rows whose required values are missing cannot be stored; messages of lost conversations
    keep a placeholder conversation, so no message is dropped."""
    now = time.time()
    rows["conversations"] = [(i, t if t is not None else "recovered conversation", c or now, u or now)
                             for i, t, c, u in rows["conversations"] if i is not None]
    known = {r[0] for r in rows["conversations"]}
    messages = []
    for mid, conv, role, content, sources, created, outcome, invalid, opening in rows["messages"]:
        if mid is None or conv is None or role is None or content is None:
            continue
        if conv not in known:
            rows["conversations"].append((conv, "recovered conversation", created or now, created or now))
            known.add(conv)
        messages.append((mid, conv, role, content, sources or "[]", created or now, outcome or "",
                         invalid or "[]", opening or ""))
    rows["messages"] = messages


def _why(exc: apsw.Error) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())
