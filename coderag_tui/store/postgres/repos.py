"""Several repositories in one PostgreSQL database (migration 3): the `repos` table, the scope a
store reads in, and imports that resolve into another repository of the database.

Every file belongs to one repository; a store opened on one (`open_store(url, repo=NAME)`)
writes and reads its files only, a view across several (`store.across(names)`) searches them
together and names each unit's repository. Repository 1, named '', is what a database used
without names holds. Calls resolve within their repository (`LINK_*_IN_REPO`); imports of
another repository's package, and the calls through them, are linked by `link_across` and
`set_call_targets` (what to link: workspace/store_links.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from coderag_tui.errors import StoreError
from coderag_tui.models import UnitRef

DEFAULT_REPO_ID = 1  # named '': a database used without repository names
MAX_NAME = 200


@dataclass(frozen=True)
class StoredRepo:
    """A repository of the database: its name (what results show), where it was indexed from
    (a folder or a URL without credentials: for display) and the packages it defines."""

    id: int
    name: str
    source: str
    packages: tuple[dict[str, Any], ...] = ()
    files: int = 0


# indexing/store_build.py's mark, and the commit a clone was indexed at
PER_REPOSITORY_META = frozenset({"resolve_pending", "commit"})


def scope_sql(scope: Sequence[int] | None, alias: str = "f") -> str:
    """A condition on `alias.repo_id` keeping the scope's repositories (ids are the database's own
    integers, formatted as such: no text reaches the SQL). None: every repository."""
    if scope is None:
        return "TRUE"
    return f"{alias}.repo_id IN ({', '.join(str(int(i)) for i in scope) or 'NULL'})"


# a call of the repository resolves to a definition in its own file, else to the repository's
# only one (the SQLite backend's LINK_SAME_FILE / LINK_UNIQUE, kept to one repository)
LINK_SAME_FILE_IN_REPO = (
    "UPDATE edges e SET dst = (SELECT min(u.id) FROM units u WHERE u.file_id = e.src_file "
    "AND u.name = e.name AND u.kind <> 'file') FROM files sf WHERE sf.id = e.src_file AND sf.repo_id = %s "
    "AND e.kind = 'CALLS' AND e.dst IS NULL AND EXISTS (SELECT 1 FROM units u WHERE u.file_id = e.src_file "
    "AND u.name = e.name AND u.kind <> 'file')"
)
LINK_UNIQUE_IN_REPO = (
    "UPDATE edges e SET dst = (SELECT min(u.id) FROM units u JOIN files uf ON uf.id = u.file_id "
    "WHERE uf.repo_id = sf.repo_id AND u.name = e.name AND u.kind <> 'file') FROM files sf "
    "WHERE sf.id = e.src_file AND sf.repo_id = %s AND e.kind = 'CALLS' AND e.dst IS NULL AND "
    "(SELECT count(*) FROM units u JOIN files uf ON uf.id = u.file_id WHERE uf.repo_id = sf.repo_id "
    "AND u.name = e.name AND u.kind <> 'file') = 1"
)


def _row(r: Sequence[Any]) -> StoredRepo:
    try:
        packages = tuple(p for p in json.loads(r[3]) if isinstance(p, dict))
    except (ValueError, TypeError):
        packages = ()
    return StoredRepo(int(r[0]), str(r[1]), str(r[2]), packages, int(r[4]) if len(r) > 4 else 0)


def listing(conn: psycopg.Connection[Any]) -> list[StoredRepo]:
    """The repositories that hold files or have a name, by name."""
    rows = conn.execute(
        "SELECT r.id, r.name, r.source, r.packages, (SELECT count(*) FROM files f WHERE f.repo_id = r.id) "
        "FROM repos r ORDER BY r.name COLLATE \"C\"").fetchall()
    return [_row(r) for r in rows if r[1] or r[4]]


def names(conn: psycopg.Connection[Any]) -> dict[int, str]:
    return {int(i): str(n) for i, n in conn.execute("SELECT id, name FROM repos").fetchall()}


def ids_of(conn: psycopg.Connection[Any], wanted: Iterable[str]) -> list[int]:
    """The ids of the named repositories; an unknown name is one line naming those there are."""
    known = {r.name: r.id for r in listing(conn)}
    out: list[int] = []
    for name in wanted:
        if name not in known:
            there = ", ".join(n for n in known if n) or "none"
            raise StoreError(f"no repository {name!r} in this database (it holds: {there})",
                             "index it first: coderag index PATH --store URL")
        out.append(known[name])
    return out


def _valid(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME or any(ch in name for ch in ",:\x00") or not name.isprintable():
        raise StoreError(f"{name[:60]!r} cannot name a repository",
                         "a name without commas or colons, of at most 200 characters")
    return name


def add(conn: psycopg.Connection[Any], name: str, source: str) -> int:
    """The repository indexed from `source`: the one already holding it, else a new one named
    `name` (`name-2`, ... when another source has it). A database written before repositories had
    names (one nameless repository with files) is adopted by the first one indexed into it."""
    name = _valid(name)
    with conn.transaction():
        conn.execute("LOCK TABLE repos IN SHARE ROW EXCLUSIVE MODE")  # two indexers, one name
        found = conn.execute("SELECT id FROM repos WHERE source = %s AND name <> ''", (source,)).fetchone()
        if found is not None:
            return int(found[0])
        legacy = conn.execute("SELECT count(*) FROM repos WHERE name <> ''").fetchone()
        if legacy == (0,) and conn.execute("SELECT 1 FROM files WHERE repo_id = %s LIMIT 1",
                                           (DEFAULT_REPO_ID,)).fetchone() is not None:
            conn.execute("UPDATE repos SET name = %s, source = %s WHERE id = %s", (name, source, DEFAULT_REPO_ID))
            return DEFAULT_REPO_ID
        taken = {str(n) for (n,) in conn.execute("SELECT name FROM repos").fetchall()}
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        row = conn.execute("INSERT INTO repos(name, source) VALUES(%s, %s) RETURNING id", (unique, source)).fetchone()
        assert row is not None
        return int(row[0])


def set_packages(conn: psycopg.Connection[Any], repo_id: int, packages: Sequence[dict[str, Any]]) -> None:
    conn.execute("UPDATE repos SET packages = %s, indexed_at = %s WHERE id = %s",
                 (json.dumps(list(packages)), time.time(), repo_id))


# an import edge another repository may take: unresolved, or pointing at a file of another
# language or of another repository
_OPEN = ("(e.dst IS NULL OR EXISTS (SELECT 1 FROM units t JOIN files tf ON tf.id = t.file_id "
         "WHERE t.id = e.dst AND (tf.language <> f.language OR tf.repo_id <> f.repo_id)))")


def open_imports(conn: psycopg.Connection[Any]) -> list[tuple[int, str, bool]]:
    """(repository id, module, whether one points somewhere) of every import that names no
    module of its own repository: unresolved, resolved to a file of another language (a template
    folder of the same name), or linked into another repository."""
    return [(int(r), str(m), bool(t)) for r, m, t in conn.execute(
        "SELECT f.repo_id, e.name, bool_or(e.dst IS NOT NULL) FROM edges e JOIN files f ON f.id = e.src_file "
        f"WHERE e.kind = 'IMPORTS' AND {_OPEN} GROUP BY 1, 2 ORDER BY 1, 2").fetchall()]


def file_units(conn: psycopg.Connection[Any], repo_id: int, paths: Sequence[str]) -> dict[str, int]:
    """Path -> file unit id of those of `paths` the repository holds."""
    return {str(p): int(u) for p, u in conn.execute(
        "SELECT f.path, u.id FROM files f JOIN units u ON u.file_id = f.id AND u.kind = 'file' "
        "WHERE f.repo_id = %s AND f.path = ANY(%s)", (repo_id, list(paths))).fetchall()}


def link_imports(conn: psycopg.Connection[Any], links: Sequence[tuple[int, str, int | None]]) -> int:
    """Point the open imports of (repository id, module) at the file unit given; None unlinks
    those that point into another repository (its package is gone). Returns the edges changed."""
    if not links:
        return 0
    with conn.transaction():
        cur = conn.execute(
            "UPDATE edges e SET dst = v.dst FROM files f, unnest(%s::bigint[], %s::text[], %s::bigint[]) "
            "AS v(repo_id, module, dst) WHERE f.id = e.src_file AND f.repo_id = v.repo_id AND e.name = v.module "
            f"AND e.kind = 'IMPORTS' AND e.dst IS DISTINCT FROM v.dst AND {_OPEN} AND (v.dst IS NOT NULL OR "
            "EXISTS (SELECT 1 FROM units t JOIN files tf ON tf.id = t.file_id WHERE t.id = e.dst "
            "AND tf.repo_id <> f.repo_id))",
            ([r for r, _, _ in links], [m for _, m, _ in links], [d for _, _, d in links]))
        return max(cur.rowcount, 0)


class RepoViews:
    """What `PostgresStore` adds for several repositories: choosing one, views across several,
    the scope its reads keep to, and the links of imports between them."""

    conn: psycopg.Connection[Any]
    url: str
    repo_id: int | None
    scope: tuple[int, ...] | None
    _repo_names: dict[int, str] | None = None

    def _view(self, repo_id: int | None, scope: Sequence[int] | None) -> Any:
        return type(self)(self.conn, self.url, repo_id, scope)  # type: ignore[call-arg]

    def _meta_key(self, key: str) -> str:
        """A meta key of one repository's state (a build's marks) is kept per repository; the
        database's own (the embedding model, the schema) are shared."""
        if key in PER_REPOSITORY_META and self.repo_id is not None and self.repo_id != DEFAULT_REPO_ID:
            return f"{key}@{int(self.repo_id)}"
        return key

    def reopen(self, url: str) -> Any:
        """The same repository (or view) on a connection of its own: one per thread. `url`: the
        one given (this store keeps it without the password)."""
        from coderag_tui.store.postgres.connect import connect_live

        return type(self)(connect_live(url), url, self.repo_id, self.scope)  # type: ignore[call-arg]

    def _in_scope(self, alias: str = "f") -> str:
        return scope_sql(self.scope, alias)

    def _holds_all(self) -> bool:
        """The scope holds every repository of the database that holds a file (none other to
        leave out; the nameless repository 1 is there, empty, once others have names)."""
        if self.scope is None:
            return True
        row = self.conn.execute("SELECT array_agg(r.id) FROM repos r WHERE EXISTS "
                                "(SELECT 1 FROM files f WHERE f.repo_id = r.id)").fetchone()
        return row is not None and set(row[0] or ()) <= set(self.scope)

    def _keyword_scope(self) -> str:
        """The scope for a keyword search: TRUE when the database holds no other repository, so
        the postings are read alone (an index-only scan; joined to their chunk and file, each
        word's 1,000 postings cost ~7x the server's CPU at 500,000 chunks)."""
        return "TRUE" if self._holds_all() else self._in_scope("f")

    def _vector_in_scope(self) -> str:
        """A condition on a vector (`v`) held by a chunk of the scope (HNSW's iterative scan keeps
        reading past vectors of other repositories)."""
        if self._holds_all():
            return "TRUE"
        return ("EXISTS (SELECT 1 FROM chunks sc JOIN files sf ON sf.id = sc.file_id "
                f"WHERE sc.hash = v.hash AND {scope_sql(self.scope, 'sf')})")

    def _writing(self) -> int:
        if self.repo_id is None:
            raise StoreError("a view across repositories only reads", "open one repository to write it")
        return self.repo_id

    def _name(self, repo_id: int) -> str:
        if self._repo_names is None or repo_id not in self._repo_names:
            self._repo_names = names(self.conn)
        return self._repo_names.get(repo_id, "")

    @property
    def repo(self) -> str:
        """The repository's name ('' for a database used without names, or a view)."""
        return "" if self.repo_id is None else self._name(self.repo_id)

    def repositories(self) -> list[StoredRepo]:
        return listing(self.conn)

    def repository(self, name: str, source: str | None = None) -> Any:
        """A store on the repository `name` of this database, sharing its connection (close one
        of them). With `source` (where it is indexed from) it is found by that, or created."""
        repo_id = add(self.conn, name, source) if source is not None else ids_of(self.conn, [name])[0]
        return self._view(repo_id, None)

    def repository_at(self, source: str) -> Any:
        """A store on the repository indexed from `source`, or None when none was."""
        row = self.conn.execute("SELECT id FROM repos WHERE source = %s AND name <> ''", (source,)).fetchone()
        return None if row is None else self._view(int(row[0]), None)

    def across(self, chosen: Sequence[str] | None = None) -> Any:
        """A read-only view searching the named repositories together (None: every one); each
        unit names its repository. It shares this store's connection."""
        return self._view(None, None if chosen is None else ids_of(self.conn, list(dict.fromkeys(chosen))))

    def _paths(self) -> list[str]:
        rows = self.conn.execute(f"SELECT r.name, f.path FROM files f JOIN repos r ON r.id = f.repo_id "
                                 f"WHERE {self._in_scope('f')} ORDER BY r.name COLLATE \"C\", f.path COLLATE \"C\"")
        several = self.repo_id is None
        return [f"{n}:{p}" if several and n else str(p) for n, p in rows.fetchall()]

    def set_packages(self, packages: Sequence[dict[str, Any]]) -> None:
        """Record what this repository defines for others to import (workspace/packages.py)."""
        set_packages(self.conn, self._writing(), packages)

    def link_across(self, resolve: Callable[[int, str], Iterable[tuple[int, str]]]) -> int:
        """Link the open imports of every repository of the database: `resolve(repository id,
        module)` gives the (repository id, path) the module may be, in order; the first file there
        is the target. Returns the edges changed."""
        links: list[tuple[int, str, int | None]] = []
        for repo_id, module, pointing in open_imports(self.conn):
            target: int | None = None
            for other, path in resolve(repo_id, module):
                found = file_units(self.conn, other, [path])
                if path in found:
                    target = found[path]
                    break
            if target is not None or pointing:
                links.append((repo_id, module, target))
        return link_imports(self.conn, links)

    def cross_imports(self) -> list[tuple[int, str, str, int, str, str, int, str, str, str]]:
        """(importing file id, its repository, its path, its unit, module, imported name, line,
        target repository, target path, target language) of every import linked across."""
        return [(int(fid), str(r), str(p), int(u), str(m), str(n or ""), int(ln), str(tr), str(tp), str(lang))
                for fid, r, p, u, m, n, ln, tr, tp, lang in self.conn.execute(
                    "SELECT f.id, r.name, f.path, e.src, e.name, e.receiver, e.line, tr.name, tf.path, tf.language "
                    "FROM edges e JOIN files f ON f.id = e.src_file JOIN repos r ON r.id = f.repo_id "
                    "JOIN units t ON t.id = e.dst JOIN files tf ON tf.id = t.file_id JOIN repos tr ON tr.id = tf.repo_id "
                    "WHERE e.kind = 'IMPORTS' AND tf.repo_id <> f.repo_id ORDER BY f.id, e.line").fetchall()]

    def open_calls(self, file_ids: Sequence[int]) -> list[tuple[int, int, str, str]]:
        """(edge id, file id, called name, receiver) of the unresolved calls of the files."""
        return [(int(i), int(f), str(n), str(r or "")) for i, f, n, r in self.conn.execute(
            "SELECT id, src_file, name, receiver FROM edges WHERE src_file = ANY(%s) AND kind = 'CALLS' "
            "AND dst IS NULL ORDER BY id", ([int(i) for i in file_ids],)).fetchall()]

    def definitions(self, repo: str, wanted: Sequence[str]) -> list[UnitRef]:
        """The definitions of the names in the repository `repo`, each name's in the order symbol
        lookup ranks them (a function before a method of the same name)."""
        from coderag_tui.store.postgres.lookups import find_symbols

        scope = scope_sql(ids_of(self.conn, [repo]))
        rows = lambda sql, params: self.conn.execute(sql, params).fetchall()  # noqa: E731
        return [u for name in dict.fromkeys(wanted) for u in find_symbols(rows, name, 50, scope=scope)
                if u.name == name and u.kind != "file"]

    def set_call_targets(self, targets: Sequence[tuple[int, int]]) -> int:
        """Resolve the calls (edge id, definition's unit id) still unresolved."""
        if not targets:
            return 0
        with self.conn.transaction():
            cur = self.conn.execute(
                "UPDATE edges e SET dst = v.dst FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, dst) "
                "WHERE e.id = v.id AND e.dst IS NULL", ([i for i, _ in targets], [d for _, d in targets]))
            return max(cur.rowcount, 0)
