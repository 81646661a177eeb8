"""The tables of one repository on PostgreSQL: a schema of its own holding what one SQLite index
file holds, with the same tables, columns and meanings, so the store's queries (`store/*.py`) run
on both backends. A connection reads one repository by putting its schema first on the
`search_path`; the `public` schema holds the database's list of repositories (`repos`) and the
pgvector extension.

Columns keep SQLite's types where the queries depend on them: flags are integers (0/1), not
booleans; times are double precision. What differs is below the queries: keyword rows are BM25
postings (keywords.py) instead of FTS5, the descriptions' keyword rows a tsvector, vectors a
pgvector column with an HNSW index in the same table as their hash.

REPO_MIGRATIONS are numbered in this dialect (append only); a repository's version is in its own
`meta('schema_version')`.
"""

from __future__ import annotations

SCHEMA_PREFIX = "coderag_repo_"


def schema_name(repo_id: int) -> str:
    """The schema of a repository: built from its integer id only (no text reaches the SQL)."""
    return f"{SCHEMA_PREFIX}{int(repo_id)}"


REPO_MIGRATIONS: list[str] = [
    # 1: what SQLite's migrations 1-14 make, in PostgreSQL's dialect
    """
    CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE files(
        id bigserial PRIMARY KEY,
        path text NOT NULL UNIQUE,
        language text NOT NULL,
        hash text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        lines integer NOT NULL DEFAULT 0,
        structured integer NOT NULL DEFAULT 0,
        has_errors integer NOT NULL DEFAULT 0,
        error text NOT NULL DEFAULT '',
        indexed_at double precision NOT NULL
    );
    CREATE TABLE units(
        id bigint PRIMARY KEY,
        file_id bigint NOT NULL,
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
        is_test integer NOT NULL DEFAULT 0
    );
    CREATE INDEX units_parent ON units(parent_id);
    CREATE INDEX units_name_exact ON units(name);
    CREATE INDEX units_name ON units(lower(name));
    CREATE INDEX units_name_c ON units((lower(name) COLLATE "C"));
    CREATE INDEX units_qualname ON units(lower(qualname));
    CREATE INDEX units_qualname_exact ON units(qualname);
    CREATE INDEX units_file_kind ON units(file_id, kind);
    CREATE INDEX units_file_span ON units(file_id, start_line, end_line);
    CREATE TABLE imports(
        file_id bigint NOT NULL,
        module text NOT NULL,
        names text NOT NULL DEFAULT '[]',
        line integer NOT NULL
    );
    CREATE INDEX imports_file ON imports(file_id);
    -- kw_*: the chunk's keyword row, words split and lower-cased by the writer (keywords.py)
    CREATE TABLE chunks(
        id bigint PRIMARY KEY,
        file_id bigint NOT NULL,
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
        kw_code text NOT NULL DEFAULT ''
    );
    CREATE INDEX chunks_file ON chunks(file_id);
    CREATE INDEX chunks_unit ON chunks(unit_id);
    CREATE INDEX chunks_hash ON chunks(hash);
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
    CREATE INDEX edges_orphan ON edges(src_file, line) WHERE orphan <> '' AND dst IS NULL;
    CREATE INDEX edges_bases ON edges(kind, src_file, receiver, name, src, dst)
        WHERE kind IN ('INHERITS', 'IMPLEMENTS');
    CREATE TABLE skips(
        path text PRIMARY KEY, reason text NOT NULL,
        size bigint NOT NULL DEFAULT -1, mtime_ns bigint NOT NULL DEFAULT -1
    );
    -- one vector per chunk hash (or embedding document key); the column takes the model's
    -- dimension when the first vectors are written (store.py: ensure_model_table)
    CREATE TABLE vectors(
        id bigserial PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        model text NOT NULL,
        embedding vector NOT NULL
    );
    CREATE TABLE conversations(
        id bigserial PRIMARY KEY,
        title text NOT NULL,
        created double precision NOT NULL,
        updated double precision NOT NULL,
        owner text NOT NULL DEFAULT ''
    );
    CREATE TABLE messages(
        id bigserial PRIMARY KEY,
        conversation_id bigint NOT NULL,
        role text NOT NULL,
        content text NOT NULL,
        sources text NOT NULL DEFAULT '[]',
        created double precision NOT NULL,
        outcome text NOT NULL DEFAULT '',
        invalid text NOT NULL DEFAULT '[]',
        opening text NOT NULL DEFAULT ''
    );
    CREATE INDEX messages_conversation ON messages(conversation_id);
    CREATE TABLE summaries(
        unit_id bigint PRIMARY KEY,
        text text NOT NULL,
        model text NOT NULL DEFAULT ''
    );
    CREATE TABLE answer_cache(
        id bigserial PRIMARY KEY,
        model text NOT NULL,
        question text NOT NULL,
        norm text NOT NULL,
        embed_model text NOT NULL DEFAULT '',
        vector bytea,
        answer text NOT NULL,
        sources text NOT NULL DEFAULT '[]',
        invalid text NOT NULL DEFAULT '[]',
        cited text NOT NULL DEFAULT '[]',
        created double precision NOT NULL
    );
    CREATE INDEX answer_cache_model ON answer_cache(model, norm);
    CREATE TABLE profiles(
        unit_id bigint PRIMARY KEY,
        file_id bigint NOT NULL,
        role text NOT NULL,
        fan_in integer NOT NULL DEFAULT 0,
        fan_out integer NOT NULL DEFAULT 0,
        data text NOT NULL DEFAULT '{}',
        text text NOT NULL DEFAULT ''
    );
    CREATE INDEX profiles_file ON profiles(file_id);
    CREATE TABLE unit_summaries(
        key text PRIMARY KEY,
        path text NOT NULL,
        kind text NOT NULL,
        qualname text NOT NULL,
        text text NOT NULL,
        model text NOT NULL,
        prompt_version text NOT NULL,
        code_hash text NOT NULL,
        child_hash text NOT NULL,
        stale integer NOT NULL DEFAULT 0,
        created double precision NOT NULL,
        seconds double precision NOT NULL DEFAULT 0
    );
    CREATE INDEX unit_summaries_path ON unit_summaries(path);
    CREATE TABLE embed_docs(
        key text PRIMARY KEY,
        chunk_hash text NOT NULL,
        about text NOT NULL,
        current integer NOT NULL DEFAULT 1
    );
    CREATE INDEX embed_docs_chunk ON embed_docs(chunk_hash);
    -- the keyword rows of descriptions (SQLite: descriptions_fts), one per unit
    CREATE TABLE descriptions_kw(
        unit_id bigint PRIMARY KEY,
        words tsvector NOT NULL
    );
    CREATE INDEX descriptions_kw_words ON descriptions_kw USING gin(words);
    -- keyword search: BM25 impacts in postings ordered by impact, and each word's chunk count
    CREATE TABLE keyword_postings(term text NOT NULL, impact real NOT NULL, chunk_id bigint NOT NULL);
    CREATE INDEX keyword_postings_term ON keyword_postings(term, impact DESC, chunk_id);
    CREATE INDEX keyword_postings_chunk ON keyword_postings(chunk_id);
    CREATE TABLE keyword_df(word text PRIMARY KEY, ndoc integer NOT NULL);
    """,
    # 2: no B-tree over text a repository or a user sets without bound (a path of 3,000 bytes, an
    # import of a long string, a pasted question): PostgreSQL refuses a B-tree row over 2,704
    # bytes, and one such row failed a whole index run. Equality finds them through hash
    # indexes; a path stays unique through its digest.
    """
    ALTER TABLE files DROP CONSTRAINT files_path_key;
    CREATE UNIQUE INDEX files_path_digest ON files (md5(path));
    CREATE INDEX files_path ON files USING hash (path);
    ALTER TABLE skips DROP CONSTRAINT skips_pkey;
    CREATE UNIQUE INDEX skips_path_digest ON skips (md5(path));
    DROP INDEX units_qualname;
    CREATE INDEX units_qualname ON units USING hash (lower(qualname));
    DROP INDEX units_qualname_exact;
    CREATE INDEX units_qualname_exact ON units USING hash (qualname);
    DROP INDEX edges_name;
    CREATE INDEX edges_name ON edges USING hash (name);
    DROP INDEX answer_cache_model;
    CREATE INDEX answer_cache_model ON answer_cache(model);
    CREATE INDEX answer_cache_norm ON answer_cache USING hash (norm);
    DROP INDEX unit_summaries_path;
    CREATE INDEX unit_summaries_path ON unit_summaries USING hash (path);
    ALTER TABLE unit_summaries DROP CONSTRAINT unit_summaries_pkey;
    CREATE UNIQUE INDEX unit_summaries_key_digest ON unit_summaries (md5(key));
    CREATE INDEX unit_summaries_key ON unit_summaries USING hash (key);
    """,
    # 3: keyword words compare byte by byte: they are only ever matched whole, and the
    # database's locale order (strcoll, without abbreviated keys) made the postings' B-tree
    # (its build after a bulk load, each insert of an update) and keyword_df's several times
    # dearer. The tables keep their rows; their indexes are built again.
    """
    ALTER TABLE keyword_postings ALTER COLUMN term TYPE text COLLATE "C";
    ALTER TABLE keyword_df ALTER COLUMN word TYPE text COLLATE "C";
    """,
    # 4: what the learned ranker read per candidate file at query time, stored (rank_values.py):
    # each file's distinct word runs (written with its chunks; the files indexed before get theirs
    # on the next index run: `file_runs` pending) and its inbound reference counts (counted here)
    """
    CREATE TABLE IF NOT EXISTS file_runs(file_id bigint PRIMARY KEY, runs bytea NOT NULL);
    CREATE TABLE IF NOT EXISTS file_inbound(file_id bigint PRIMARY KEY, refs integer NOT NULL, tests integer NOT NULL);
    DELETE FROM file_inbound;
    INSERT INTO file_inbound(file_id, refs, tests)
        SELECT * FROM (
            SELECT u.file_id AS file_id,
                count(DISTINCT CASE WHEN e.kind IN ('CALLS', 'IMPORTS', 'INHERITS') THEN e.src_file END) AS refs,
                count(DISTINCT CASE WHEN e.kind = 'TESTS' THEN e.src_file END) AS tests
            FROM units u JOIN edges e ON e.dst = u.id
            WHERE e.src_file <> u.file_id AND e.dst IS NOT NULL GROUP BY u.file_id) c
        WHERE refs > 0 OR tests > 0;
    INSERT INTO meta(key, value) VALUES('file_runs', 'pending')
        ON CONFLICT (key) DO UPDATE SET value = excluded.value;
    """,
]

REPO_SCHEMA_VERSION = len(REPO_MIGRATIONS)
