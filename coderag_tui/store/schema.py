"""Numbered schema migrations. Append only: never edit a migration that has shipped."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: files, units, chunks, keywords, edges, skips, vectors map, conversations, summaries
    """
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files(
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        language TEXT NOT NULL,
        hash TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        lines INTEGER NOT NULL DEFAULT 0,
        structured INTEGER NOT NULL DEFAULT 0,
        has_errors INTEGER NOT NULL DEFAULT 0,
        error TEXT NOT NULL DEFAULT '',
        indexed_at REAL NOT NULL
    );
    CREATE TABLE units(
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL,
        parent_id INTEGER,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        qualname TEXT NOT NULL,
        signature TEXT NOT NULL DEFAULT '',
        params TEXT NOT NULL DEFAULT '[]',
        return_type TEXT NOT NULL DEFAULT '',
        decorators TEXT NOT NULL DEFAULT '[]',
        docstring TEXT NOT NULL DEFAULT '',
        bases TEXT NOT NULL DEFAULT '[]',
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        is_test INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX units_file ON units(file_id);
    CREATE INDEX units_parent ON units(parent_id);
    CREATE INDEX units_name ON units(name COLLATE NOCASE);
    CREATE INDEX units_qualname ON units(qualname COLLATE NOCASE);
    CREATE TABLE imports(
        file_id INTEGER NOT NULL,
        module TEXT NOT NULL,
        names TEXT NOT NULL DEFAULT '[]',
        line INTEGER NOT NULL
    );
    CREATE INDEX imports_file ON imports(file_id);
    CREATE TABLE chunks(
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL,
        unit_id INTEGER,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        node_kinds TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL DEFAULT '',
        hash TEXT NOT NULL,
        header TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL
    );
    CREATE INDEX chunks_file ON chunks(file_id);
    CREATE INDEX chunks_unit ON chunks(unit_id);
    CREATE INDEX chunks_hash ON chunks(hash);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        names, path, signature, doc, code,
        content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TABLE edges(
        id INTEGER PRIMARY KEY,
        src INTEGER NOT NULL,
        src_file INTEGER NOT NULL,
        dst INTEGER,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        receiver TEXT NOT NULL DEFAULT '',
        line INTEGER NOT NULL DEFAULT 0,
        argc INTEGER NOT NULL DEFAULT -1,
        orphan TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX edges_src ON edges(src, kind);
    CREATE INDEX edges_src_file ON edges(src_file);
    CREATE INDEX edges_dst ON edges(dst, kind);
    CREATE INDEX edges_name ON edges(name, kind);
    CREATE TABLE skips(
        path TEXT PRIMARY KEY, reason TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT -1, mtime_ns INTEGER NOT NULL DEFAULT -1
    );
    CREATE TABLE vectors(
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        model TEXT NOT NULL
    );
    CREATE TABLE conversations(
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL
    );
    CREATE TABLE messages(
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        sources TEXT NOT NULL DEFAULT '[]',
        created REAL NOT NULL
    );
    CREATE INDEX messages_conversation ON messages(conversation_id);
    CREATE TABLE summaries(
        unit_id INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT ''
    );
    """,
    # 2: exact-name lookups (graph resolution) cannot use the NOCASE index
    """
    CREATE INDEX units_name_exact ON units(name);
    CREATE INDEX units_file_kind ON units(file_id, kind);
    """,
    # 3: the units inside a line range of a file (search points chunk matches at inner units);
    # units(file_id) alone is then a prefix of two other indexes: one index less to write
    """
    CREATE INDEX units_file_span ON units(file_id, start_line, end_line);
    DROP INDEX units_file;
    """,
    # 4: vector ids are never reused (an in-memory copy of the vectors follows the index by id)
    """
    CREATE TABLE vectors_new(
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        hash TEXT NOT NULL UNIQUE,
        model TEXT NOT NULL
    );
    INSERT INTO vectors_new(id, hash, model) SELECT id, hash, model FROM vectors;
    DROP TABLE vectors;
    ALTER TABLE vectors_new RENAME TO vectors;
    """,
    # 5: orphaned calls (listed by status and after every watcher batch) without scanning edges
    """
    CREATE INDEX edges_orphan ON edges(src_file, line) WHERE orphan<>'' AND dst IS NULL;
    """,
    # 6: incremental graph updates read the base-class edges from a small covering index instead
    # of scanning every edge (an INHERITS edge's receiver holds its base's name), and keep the repository's path tables between batches while the
    # set of files stays the same: any insert, delete or rename of a file gives `files_generation`
    # a new random value (random, not a counter: a rolled-back change must not be able to hand
    # the same value to a different set of files)
    """
    UPDATE edges SET receiver = coderag_base_name(name) WHERE kind IN ('INHERITS','IMPLEMENTS');
    CREATE INDEX edges_bases ON edges(kind, src_file, receiver, name, src, dst)
        WHERE kind IN ('INHERITS','IMPLEMENTS');
    INSERT OR REPLACE INTO meta(key, value) VALUES('files_generation', lower(hex(randomblob(8))));
    CREATE TRIGGER files_generation_insert AFTER INSERT ON files BEGIN
        UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'files_generation'; END;
    CREATE TRIGGER files_generation_delete AFTER DELETE ON files BEGIN
        UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'files_generation'; END;
    CREATE TRIGGER files_generation_path AFTER UPDATE OF path ON files BEGIN
        UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'files_generation'; END;
    """,
    # 7: the set of files is marked changed by the code that adds or removes files, once per file
    # (migration 6's triggers did it row by row inside every INSERT: 3 s of a Django build)
    """
    DROP TRIGGER IF EXISTS files_generation_insert;
    DROP TRIGGER IF EXISTS files_generation_delete;
    DROP TRIGGER IF EXISTS files_generation_path;
    """,
    # 8: edges.dst is only ever searched for a target (`dst=?`, `dst IN`, joins, `IS NOT NULL`):
    # an index of the resolved edges alone is ~40% smaller, and a fresh build, which creates it
    # last on one core, sorts 0.13-0.15 s instead of 0.21-0.33 s (Django)
    """
    DROP INDEX IF EXISTS edges_dst;
    CREATE INDEX edges_dst ON edges(dst, kind) WHERE dst IS NOT NULL;
    """,
    # 9: an answer keeps how it ended ('' complete, 'stopped' by the user, else the error line) and
    # the citations it made that were flagged, so a reopened conversation shows what was shown
    """
    ALTER TABLE messages ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN invalid TEXT NOT NULL DEFAULT '[]';
    """,
    # 10: answers kept for near-identical questions, with the fingerprints of the code they cited
    # (an entry whose cited code changed is never served)
    """
    CREATE TABLE IF NOT EXISTS answer_cache(
        id INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        question TEXT NOT NULL,
        norm TEXT NOT NULL,
        embed_model TEXT NOT NULL DEFAULT '',
        vector BLOB,
        answer TEXT NOT NULL,
        sources TEXT NOT NULL DEFAULT '[]',
        invalid TEXT NOT NULL DEFAULT '[]',
        cited TEXT NOT NULL DEFAULT '[]',
        created REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS answer_cache_model ON answer_cache(model, norm);
    """,
    # 11: descriptions. Profiles (role, connectivity, outline; computed from the graph) per unit,
    # rewritten with their file. Model summaries are keyed by path, kind and qualname, not by unit
    # id: a re-indexed file gets new unit ids, and its unchanged units keep their summaries. One
    # keyword table over both, a row per unit (rowid = unit id) that has words to add.
    """
    CREATE TABLE IF NOT EXISTS profiles(
        unit_id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL,
        role TEXT NOT NULL,
        fan_in INTEGER NOT NULL DEFAULT 0,
        fan_out INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL DEFAULT '{}',
        text TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX IF NOT EXISTS profiles_file ON profiles(file_id);
    CREATE TABLE IF NOT EXISTS unit_summaries(
        key TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        kind TEXT NOT NULL,
        qualname TEXT NOT NULL,
        text TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_version TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        child_hash TEXT NOT NULL,
        stale INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL,
        seconds REAL NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS unit_summaries_path ON unit_summaries(path);
    CREATE VIRTUAL TABLE IF NOT EXISTS descriptions_fts USING fts5(
        text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
    );
    """,
    # 12: embedding documents with a summary. A chunk whose unit has a summary is embedded as its
    # header, the summary and its code, under the document's hash (`key`, the vector's hash); the
    # others under their chunk hash as before. A replaced document's row stays (current=0), and
    # search keeps using its vector, until the new document has one.
    """
    CREATE TABLE IF NOT EXISTS embed_docs(
        key TEXT PRIMARY KEY,
        chunk_hash TEXT NOT NULL,
        about TEXT NOT NULL,
        current INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX IF NOT EXISTS embed_docs_chunk ON embed_docs(chunk_hash);
    """,
    # 13: an answer keeps its opening section (the units and the call path coderag rendered from
    # the index above the model's text, as JSON), so a reopened or exported conversation shows it
    """
    ALTER TABLE messages ADD COLUMN opening TEXT NOT NULL DEFAULT '';
    """,
    # 14: a conversation belongs to whoever started it on a server (a digest of their token; ''
    # for one made on this machine): nobody else may read it back or continue it
    """
    ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    """,
    # 15: the edges into a unit name their source file in the index: the learned ranker counts the
    # distinct files that refer to each of ~140 candidate files (~60,000 edges at 200,000 chunks)
    # from the index alone (18 ms) instead of a table row per edge (55 ms)
    """
    DROP INDEX IF EXISTS edges_dst;
    CREATE INDEX edges_dst ON edges(dst, kind, src_file) WHERE dst IS NOT NULL;
    """,
    # 16: what the learned ranker read per candidate file at query time, stored (rank_values.py):
    # each file's distinct word runs (written with its chunks; the files indexed before get theirs
    # on the next index run: `file_runs` pending) and its inbound reference counts (counted here)
    """
    CREATE TABLE IF NOT EXISTS file_runs(file_id INTEGER PRIMARY KEY, runs BLOB NOT NULL);
    CREATE TABLE IF NOT EXISTS file_inbound(
        file_id INTEGER PRIMARY KEY, refs INTEGER NOT NULL, tests INTEGER NOT NULL
    );
    DELETE FROM file_inbound;
    INSERT INTO file_inbound(file_id, refs, tests)
        SELECT * FROM (
            SELECT u.file_id AS file_id,
                count(DISTINCT CASE WHEN e.kind IN ('CALLS', 'IMPORTS', 'INHERITS') THEN e.src_file END) AS refs,
                count(DISTINCT CASE WHEN e.kind = 'TESTS' THEN e.src_file END) AS tests
            FROM units u JOIN edges e ON e.dst = u.id
            WHERE e.src_file <> u.file_id AND e.dst IS NOT NULL GROUP BY u.file_id)
        WHERE refs > 0 OR tests > 0;
    INSERT OR REPLACE INTO meta(key, value) VALUES('file_runs', 'pending');
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
