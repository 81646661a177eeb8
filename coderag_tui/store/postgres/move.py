"""Migration 6 of the `public` schema: the first layout kept every repository's rows in shared
tables (`files.repo_id`); each repository moves into a schema of its own (layout.py), with its
ids, and the shared tables are dropped. Runs once, in the migration's transaction."""

from __future__ import annotations

from typing import Any

import psycopg

from coderag_tui.store.postgres import repos
from coderag_tui.store.postgres.layout import schema_name
from coderag_tui.store.rank_values import all_inbound_counts

_SHARED = ("files", "units", "imports", "chunks", "edges", "skips", "vectors", "keyword_postings", "keyword_df")
_UNIT_COLS = ("id, file_id, parent_id, kind, name, qualname, signature, params, return_type, decorators, "
              "docstring, bases, start_line, end_line")
_CHUNK_COLS = "id, file_id, unit_id, start_line, end_line, node_kinds, scope, hash, header, text, kw_names, kw_meta, kw_code"
_EDGE_COLS = "id, src, src_file, dst, kind, name, receiver, line, argc, orphan"


def move_to_schemas(conn: psycopg.Connection[Any]) -> None:
    """Move every repository of the shared tables into its schema, then drop the shared tables."""
    found = conn.execute("SELECT id, name FROM public.repos ORDER BY id").fetchall()
    for repo_id, name in found:
        has_rows = conn.execute("SELECT 1 FROM public.files WHERE repo_id = %s UNION ALL "
                                "SELECT 1 FROM public.skips WHERE repo_id = %s LIMIT 1", (repo_id, repo_id)).fetchone()
        if not has_rows:
            continue
        if not name:  # a database used without names: the repository gets one
            conn.execute("UPDATE public.repos SET name = %s WHERE id = %s", (f"repo-{int(repo_id)}", repo_id))
        _move(conn, int(repo_id))
    conn.execute("DROP TABLE IF EXISTS " + ", ".join(f"public.{t}" for t in _SHARED) + " CASCADE")
    conn.execute("DROP SEQUENCE IF EXISTS public.unit_ids, public.chunk_ids")
    conn.execute("DELETE FROM public.meta WHERE key <> 'schema_version'")


def _move(conn: psycopg.Connection[Any], repo_id: int) -> None:
    schema = schema_name(repo_id)
    conn.execute(f"CREATE SCHEMA {schema}")
    repos.migrate(conn, repo_id)
    mine = "(SELECT id FROM public.files WHERE repo_id = %s)"
    conn.execute(f"INSERT INTO {schema}.files(id, path, language, hash, size, mtime_ns, lines, structured, has_errors, "
                 "error, indexed_at) SELECT id, path, language, hash, size, mtime_ns, lines, structured::int, "
                 "has_errors::int, error, indexed_at FROM public.files WHERE repo_id = %s", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.units({_UNIT_COLS}, is_test) SELECT {_UNIT_COLS}, is_test::int "
                 f"FROM public.units WHERE file_id IN {mine}", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.imports SELECT file_id, module, names, line FROM public.imports "
                 f"WHERE file_id IN {mine}", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.chunks({_CHUNK_COLS}) SELECT {_CHUNK_COLS} FROM public.chunks "
                 f"WHERE file_id IN {mine}", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.edges({_EDGE_COLS}) SELECT {_EDGE_COLS} FROM public.edges "
                 f"WHERE src_file IN {mine}", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.file_inbound(file_id, refs, tests) {all_inbound_counts(schema + '.')}")
    conn.execute(f"INSERT INTO {schema}.skips SELECT path, reason, size, mtime_ns FROM public.skips "
                 "WHERE repo_id = %s", (repo_id,))
    conn.execute(f"INSERT INTO {schema}.keyword_postings SELECT p.term, p.impact, p.chunk_id "
                 f"FROM public.keyword_postings p JOIN {schema}.chunks c ON c.id = p.chunk_id")
    conn.execute(f"INSERT INTO {schema}.keyword_df SELECT term, count(*) FROM {schema}.keyword_postings GROUP BY term")
    model = conn.execute("SELECT value FROM public.meta WHERE key = 'embed_model'").fetchone()
    moved = conn.execute(
        f"INSERT INTO {schema}.vectors(hash, model, embedding) SELECT DISTINCT ON (v.hash) v.hash, v.model, "
        f"v.embedding FROM public.vectors v WHERE EXISTS (SELECT 1 FROM {schema}.chunks c WHERE c.hash = v.hash) "
        "ORDER BY v.hash").rowcount
    for table in ("files", "edges"):
        conn.execute(f"SELECT setval(pg_get_serial_sequence('{schema}.{table}', 'id'), "
                     f"coalesce((SELECT max(id) FROM {schema}.{table}), 0) + 1, false)")
    meta = {"files_generation": "moved"}
    if moved and model:
        meta.update(embed_model=str(model[0]), embed_dim="384")
        conn.execute(f"ALTER TABLE {schema}.vectors ALTER COLUMN embedding TYPE vector(384)")
        conn.execute(f"CREATE INDEX vectors_hnsw ON {schema}.vectors USING hnsw (embedding vector_cosine_ops)")
    pending = conn.execute("SELECT value FROM public.meta WHERE key = %s",
                           ("resolve_pending" if repo_id == 1 else f"resolve_pending@{repo_id}",)).fetchone()
    if pending:
        meta["resolve_pending"] = str(pending[0])
    last = conn.execute(f"SELECT max(indexed_at) FROM {schema}.files").fetchone()
    if last is not None and last[0] is not None:
        meta["last_update"] = str(last[0])
    for key, value in meta.items():
        conn.execute(f"INSERT INTO {schema}.meta(key, value) VALUES(%s, %s) ON CONFLICT(key) DO UPDATE "
                     "SET value = excluded.value", (key, value))
