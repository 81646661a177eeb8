"""PostgreSQL's keyword postings as the writer makes them: BM25 impacts computed by the writer
equal the formula evaluated by the server, a bulk build and file-by-file updates leave the same
postings, and keyword words compare byte by byte (a repository made before that is migrated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing.indexer import _BULK_MIN_FILES, Indexer
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.postgres.keywords import MAX_TERM_CHARS, POSTINGS_SELECT
from tests.helpers.files import write_tree

SETTINGS = Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))
LONG = "x" * (MAX_TERM_CHARS + 5)
FILES = {
    "pay/ledger.py": (
        '"""Ledger of payments: every payment, refund and payment fee."""\n\n\n'
        "def payment_total(payments, payment_fee=0):\n"
        '    """The payment total, fees included (payment by payment)."""\n'
        "    return sum(p.amount for p in payments) + payment_fee * len(payments)\n\n\n"
        f"def {LONG}_helper(x):\n    return x + {LONG}_helper(x - 1) if x else 0\n"
    ),
    "pay/über.py": "def grüße(straße):\n    return straße.upper() + 'ÄÖÜ' + straße\n",
    "pay/empty.py": "",
    "docs/notes.md": "# Notes\n\nPayments are summed; the fee is added once per payment.\n",
}

def postings(store: StoreBackend) -> list[tuple[str, float, int]]:
    return sorted((str(t), float(i), int(c)) for t, i, c in store.rows(
        "SELECT term, impact, chunk_id FROM keyword_postings"))


def test_the_writers_postings_are_bm25_as_the_server_computes_it(pg_url: str, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    store = open_store(pg_url, source=str(root), create=True)
    try:
        Indexer(store, root, SETTINGS).run()
        written = postings(store)
        assert written == sorted((str(t), float(i), int(c)) for t, i, c in store.rows(POSTINGS_SELECT))
        terms = {t for t, _, _ in written}
        assert {"payment", "grüße", "straße", "helper"} <= terms and not any(len(t) > MAX_TERM_CHARS for t in terms)
    finally:
        store.close()


def test_a_bulk_build_and_file_by_file_updates_leave_the_same_postings(pg_url: str, tmp_path: Path) -> None:
    files = {f"mod{n}/api_{n}.py": f"def call_{n}(value, shared):\n    '''Call {n} of the shared api.'''\n"
                                   f"    return shared.send(value * {n}, 'word{n % 7}')\n"
             for n in range(_BULK_MIN_FILES + 10)}
    bulk_root = write_tree(tmp_path / "bulk", files)
    bulk = open_store(pg_url, source=str(bulk_root), create=True)
    steps_root = write_tree(tmp_path / "steps", {})
    steps = open_store(pg_url, source=str(steps_root), create=True)
    try:
        Indexer(bulk, bulk_root, SETTINGS).run()  # an empty index, this many files: the bulk path
        assert not bulk.get_meta("deferred_indexes")
        names = sorted(files)
        for part in (names[:1], names[1:20], names[20:]):  # an index that is never empty again
            for name in part:
                (steps_root / name).parent.mkdir(parents=True, exist_ok=True)
                (steps_root / name).write_text(files[name])
            Indexer(steps, steps_root, SETTINGS).run(only=part)
        assert postings(steps) == postings(bulk) != []
        assert bulk.rows("SELECT word, ndoc FROM keyword_df ORDER BY word") == \
            steps.rows("SELECT term, count(*) FROM keyword_postings GROUP BY term ORDER BY term")
    finally:
        bulk.close()
        steps.close()


def _collations(store: StoreBackend) -> set[str]:
    return {str(c) for (c,) in store.rows(
        "SELECT coalesce(collation_name, '') FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND (table_name, column_name) IN (('keyword_postings', 'term'), ('keyword_df', 'word'))")}


def test_keyword_words_compare_byte_by_byte_also_after_migrating(pg_url: str, tmp_path: Path,
                                                                 request: pytest.FixtureRequest) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    store = open_store(pg_url, source=str(root), create=True)
    try:
        assert _collations(store) == {"C"}
        Indexer(store, root, SETTINGS).run()
        before = postings(store)
        with store.transaction():  # as a repository made by version 2 has them
            store.execute('ALTER TABLE keyword_postings ALTER COLUMN term TYPE text COLLATE "default"')
            store.execute('ALTER TABLE keyword_df ALTER COLUMN word TYPE text COLLATE "default"')
            store.set_meta("schema_version", "2")
        assert _collations(store) == {""}
    finally:
        store.close()
    store = open_store(pg_url, source=str(root))
    try:
        assert _collations(store) == {"C"} and store.schema_version >= 3
        assert postings(store) == before
        assert [r[2] for r in store.keyword_rows(["grüße"], 5)] != []
    finally:
        store.close()
