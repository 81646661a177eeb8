"""An update leaves the profiles (roles, connectivity, callers, their keyword rows) a fresh build
of the same files gives, on both backends: through a file that stops referring to another (its
former neighbour's profile changes), a shift of the "core module" threshold (files no edge of
the change reaches change role), files added and edits that change no profile."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.store.backend import StoreBackend, open_store

# a.py is imported by x1..x4, b.py by y1..y3: nine files, so the best-connected file sets the
# core threshold (4: a is a core module, b with 3 importers is not)
FILES = {
    "pkg/a.py": '"""Alpha helpers for the ledger."""\n\n\ndef fa():\n    return 1\n',
    "pkg/b.py": '"""Beta routines for the ledger."""\n\n\ndef fb():\n    return 2\n',
    **{f"pkg/x{i}.py": f"from pkg.a import fa\n\n\ndef use_x{i}():\n    return fa()\n" for i in range(1, 5)},
    **{f"pkg/y{i}.py": f"from pkg.b import fb\n\n\ndef use_y{i}():\n    return fb()\n" for i in range(1, 4)},
}


def settings() -> Settings:
    return Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))


def profiles(db: StoreBackend) -> dict[tuple[str, str, str], tuple[object, ...]]:
    """Every profile keyed by its unit's path, kind and qualname (ids differ between builds)."""
    rows = db.rows("SELECT f.path, u.kind, u.qualname, p.role, p.fan_in, p.fan_out, p.data, p.text "
                   "FROM profiles p JOIN units u ON u.id=p.unit_id JOIN files f ON f.id=u.file_id")
    assert len(rows) == db.scalar("SELECT count(*) FROM units")
    return {(str(r[0]), str(r[1]), str(r[2])): tuple(r[3:]) for r in rows}


def searched(db: StoreBackend) -> dict[str, list[str]]:
    """What the descriptions' keyword rows find, by path."""
    out = {}
    for word in ("alpha", "beta", "ledger", "gamma"):
        ids = db.description_search([word], 20)
        out[word] = sorted(str(db.scalar("SELECT f.path FROM units u JOIN files f ON f.id=u.file_id WHERE u.id=?",
                                         (i,))) for i in ids)
    return out


def fresh(root: Path, where: Path) -> tuple[dict[tuple[str, str, str], tuple[object, ...]], dict[str, list[str]]]:
    db = open_store(where)
    try:
        Indexer(db, root, settings()).run()
        return profiles(db), searched(db)
    finally:
        db.close()


def check_updates(db: StoreBackend, root: Path, tmp_path: Path) -> None:
    def write(path: str, text: str) -> str:
        (root / path).write_text(text)
        return path

    edits: list[Callable[[], list[str]]] = [
        # x1 stops importing a: a drops to 3 importers, the threshold to 3, and b (3 importers,
        # nothing to do with x1) becomes a core module too
        lambda: [write("pkg/x1.py", "def use_x1():\n    return 0\n")],
        # and imports it again: back to 4, b is a plain module again
        lambda: [write("pkg/x1.py", FILES["pkg/x1.py"])],
        # a tenth file: the second best connected file sets the threshold (b's 3)
        lambda: [write("pkg/x5.py", "def use_x5():\n    return 5\n")],
        # a docstring that changes only a's own profile and its searched words
        lambda: [write("pkg/a.py", '"""Gamma helpers."""\n\n\ndef fa():\n    return 1\n')],
        # an edit that changes no profile but the edited file's
        lambda: [write("pkg/y2.py", FILES["pkg/y2.py"] + "\n\ndef more():\n    return use_y2()\n")],
    ]
    Indexer(db, root, settings()).run()
    roles = []
    for n, edit in enumerate(edits):
        changed = edit()
        Indexer(db, root, settings()).run(only=changed)
        want_profiles, want_search = fresh(root, tmp_path / f"fresh{n}.db")
        got = profiles(db)
        assert got == want_profiles, (n, {k: (got.get(k), want_profiles.get(k)) for k in set(got) | set(want_profiles)
                                          if got.get(k) != want_profiles.get(k)})
        assert searched(db) == want_search, n
        roles.append({k[0]: v[0] for k, v in got.items() if k[1] == "file" and k[0] in ("pkg/a.py", "pkg/b.py")})
    # (what the edits did, so that the comparison compared something)
    core, module = "core module", "module"
    assert roles[:3] == [{"pkg/a.py": core, "pkg/b.py": core}, {"pkg/a.py": core, "pkg/b.py": module},
                         {"pkg/a.py": core, "pkg/b.py": core}]
    assert want_search["gamma"] == ["pkg/a.py"] and want_search["beta"] == ["pkg/b.py"]


def make(root: Path) -> Path:
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_an_update_leaves_the_profiles_of_a_fresh_build(tmp_path: Path) -> None:
    root = make(tmp_path / "repo")
    db = open_store(tmp_path / "index.db")
    try:
        check_updates(db, root, tmp_path)
    finally:
        db.close()


def test_an_update_leaves_the_profiles_of_a_fresh_build_on_postgres(pg_url: str, tmp_path: Path,
                                                                      request: pytest.FixtureRequest) -> None:
    root = make(tmp_path / "repo")
    db = open_store(request.getfixturevalue("pg_url"), source=str(root), create=True)
    try:
        check_updates(db, root, tmp_path)
    finally:
        db.close()
