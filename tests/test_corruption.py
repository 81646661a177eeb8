"""A damaged index is detected and recovered, through the command line (`python -m coderag_tui`).

Twelve kinds of damage x `status`, `search`, `ask`: one clear line (exit 2, no traceback) that
names `--rebuild`; then `index --rebuild` replaces the file (moved aside, never deleted) and
carries the saved conversations over where the old file can still be read.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from coderag_tui.cli.main import main
from coderag_tui.store.db import open_database
from tests.helpers.files import write_tree

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
FILES: dict[str, str | bytes] = {
    "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n\n\ndef twice(x):\n    return add(x, x)\n',
    "shapes.py": "class Circle:\n    def area(self, r):\n        return 3.14159 * r * r\n",
}
for _i in range(30):  # enough pages that damage to some of them is damage to the tables
    FILES[f"pkg/mod{_i}.py"] = "".join(
        f"def func_{_i}_{j}(value):\n    '''Helper number {j} of module {_i}.'''\n    return add(value, {j})\n\n\n"
        for j in range(12))


def _sql(path: Path, sql: str) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(sql)
    conn.close()


def _overwrite(path: Path, spots: list[tuple[int, int]], seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "r+b") as fh:
        for offset, length in spots:
            fh.seek(offset)
            fh.write(rng.randbytes(length))


def _pages(path: Path) -> None:
    size, page = path.stat().st_size, 4096
    rng = random.Random(7)
    chosen = rng.sample(range(1, size // page), k=max(2, (size // page) // 3))
    _overwrite(path, [(p * page, page) for p in chosen], seed=8)


def _bytes(path: Path) -> None:
    rng = random.Random(9)
    size = path.stat().st_size
    _overwrite(path, [(rng.randrange(100, size), 1) for _ in range(400)], seed=10)


def _foreign(path: Path) -> None:
    path.unlink()
    _sql(path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES('mine')")


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "something").write_text("x")


# (kind, damage, whether the saved conversation can still be read from the damaged file)
DAMAGE: list[tuple[str, Callable[[Path], None], bool | None]] = [
    ("empty file", lambda p: os.truncate(p, 0), False),
    ("truncated to half", lambda p: os.truncate(p, p.stat().st_size // 2), None),
    ("garbage header", lambda p: _overwrite(p, [(0, 100)], seed=1), False),
    ("random pages", _pages, None),
    ("random bytes", _bytes, None),
    ("table units dropped", lambda p: _sql(p, "DROP TABLE units"), True),
    ("table edges dropped", lambda p: _sql(p, "DROP TABLE edges"), True),
    ("keyword table dropped", lambda p: _sql(p, "DROP TABLE chunks_fts"), True),
    ("column dropped", lambda p: _sql(p, "DROP INDEX units_qualname; ALTER TABLE units DROP COLUMN qualname"), True),
    ("schema version zeroed", lambda p: _sql(p, "PRAGMA user_version=0"), True),
    ("another program's database", _foreign, False),
    ("a folder in its place", _folder, False),
]


def _coderag(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    env.pop("CODERAG_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "coderag_tui", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a repository, a sound index of it holding one saved conversation of two messages)."""
    tmp = tmp_path_factory.mktemp("corruption")
    repo = write_tree(tmp / "repo", FILES)
    db_path = tmp / "good.db"
    assert main(["index", str(repo), "--db", str(db_path), "--no-embed"]) == 0
    db = open_database(db_path)
    with db.transaction():
        db.execute("INSERT INTO conversations(id, title, created, updated) VALUES(1, 'about add', 1.0, 2.0)")
        db.execute("INSERT INTO messages(conversation_id, role, content, created) VALUES(1, 'user', 'what is add?', 1.0)")
        db.execute("INSERT INTO messages(conversation_id, role, content, created, outcome, invalid, opening) "
                   "VALUES(1, 'assistant', 'It adds [1].', 2.0, 'stopped', '[\"x.py:9\"]', '{\"units\": []}')")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return repo, db_path


def _one_clear_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1500:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-1500:]
    assert lines[0].startswith("coderag: error: ") and "coderag index --rebuild" in lines[0], lines[0]
    assert "unexpected error" not in lines[0]
    return lines[0]


@pytest.mark.slow  # a `coderag` process and a rebuild for each of the damages
@pytest.mark.parametrize(("kind", "damage", "readable"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damage_is_one_clear_line_and_rebuild_recovers(
        good: tuple[Path, Path], tmp_path: Path, kind: str, damage: Callable[[Path], None],
        readable: bool | None) -> None:
    repo, sound = good
    db = tmp_path / "index.db"
    shutil.copyfile(sound, db)
    damage(db)
    where = ("--repo", str(repo), "--db", str(db))
    for args in (("status",), ("search", "add two numbers"), ("ask", "what does add do?", "--no-stream")):
        line = _one_clear_line(_coderag(*args, *where))
        assert str(db) in line, line

    rebuilt = _coderag("index", "--rebuild", "--no-embed", *where)
    assert rebuilt.returncode == 0, rebuilt.stderr[-1500:]
    note = rebuilt.stderr.strip().splitlines()[-1]
    assert "moved it aside" in note, note
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("index.db.broken-") and not p.name.endswith("-shm")]
    assert aside and (aside[0].is_dir() if kind.startswith("a folder") else aside[0].is_file())
    status = _coderag("status", "--json", *where)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["files"] == len(FILES)
    search = _coderag("search", "add two numbers", *where)
    assert search.returncode == 0 and "calc.py" in search.stdout, search.stderr

    fresh = open_database(db, readonly=True)
    try:
        conversations = fresh.rows("SELECT id, title FROM conversations")
        messages = fresh.rows("SELECT role, content FROM messages ORDER BY id")
        how = fresh.rows("SELECT outcome, invalid, opening FROM messages WHERE role='assistant'")
    finally:
        fresh.close()
    if readable:
        assert conversations == [(1, "about add")], note
        assert messages == [("user", "what is add?"), ("assistant", "It adds [1].")]
        # how the answer ended, its unverified citations and its opening come back with it
        assert how == [("stopped", '["x.py:9"]', '{"units": []}')]
        assert "1 saved conversations (2 messages) carried over" in note
    elif readable is False:
        assert conversations == []
        assert "could not" in note or "0 saved conversations" in note, note
    else:  # depends on where the damage fell: what is said matches what was kept
        assert ("carried over" in note and len(messages) == 2) or "could not all be recovered" in note, note


def test_a_sound_index_is_rebuilt_in_place(good: tuple[Path, Path], tmp_path: Path) -> None:
    repo, sound = good
    db = tmp_path / "index.db"
    shutil.copyfile(sound, db)
    proc = _coderag("index", "--rebuild", "--no-embed", "--repo", str(repo), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "moved" not in proc.stderr
    assert [p.name for p in tmp_path.iterdir() if "broken" in p.name] == []
    fresh = open_database(db, readonly=True)
    try:
        assert fresh.scalar("SELECT count(*) FROM messages") == 2
    finally:
        fresh.close()


def test_a_garbage_journal_is_ignored_and_loses_nothing(good: tuple[Path, Path], tmp_path: Path) -> None:
    """A WAL file that is not one (bad magic and checksums) holds no commit: SQLite ignores it."""
    repo, sound = good
    db = tmp_path / "index.db"
    shutil.copyfile(sound, db)
    Path(f"{db}-wal").write_bytes(random.Random(3).randbytes(40_000))
    proc = _coderag("status", "--repo", str(repo), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    fresh = open_database(db, readonly=True)
    try:
        assert fresh.scalar("SELECT count(*) FROM messages") == 2
    finally:
        fresh.close()
