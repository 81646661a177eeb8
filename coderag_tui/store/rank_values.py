"""Values the learned ranker reads per candidate file, stored at index time instead of computed
from the whole file or the whole graph at query time:

- `file_runs`: each file's distinct runs of letters and digits (what `rank_features.WordTest`
  builds from the file's joined chunk texts), sorted, joined by spaces and zlib-compressed. Written
  with the file's chunks and deleted with them; a file indexed before the table existed has no row
  and its runs are computed from its chunks when asked (`backfill_runs` fills them in).
- `file_inbound`: per file, how many other files call, import or subclass its units and how many
  test files test them. These depend on the edges of OTHER files: `refresh_inbound` counts them
  again, after the graph is resolved, for the files an update can have changed (every file after a
  full resolve).
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable, Sequence

from coderag_tui.store.backend import StoreBackend

# ASCII letters and digits, and every byte of a non-ASCII character, stay; the rest is a space
RUN_BYTES = bytes(b if chr(b).isalnum() or b >= 0x80 else 0x20 for b in range(256))
RUNS_META = "file_runs"  # "pending": files indexed before the table may lack a row


def word_runs(text: str) -> set[bytes]:
    """The distinct runs of a text's UTF-8 bytes that RUN_BYTES keeps."""
    return set(text.encode("utf-8", "surrogatepass").translate(RUN_BYTES).split())


def runs_blob(texts: Iterable[str]) -> bytes:
    """A file's runs as stored: those of its chunk texts joined by newlines and lower-cased."""
    return zlib.compress(b" ".join(sorted(word_runs("\n".join(texts).lower()))), 1)


def write_runs(db: StoreBackend, file_id: int, texts: Sequence[str], blob: bytes = b"") -> None:
    """Store a file's runs (`blob`, made from `texts` by the parse worker; else made here) from
    its chunk texts (a file without chunks gets no row). Their order does not matter: the texts
    are joined by newlines, which end every run and every context lower() looks at."""
    if not texts:
        return
    if db.backend == "postgresql" and any("\x00" in t for t in texts):
        # PostgreSQL's text holds no NUL: its writer stores U+FFFD instead (postgres/store.py),
        # and the runs must be those of the text a reader gets back
        blob = runs_blob(t.replace("\x00", "\ufffd") for t in texts)
    db.insert_rows("file_runs", ("file_id", "runs"), [(file_id, blob or runs_blob(texts))])


def delete_file_values(db: StoreBackend, file_id: int) -> None:
    db.execute("DELETE FROM file_runs WHERE file_id=?", (file_id,))


def runs_of_files(db: StoreBackend, paths: Sequence[str]) -> dict[str, bytes]:
    """path -> its runs joined by spaces, for the files with chunks; read from the stored rows,
    else from the file's chunks."""
    out = {str(p): zlib.decompress(bytes(b)) for p, b in db.rows_in(
        "SELECT f.path, r.runs FROM files f JOIN file_runs r ON r.file_id = f.id WHERE f.path IN ({marks})",
        list(paths))}
    missing = [p for p in paths if p not in out]
    if missing:
        texts: dict[str, list[str]] = {}
        for path, text in db.rows_in(
                "SELECT f.path, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
                "WHERE f.path IN ({marks}) ORDER BY f.path, c.start_line", missing):
            texts.setdefault(str(path), []).append(str(text))
        out.update((p, zlib.decompress(runs_blob(t))) for p, t in texts.items())
    return out


def backfill_runs(db: StoreBackend, batch: int = 200) -> int:
    """Store the runs of every file that has chunks and no row yet (an index written before
    the table existed), once: the meta mark says whether any may lack one. Returns how many."""
    if db.get_meta(RUNS_META) != "pending":
        return 0
    ids = [int(r[0]) for r in db.rows(
        "SELECT f.id FROM files f WHERE NOT EXISTS (SELECT 1 FROM file_runs r WHERE r.file_id = f.id) "
        "AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id) ORDER BY f.id")]
    for i in range(0, len(ids), batch):
        part = ids[i:i + batch]
        texts: dict[int, list[str]] = {}
        for fid, text in db.rows_in(
                "SELECT file_id, text FROM chunks WHERE file_id IN ({marks}) ORDER BY file_id, start_line", part):
            texts.setdefault(int(fid), []).append(str(text))
        with db.transaction():
            db.insert_rows("file_runs", ("file_id", "runs"), [(f, runs_blob(t)) for f, t in texts.items()])
    with db.transaction():
        db.set_meta(RUNS_META, "done")
    return len(ids)


def inbound_counts(schema: str = "") -> str:
    """(file id, refs, tests) of files: the distinct other files whose edges reach the file's
    units (calls, imports and bases; tests), of the tables in `schema` (`name.`; default: those
    the connection reads). Conditions and the grouping follow."""
    return (f"SELECT u.file_id AS file_id, count(DISTINCT CASE WHEN e.kind IN ('CALLS', 'IMPORTS', 'INHERITS') "
            f"THEN e.src_file END) AS refs, count(DISTINCT CASE WHEN e.kind = 'TESTS' THEN e.src_file END) AS tests "
            f"FROM {schema}units u JOIN {schema}edges e ON e.dst = u.id WHERE e.src_file <> u.file_id "
            f"AND e.dst IS NOT NULL")


def all_inbound_counts(schema: str = "") -> str:
    """Every file's nonzero counts (`inbound_counts`), as rows to insert into file_inbound."""
    return f"SELECT * FROM ({inbound_counts(schema)} GROUP BY u.file_id) c WHERE refs > 0 OR tests > 0"


def refresh_inbound(db: StoreBackend, file_ids: Collection[int] | None) -> None:
    """Count the inbound references of these files again (None: of every file), from the
    resolved graph (call inside the graph's transaction)."""
    if file_ids is None:
        db.execute("DELETE FROM file_inbound")
        db.execute("INSERT INTO file_inbound(file_id, refs, tests) " + all_inbound_counts())
        return
    ids = sorted(file_ids)
    if not ids:
        return
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        db.execute(f"DELETE FROM file_inbound WHERE file_id IN ({','.join('?' * len(part))})", part)
    rows = db.rows_in(inbound_counts() + " AND u.file_id IN ({marks}) GROUP BY u.file_id", ids)
    db.insert_rows("file_inbound", ("file_id", "refs", "tests"),
                   [(int(f), int(r), int(t)) for f, r, t in rows if r or t])


def inbound_files(db: StoreBackend, paths: Sequence[str]) -> dict[str, tuple[int, int]]:
    """path -> (how many other files call, import or subclass its units; how many test files
    test them), for the files that have any."""
    return {str(p): (int(r), int(t)) for p, r, t in db.rows_in(
        "SELECT f.path, i.refs, i.tests FROM files f JOIN file_inbound i ON i.file_id = f.id "
        "WHERE f.path IN ({marks})", list(paths))}
