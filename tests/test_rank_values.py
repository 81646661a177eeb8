"""The values the learned ranker reads per file, stored at index time: each file's word runs and
its inbound reference counts. They must stay what the query-time reads computed from the chunks
and the edges, after a build, after one-file updates (on both backends), and on an index written
before they were stored."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.retrieval import rank_features, report
from coderag_tui.store import rank_reads, rank_values
from coderag_tui.store.backend import StoreBackend, open_store
from tests.helpers.ranker_repo import REPO, REPORT, count_calls

SETTINGS = Settings(embed=EmbedSettings(enabled=False))
TESTED = {
    **REPO,
    "tests/test_layout.py": "from pkg._layout import compute_span\n\n\ndef test_span():\n"
                            "    assert compute_span([1, 3]) == 2\n",
    "tests/test_arrange.py": "from pkg.arrange import arrange\n\n\ndef test_arrange():\n"
                             "    assert arrange([[1, 2]]) == [1]\n",
    "pkg/strange.py": "# ΣΑΣ final sigma, İstanbul, straße\nNAME_ΣΑΣ = 'x'\n",
    "docs/notes.md": "# Notes\n\nThe legend and the labels of a figure.\n",
}
# one-file updates, each followed by a comparison with a fresh build: a file that stops calling
# another, one that starts, a test file that changes, a new file, a deleted file
UPDATES: list[tuple[str, str | None]] = [
    ("pkg/arrange.py", "def arrange(series):\n    return list(series)\n"),
    ("pkg/plot.py", "from pkg._layout import compute_span, unrelated\n\n\nclass Plotter:\n"
                    "    def draw(self, series):\n        return [compute_span(s) for s in unrelated(series)]\n"),
    ("tests/test_layout.py", "from pkg._layout import unrelated\n\n\ndef test_unrelated():\n"
                             "    assert unrelated(1) == 1\n"),
    ("pkg/extra.py", "from pkg.arrange import arrange\n\n\ndef more(s):\n    return arrange(s)\n"),
    ("tests/test_arrange.py", None),
    ("pkg/arrange.py", "from pkg._layout import compute_span\n\n\ndef arrange(series):\n"
                       "    return [compute_span(s) for s in series]\n"),
]


def stored(db: StoreBackend) -> tuple[dict[str, bytes], dict[str, tuple[int, int]]]:
    """Every file's stored runs and inbound counts, by path."""
    runs = {str(p): zlib.decompress(bytes(b)) for p, b in db.rows(
        "SELECT f.path, r.runs FROM file_runs r JOIN files f ON f.id = r.file_id")}
    inbound = {str(p): (int(r), int(t)) for p, r, t in db.rows(
        "SELECT f.path, i.refs, i.tests FROM file_inbound i JOIN files f ON f.id = i.file_id")}
    return runs, inbound


def computed(db: StoreBackend) -> tuple[dict[str, bytes], dict[str, tuple[int, int]]]:
    """The same values computed at query time from the chunks and the edges."""
    paths = [str(r[0]) for r in db.rows("SELECT path FROM files")]
    texts: dict[str, list[str]] = {}
    for path, _start, _end, text in rank_reads.chunks_of_files(db, paths):
        texts.setdefault(str(path), []).append(str(text))
    runs = {p: b" ".join(sorted(rank_values.word_runs("\n".join(t).lower()))) for p, t in texts.items()}
    inbound = {p: c for p, c in rank_reads.inbound_files(db, paths).items() if c != (0, 0)}
    return runs, inbound


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[Path], StoreBackend]]:
    opened: list[StoreBackend] = []

    def make(root: Path) -> StoreBackend:
        if request.param == "sqlite":
            db = open_store(tmp_path / f"index-{len(opened)}.db")
        else:
            db = open_store(request.getfixturevalue("pg_url"), source=str(root), create=True)
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()


