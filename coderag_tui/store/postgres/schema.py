"""Numbered migrations of a PostgreSQL database's `public` schema (its own dialect and numbering;
append only). Migrations 1-5 made the first layout, where every repository's rows shared one set
of tables; migration 6 moves each repository into a schema of its own (layout.py) and drops them.

The version lives in `public.meta('schema_version')`; migrations run one at a time under an
advisory lock, each in its own transaction.
"""

from __future__ import annotations

from coderag_tui.store.postgres.keywords import POSTINGS_SELECT

MIGRATIONS: list[str] = [
    # 1: files, units, chunks with weighted keyword columns, edges, imports, skips, vectors
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE IF NOT EXISTS meta(key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE files(
        id bigserial PRIMARY KEY,
        path text NOT NULL UNIQUE,
        language text NOT NULL,
        hash text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        lines integer NOT NULL DEFAULT 0,
        structured boolean NOT NULL DEFAULT false,
        has_errors boolean NOT NULL DEFAULT false,
        error text NOT NULL DEFAULT '',
        indexed_at double precision NOT NULL
    );
    CREATE SEQUENCE unit_ids;
    CREATE TABLE units(
        id bigint PRIMARY KEY,
        file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        parent_id bigint,
        kind text NOT NULL,
        name text NOT NULL,
        qualname text NOT NULL,
        signature text NOT NULL DEFAULT '',
        params text NOT NULL DEFAULT '[]',
        return_type text NOT NULL DEFAULT '',
        decorators text NOT NULL DEFAULT '[]',
        docstring text NOT NULL DEFAULT '',
        bases text NOT NULL DEFAULT '[]',
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        is_test boolean NOT NULL DEFAULT false
    );
    CREATE INDEX units_file_span ON units(file_id, start_line, end_line);
    CREATE INDEX units_parent ON units(parent_id);
    CREATE INDEX units_name ON units(name);
    CREATE INDEX units_name_lower ON units(lower(name));
    CREATE INDEX units_qualname ON units(qualname);
    CREATE TABLE imports(
        file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        module text NOT NULL,
        names text NOT NULL DEFAULT '[]',
        line integer NOT NULL
    );
    CREATE INDEX imports_file ON imports(file_id);
    CREATE SEQUENCE chunk_ids;
    -- keyword columns hold words already split and lower-cased by the writer (the parser of
    -- to_tsvector would read `a.b.c` as a host name and `x/y` as a path); weights: names A,
    -- path / signature / docstring B, code C
    CREATE TABLE chunks(
        id bigint PRIMARY KEY,
        file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        unit_id bigint,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        node_kinds text NOT NULL DEFAULT '',
        scope text NOT NULL DEFAULT '',
        hash text NOT NULL,
        header text NOT NULL DEFAULT '',
        text text NOT NULL,
        kw_names text NOT NULL DEFAULT '',
        kw_meta text NOT NULL DEFAULT '',
        kw_code text NOT NULL DEFAULT '',
        keywords tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple'::regconfig, kw_names), 'A') ||
            setweight(to_tsvector('simple'::regconfig, kw_meta), 'B') ||
            setweight(to_tsvector('simple'::regconfig, kw_code), 'C')) STORED
    );
    CREATE INDEX chunks_file ON chunks(file_id);
    CREATE INDEX chunks_hash ON chunks(hash);
    CREATE INDEX chunks_keywords ON chunks USING gin(keywords);
    CREATE TABLE edges(
        id bigserial PRIMARY KEY,
        src bigint NOT NULL,
        src_file bigint NOT NULL,
        dst bigint,
        kind text NOT NULL,
        name text NOT NULL,
        receiver text NOT NULL DEFAULT '',
        line integer NOT NULL DEFAULT 0,
        argc integer NOT NULL DEFAULT -1,
        orphan text NOT NULL DEFAULT ''
    );
    CREATE INDEX edges_src ON edges(src, kind);
    CREATE INDEX edges_src_file ON edges(src_file);
    CREATE INDEX edges_dst ON edges(dst, kind) WHERE dst IS NOT NULL;
    CREATE INDEX edges_name ON edges(name, kind);
    CREATE TABLE skips(
        path text PRIMARY KEY, reason text NOT NULL,
        size bigint NOT NULL DEFAULT -1, mtime_ns bigint NOT NULL DEFAULT -1
    );
    -- one vector per chunk text and model (identical chunks share one); 384 dimensions: the
    -- bundled all-MiniLM-L6-v2
    CREATE TABLE vectors(
        hash text NOT NULL,
        model text NOT NULL,
        embedding vector(384) NOT NULL,
        PRIMARY KEY (hash, model)
    );
    CREATE INDEX vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops);
    """,
    # 2: how many chunks hold each keyword (refreshed after a build): a search leaves out words
    # most chunks hold, whose ranking would read every chunk's keywords
    """
    CREATE TABLE keyword_df(word text PRIMARY KEY, ndoc integer NOT NULL);
    """,
    # 3: several repositories in one database: files (and skips) belong to one, paths are unique
    # per repository; repository 1, named '', holds what a database used without names (or
    # written before this migration) holds. `packages`: what it defines for others to import
    # (JSON, store/postgres/repos.py)
    """
    CREATE TABLE repos(
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        source text NOT NULL DEFAULT '',
        packages text NOT NULL DEFAULT '[]',
        indexed_at double precision NOT NULL DEFAULT 0
    );
    INSERT INTO repos(id, name) VALUES(1, '');
    SELECT setval(pg_get_serial_sequence('repos', 'id'), 1);
    ALTER TABLE files ADD COLUMN repo_id bigint NOT NULL DEFAULT 1 REFERENCES repos(id) ON DELETE CASCADE;
    ALTER TABLE files DROP CONSTRAINT IF EXISTS files_path_key;
    CREATE UNIQUE INDEX files_repo_path ON files(repo_id, path);
    ALTER TABLE skips ADD COLUMN repo_id bigint NOT NULL DEFAULT 1 REFERENCES repos(id) ON DELETE CASCADE;
    ALTER TABLE skips DROP CONSTRAINT IF EXISTS skips_pkey;
    ALTER TABLE skips ADD PRIMARY KEY (repo_id, path);
    """,
    # 4: keywords as BM25 impacts in postings ordered by impact (store/postgres/keywords.py),
    # in place of the tsvector column ranked by ts_rank_cd (no IDF; it read every matching
    # chunk). Chunks already written get theirs here; keyword_df now counts postings
    f"""
    CREATE TABLE keyword_postings(term text NOT NULL, impact real NOT NULL, chunk_id bigint NOT NULL);
    INSERT INTO keyword_postings(term, impact, chunk_id) {POSTINGS_SELECT};
    CREATE INDEX keyword_postings_term ON keyword_postings(term, impact DESC, chunk_id);
    CREATE INDEX keyword_postings_chunk ON keyword_postings(chunk_id);
    ALTER TABLE chunks DROP COLUMN keywords;
    DELETE FROM keyword_df;
    INSERT INTO keyword_df SELECT term, count(*) FROM keyword_postings GROUP BY term;
    """,
    # 5: a name prefix read as a range (find_symbols): ILIKE 'x%' cannot use a B-tree, and a
    # range needs byte order whatever the database's collation
    """
    CREATE INDEX units_name_lower_c ON units ((lower(name) COLLATE "C"));
    """,

    # 6: every repository in a schema of its own (layout.py); done by `move_to_schemas`
    "",
]

MOVE_MIGRATION = 6
SCHEMA_VERSION = len(MIGRATIONS)
