"""The PostgreSQL backend's reads for context composition, answers and the service (status,
outlines, a file's imports and constants, code lines as the chunks hold them): the
`ContextReads` half of `StoreBackend` and the rows `coderag status` and the HTTP server show.
Row shapes are the SQLite backend's (`store/read.py`, `store/retrieval_reads.py`).

PostgreSQL holds no model summaries (they are made over the SQLite index only): the summary
reads answer nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from coderag_tui.models import EdgeRef, IndexCounts, IndexStatus, LanguageCount, UnitRef
from coderag_tui.store.postgres import lookups
from coderag_tui.store.sqlite_backend import bases_of

# the reads below, each turned into one line on a server's failure (store.py's `_one_line`)
READS = ("children", "file_imports", "file_constants", "unit_bases", "file_chunk_texts", "file_hash", "units_at",
         "importers", "file_facts", "file_index_states", "skip_reasons", "status")
MAX_PROBLEMS = 50  # files that failed to parse, listed by `status` (as on SQLite)


class _Base(Protocol):
    url: str

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def _in_scope(self, alias: str = "f") -> str: ...

    def get_meta(self, key: str, default: str = "") -> str: ...

    def counts(self) -> IndexCounts: ...

    @property
    def schema_version(self) -> int: ...


class PostgresReads:
    """Mixed into `PostgresStore` (which gives `_rows`, `get_meta`, `counts`)."""

    def children(self: _Base, unit_id: int) -> list[UnitRef]:
        return lookups.units_where(self._rows, "u.parent_id = %s ORDER BY u.start_line, u.id", (unit_id,))

    def file_imports(self: _Base, path: str) -> list[str]:
        return [str(m) for (m,) in self._rows(
            "SELECT i.module FROM imports i JOIN files f ON f.id = i.file_id WHERE f.path = %s "
            f"AND {self._in_scope('f')} ORDER BY i.line",
            (path,))]

    def file_constants(self: _Base, path: str, limit: int = 20) -> list[str]:
        return [str(n) for (n,) in self._rows(
            "SELECT u.name FROM units u JOIN files f ON f.id = u.file_id WHERE f.path = %s AND u.kind = 'constant' "
            f"AND {self._in_scope('f')} "
            "ORDER BY u.start_line LIMIT %s", (path, limit))]

    def unit_bases(self: _Base, unit_id: int) -> list[str]:
        found = self._rows("SELECT bases FROM units WHERE id = %s", (unit_id,))
        return bases_of(str(found[0][0])) if found and found[0][0] else []

    def summary_texts(self: _Base, units: Sequence[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
        return {}

    def unit_summaries(self: _Base, path: str) -> dict[int, str]:
        return {}

    def file_chunk_texts(self: _Base, path: str) -> list[tuple[int, str]]:
        return [(int(s), str(t)) for s, t in self._rows(
            "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = %s "
            f"AND {self._in_scope('f')} "
            "ORDER BY c.start_line", (path,))]

    def file_hash(self: _Base, path: str) -> str | None:
        found = self._rows(f"SELECT hash FROM files f WHERE path = %s AND {self._in_scope('f')}", (path,))
        return str(found[0][0]) if found else None

    def units_at(self: _Base, path: str, line: int) -> list[UnitRef]:
        return lookups.units_where(self._rows, f"f.path = %s AND {self._in_scope('f')} AND u.start_line <= %s "
                                   "AND u.end_line >= %s "
                                   "ORDER BY (u.end_line - u.start_line), u.id DESC", (path, line, line))

    def importers(self: _Base, path: str) -> list[UnitRef]:
        return lookups.units_where(self._rows, "u.id IN (SELECT e.src FROM edges e JOIN units t ON t.id = e.dst "
                                   f"JOIN files tf ON tf.id = t.file_id WHERE e.kind = 'IMPORTS' AND tf.path = %s "
                                   f"AND {self._in_scope('tf')}) "
                                   "ORDER BY f.path", (path,))

    def file_facts(self: _Base, path: str) -> tuple[str, int, bool] | None:
        found = self._rows(f"SELECT language, lines, has_errors FROM files f WHERE path = %s "
                           f"AND {self._in_scope('f')}", (path,))
        return (str(found[0][0]), int(found[0][1]), bool(found[0][2])) if found else None

    def file_index_states(self: _Base) -> dict[str, tuple[str, int, int]]:
        return {str(p): (str(lang), int(c), int(v)) for p, lang, c, v in self._rows(
            "SELECT f.path, f.language, count(c.id), count(c.id) FILTER (WHERE EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.hash = c.hash AND v.model = %s)) FROM files f LEFT JOIN chunks c ON c.file_id = f.id "
            f"WHERE {self._in_scope('f')} GROUP BY f.id", (self.get_meta("embed_model"),))}

    def skip_reasons(self: _Base) -> dict[str, str]:
        return {str(p): str(r) for p, r in self._rows(f"SELECT path, reason FROM skips s WHERE {self._in_scope('s')}")}

    def status(self: _Base, repo_root: str) -> IndexStatus:
        units = dict(self._rows("SELECT f.language, count(*) FROM units u JOIN files f ON f.id = u.file_id "
                                f"WHERE u.kind <> 'file' AND {self._in_scope('f')} GROUP BY f.language"))
        chunks = dict(self._rows("SELECT f.language, count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                                 f"WHERE {self._in_scope('f')} GROUP BY f.language"))
        langs = tuple(LanguageCount(str(lang), int(n), int(units.get(lang, 0)), int(chunks.get(lang, 0)))
                      for lang, n in self._rows(f"SELECT language, count(*) FROM files f WHERE {self._in_scope('f')} GROUP BY language "
                                                "ORDER BY count(*) DESC, language"))
        skips = {str(r): int(n) for r, n in self._rows(
            f"SELECT split_part(reason, ':', 1) AS r, count(*) FROM skips s WHERE {self._in_scope('s')} "
            "GROUP BY r ORDER BY r")}
        problems = tuple((str(p), str(r)) for p, r in self._rows(
            f"SELECT path, reason FROM skips s WHERE {self._in_scope('s')} AND (reason = 'error' "
            "OR reason LIKE 'error:%%' OR reason LIKE 'partial:%%') ORDER BY path LIMIT %s", (MAX_PROBLEMS,)))
        orphans = self._rows("SELECT e.src, e.name, e.line, e.orphan, e.kind FROM edges e JOIN files f ON f.id = e.src_file "
                             f"WHERE e.orphan <> '' AND e.dst IS NULL AND {self._in_scope('f')} "
                             "ORDER BY e.src_file, e.line LIMIT %s", (MAX_PROBLEMS,))
        sources = lookups.get_units(self._rows, [int(r[0]) for r in orphans])
        facts = self._rows(f"SELECT (SELECT count(*) FROM edges e JOIN files f ON f.id = e.src_file WHERE {self._in_scope('f')}), "
                           f"(SELECT max(indexed_at) FROM files f WHERE {self._in_scope('f')}), "
                           "pg_database_size(current_database())")[0]
        n = self.counts()
        return IndexStatus(
            repo_root=repo_root, db_path=self.url, schema_version=self.schema_version, files=n.files,
            units=n.units, chunks=n.chunks, edges=int(facts[0]), vectors=n.vectors,
            embed_model=self.get_meta("embed_model"), languages=langs, skips=skips, errors=n.errors,
            index_bytes=int(facts[2] or 0), last_update=float(facts[1] or 0),
            orphaned=tuple(EdgeRef(str(kind), None, f"{name} (was {orphan})", int(line), source=sources.get(int(src)))
                           for src, name, line, orphan, kind in orphans),
            problems=problems)