def test_the_stored_runs_and_inbound_counts_follow_one_file_updates_as_a_fresh_build_has_them(
        make_repo: Callable[..., Path], store_at: Callable[[Path], StoreBackend]) -> None:
    root = make_repo(TESTED)
    db = store_at(root)
    Indexer(db, root, SETTINGS).run()
    runs, inbound = stored(db)
    assert (runs, inbound) == computed(db)
    assert inbound["pkg/_layout.py"] == (2, 1) and inbound["pkg/arrange.py"] == (2, 1)
    assert b"\xce\xa3" not in runs["pkg/strange.py"]  # lower-cased as the query-time read: no capital sigma
    for n, (path, text) in enumerate(UPDATES):
        if text is None:
            (root / path).unlink()
        else:
            (root / path).write_text(text)
        Indexer(db, root, SETTINGS).run(only=[path])
        fresh_root = make_repo({p: (root / p).read_text() for p in sorted(_files(root))}, name=f"fresh{n}")
        fresh = store_at(fresh_root)
        Indexer(fresh, fresh_root, SETTINGS).run()
        assert stored(db) == computed(db) == stored(fresh), (path, stored(db)[1], stored(fresh)[1])


def _files(root: Path) -> Iterator[str]:
    for p in root.rglob("*"):
        if p.is_file() and ".git" not in p.parts:
            yield p.relative_to(root).as_posix()


def test_coverage_reads_the_stored_runs_and_no_chunk_text(
        make_repo: Callable[..., Path], store_at: Callable[[Path], StoreBackend],
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(TESTED)
    db = store_at(root)
    Indexer(db, root, SETTINGS).run()
    facts = rank_features.query_facts(REPORT, report.signals(REPORT), 1, False, False)
    paths = ["pkg/plot.py", "pkg/_layout.py", "pkg/strange.py", "docs/notes.md", "pkg/none.py"]
    expected = _coverage_from_text(db, facts, paths)
    reads = count_calls(monkeypatch, rank_reads, "chunks_of_files")
    assert rank_features.coverage(db, facts, paths) == expected
    assert not reads
    assert set(expected) == {"pkg/plot.py", "pkg/_layout.py", "pkg/strange.py", "docs/notes.md"}
    assert expected["pkg/plot.py"][0] > 0


def _coverage_from_text(db: StoreBackend, facts: rank_features.QueryFacts,
                        paths: list[str]) -> dict[str, tuple[float, float]]:
    """Coverage as the ranker computed it from the files' whole text."""
    import math

    from coderag_tui.retrieval import lexical

    df, total = lexical.doc_freqs(db, sorted(facts.words))
    idf = {w: math.log((1 + total) / (1 + n)) for w, n in df.items()}
    texts: dict[str, list[str]] = {}
    for path, _start, _end, text in rank_reads.chunks_of_files(db, paths):
        texts.setdefault(str(path), []).append(str(text))
    whole = sum(idf.values())
    title = [w for w in facts.title_words if w in idf]
    out = {}
    for path, parts in texts.items():
        text = "\n".join(parts).lower()
        held = {w for w in idf if w in text}
        out[path] = (sum(idf[w] for w in held) / whole, sum(1 for w in title if w in held) / len(title))
    return out


def _as_written_before(db: Any) -> None:
    """Make a SQLite index look as one written before the values were stored (schema 15)."""
    db.execute("DROP TABLE file_runs")
    db.execute("DROP TABLE file_inbound")
    db.execute("DELETE FROM meta WHERE key = 'file_runs'")
    db.execute("PRAGMA user_version=15")


def test_an_index_written_before_gets_its_counts_from_the_migration_and_its_runs_from_its_chunks(
        make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(TESTED)
    path = tmp_path / "old.db"
    db = open_store(path)
    Indexer(db, root, SETTINGS).run()
    expected = computed(db)
    _as_written_before(db)
    db.close()
    db = open_store(path)  # migrates
    try:
        assert db.schema_version == 16
        assert stored(db) == ({}, expected[1])
        facts = rank_features.query_facts(REPORT, report.signals(REPORT), 1, False, False)
        paths = ["pkg/plot.py", "pkg/_layout.py", "pkg/strange.py"]
        assert rank_features.coverage(db, facts, paths) == _coverage_from_text(db, facts, paths)
        Indexer(db, root, SETTINGS).run()  # nothing changed: the run fills the runs in
        assert stored(db) == expected
        assert db.get_meta(rank_values.RUNS_META) == "done"
    finally:
        db.close()
