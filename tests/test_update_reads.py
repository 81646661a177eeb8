"""A one-file update reads what the change touches, not whole tables: at 500,000 chunks each
pass over every profile, edge or unit cost a PostgreSQL update 0.2-0.5 s. Checked on SQLite's
own query plans of every statement an update runs (a watcher's update: the process has done
one before, and updates another repository in between), so a new statement that scans a large
table fails here, not in a bench; and it rewrites no row it leaves as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.store.backend import open_store
from coderag_tui.store.sqlite_backend import SqliteStore

# one row per file: reading these whole is part of an update (the files and skips tables)
SMALL = ("files", "skips", "meta")
FILES = {
    "shop/money.py": '"""Money helpers."""\n\n\ndef parse_amount(text):\n    return round(float(text), 2)\n',
    "shop/cart.py": "from shop.money import parse_amount\n\n\nclass Cart:\n    def add(self, text):\n"
                    "        return parse_amount(text)\n",
    "shop/report.py": "from shop.cart import Cart\n\n\ndef report():\n    return Cart().add('1')\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_add():\n    assert Cart().add('2') == 2\n",
}


def test_a_one_file_update_scans_no_large_table(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "assets").mkdir()
    (root / "assets/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)  # a skipped file
    settings = Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))
    db = open_store(tmp_path / "index.db")
    assert isinstance(db, SqliteStore)
    try:
        Indexer(db, root, settings).run()
        # another repository updated by the same process in between (a workspace's watcher)
        other_root = tmp_path / "other"
        (other_root / "lib").mkdir(parents=True)
        for name in "abc":  # (an update of one file of three: an incremental resolve)
            (other_root / f"lib/{name}.py").write_text(f"def {name}():\n    return 1\n")
        other = open_store(tmp_path / "other.db")
        seen: list[str] = []
        for n in range(2):
            Indexer(other, other_root, settings).run()
            (other_root / "lib/a.py").write_text(f"def a():\n    return {n}\n")
            Indexer(other, other_root, settings).run(only=["lib/a.py"])
            (root / "shop/cart.py").write_text(FILES["shop/cart.py"] + f"\n\ndef extra{n}():\n    return Cart()\n")
            seen.clear()
            db.conn.exec_trace = lambda _cursor, sql, _bindings: seen.append(sql) or True
            try:
                summary = Indexer(db, root, settings).run(only=["shop/cart.py"])
            finally:
                db.conn.exec_trace = None
            assert summary.files_indexed == 1
        tables = {str(r[0]) for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        scans = {}
        for sql in dict.fromkeys(seen):
            if not sql.lstrip().upper().startswith(("SELECT", "WITH", "DELETE", "UPDATE", "INSERT")) or \
                    sql.rstrip().upper().endswith("LIMIT 1"):  # (stops at the first row)
                continue
            plan = [str(r[3]) for r in db.conn.execute("EXPLAIN QUERY PLAN " + sql, [None] * sql.count("?"))]
            # a full-text table's "SCAN ... VIRTUAL TABLE INDEX 0:=" is a lookup by rowid
            whole = [step for step in plan if step.startswith("SCAN ") and step.split()[1] in tables
                     and step.split()[1] not in SMALL and not step.rstrip().endswith(":=")]
            if whole:
                scans[" ".join(sql.split())[:160]] = whole
        assert not scans, "\n".join(f"{k}: {v}" for k, v in scans.items())
        # and writes no row it leaves as it was: the skips (thousands in a large repository)
        assert not [sql for sql in seen if re.search(r"\b(DELETE FROM|INSERT INTO) skips\b", sql)]
        assert len(seen) > 50  # (the trace saw the update's statements)
        other.close()
    finally:
        db.close()


def test_an_update_rewrites_each_edge_into_the_changed_file_once_each_way(tmp_path: Path) -> None:
    """The edges from other files into a changed file's definitions lose their target and get
    the new one: two row writes each (each a new row version with an entry in every index of
    edges on PostgreSQL), not one per column touched."""
    import apsw

    root = tmp_path / "repo"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    settings = Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))
    db = open_store(tmp_path / "index.db")
    assert isinstance(db, SqliteStore)
    try:
        Indexer(db, root, settings).run()
        (root / "shop/cart.py").write_text(FILES["shop/cart.py"] + "\n\ndef extra():\n    return Cart()\n")
        writes: dict[int, int] = {}

        def seen(op: int, _db: str, table: str, rowid: int) -> None:
            if table == "edges" and op == apsw.SQLITE_UPDATE:
                writes[rowid] = writes.get(rowid, 0) + 1

        db.conn.set_update_hook(seen)
        try:
            Indexer(db, root, settings).run(only=["shop/cart.py"])
        finally:
            db.conn.set_update_hook(None)
        inbound = {int(r[0]) for r in db.rows(
            "SELECT e.id FROM edges e JOIN units u ON u.id=e.dst JOIN files f ON f.id=u.file_id "
            "WHERE f.path='shop/cart.py' AND e.src_file<>f.id AND u.kind<>'file' AND e.kind='CALLS'")}
        assert inbound and inbound <= set(writes)  # (the calls of report.py and the test, re-pointed)
        assert max(writes.values()) <= 2, writes
    finally:
        db.close()


def test_postgres_rewrites_a_few_hundred_rows_without_reading_the_table(pg_url: str, tmp_path: Path,
                                                                         request: pytest.FixtureRequest) -> None:
    """Re-pointing the edges into a changed file (hundreds in a much-used one) goes through a
    scratch table: the UPDATE must find them by id, not hash the whole edges table."""
    db = open_store(request.getfixturevalue("pg_url"), source=str(tmp_path), create=True)
    try:
        with db.transaction():
            db.insert_rows("edges", ("id", "src", "src_file", "dst", "kind", "name"),
                           [(i, i, i // 10, None, "CALLS", f"f{i % 97}") for i in range(1, 60_001)])
        db.execute("ANALYZE edges")
        updates = [(i + 1, i) for i in range(1000, 1700)]  # (dst, id): more than are sent one by one
        with db.transaction():
            before = db.scalar("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid='edges'::regclass")
            db.update_rows("edges", ("dst",), "id", updates)
            after = db.scalar("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid='edges'::regclass")
        assert after == before
        assert db.rows("SELECT id, dst FROM edges WHERE dst IS NOT NULL ORDER BY id") == [(i, d) for d, i in updates]
    finally:
        db.close()
