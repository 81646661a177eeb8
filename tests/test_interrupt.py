"""An update killed after any committed transaction and then resumed gives exactly the index a
fresh build of the same files gives: units, chunks, keywords, edges and their targets, vectors.

The update is realistic: files edited, a definition renamed, one deleted, one moved to a new
file, a file deleted, files added that bring back an old name, new callers, a new subclass and a
new test file. A child process runs `coderag index` on a copy of the old index and exits at once
(os._exit: no clean-up, like a kill) right after its K-th commit, for every K; the next
`coderag index` resumes it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coderag_tui.cli.main import main
from coderag_tui.store.db import open_database
from coderag_tui.store.embeddings import VEC_TABLE
from tests.helpers.files import write_tree

V1: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/base.py": '''class Base:
    def run(self):
        return self.step()

    def step(self):
        return 1


def helper():
    return "base"
''',
    "pkg/util.py": '''def parse(text):
    return text.split()


def fmt(value):
    return str(value)


def helper():
    return "util"
''',
    "pkg/models.py": '''from pkg.base import Base
from pkg.util import parse, fmt


class Model(Base):
    def step(self):
        return parse(fmt(2))

    def save(self):
        return self.run()
''',
    "pkg/views.py": '''from pkg.models import Model
from pkg.util import fmt
from pkg.old import legacy


def show():
    m = Model()
    m.save()
    return fmt(legacy())


def other():
    return helper()
''',
    "pkg/old.py": '''def legacy():
    return 42
''',
    "tests/test_models.py": '''from pkg.models import Model


def test_step():
    assert Model().step()


def test_save():
    assert Model().save()
''',
    "web/lib.js": '''export function render(x) { return String(x); }
export function parse(s) { return s.trim(); }
''',
    "web/main.js": '''import { render, parse } from './lib';
function start() { return render(parse(" a ")); }
''',
    "README.md": "# demo\n\nThe demo project: models, views and a web page.\n",
}
for _i in range(8):  # callers that stay the same, so that batches of files are many
    V1[f"pkg/mod{_i}.py"] = f'''from pkg.util import parse, fmt, helper


def use{_i}(x):
    return fmt(parse(x)) + helper()


class Thing{_i}(object):
    def go(self):
        return use{_i}(self)
'''

V2: dict[str, str | bytes | None] = {  # None: deleted
    "pkg/util.py": '''def parse_text(text):
    return text.split()


def normalize(text):
    return " ".join(parse_text(text))
''',
    "pkg/fmtlib.py": '''def fmt(value):
    return str(value)
''',
    "pkg/extra.py": '''def parse(text):
    return list(text)


def helper():
    return "extra"
''',
    "pkg/base.py": '''class Base:
    def run(self):
        return self.step()

    def step(self):
        return 1

    def validate(self):
        return True
''',
    "pkg/models.py": '''from pkg.base import Base
from pkg.util import parse_text
from pkg.fmtlib import fmt


class Model(Base):
    def step(self):
        return parse_text(fmt(2))

    def save(self):
        if self.validate():
            return self.run()


class Special(Model):
    def validate(self):
        return super().validate() and self.step()
''',
    "pkg/views.py": '''from pkg.models import Model, Special
from pkg.fmtlib import fmt
from pkg.util import normalize


def show():
    m = Model()
    m.save()
    return fmt(normalize("a b"))


def special():
    return Special().validate()
''',
    "pkg/old.py": None,
    "pkg/mod3.py": '''from pkg.util import normalize
from pkg.extra import parse, helper


def use3(x):
    return normalize(x) + helper() + parse(x)[0]
''',
    "pkg/mod5.py": None,
    "tests/test_util.py": '''from pkg.util import normalize, parse_text


def test_normalize():
    assert normalize(" a ") == "a"


def test_parse_text():
    assert parse_text("a b") == ["a", "b"]
''',
    "web/lib.js": '''export function render(x) { return "<p>" + String(x) + "</p>"; }
export function parse(s) { return s.trim(); }
export function mount(el) { el.innerHTML = render(parse(el.textContent)); }
''',
    "README.md": "# demo\n\nThe demo project: models, views, a web page and tests.\n",
}

# Runs `coderag ARGS` and exits without any clean-up right after its K-th commit (K = 0: never).
# Two files per write transaction: a large repository's update commits many batches.
_CHILD = """
import contextlib, os, sys
from coderag_tui.indexing import indexer
from coderag_tui.store import db as dbmod
from coderag_tui.indexing import embedder
indexer._BATCH_FILES = 2
embedder._WRITE_EVERY_S = 0
stop_after = int(sys.argv[1])
commits = [0]
plain = dbmod.Database.transaction

@contextlib.contextmanager
def counted(self):
    outer = self._tx_depth == 0
    with plain(self) as db:
        yield db
    if outer:
        commits[0] += 1
        if commits[0] == stop_after:
            os._exit(77)

dbmod.Database.transaction = counted
from coderag_tui.cli.main import main
code = main(sys.argv[2:])
print("COMMITS", commits[0])
sys.exit(code)
"""


def _update(root: Path) -> None:
    for rel, text in V2.items():
        path = root / rel
        if text is None:
            path.unlink()
        else:
            write_tree(root, {rel: text})


def _copy_index(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        s = Path(str(src) + suffix)
        if s.exists():
            shutil.copyfile(s, str(dst) + suffix)


def _child(stop_after: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD, str(stop_after), *args],
                          capture_output=True, text=True, timeout=300)


def _index(root: Path, db: Path, *extra: str) -> None:
    assert main(["index", str(root), "--db", str(db), *extra]) == 0


def snapshot(db_path: Path, vectors: bool = False) -> dict[str, Any]:
    """Everything the index holds, described by paths, names and lines (ids differ by history)."""
    db = open_database(db_path, readonly=True)
    try:
        units = {uid: (path, kind, qual, start) for uid, path, kind, qual, start in db.execute(
            "SELECT u.id, f.path, u.kind, u.qualname, u.start_line FROM units u JOIN files f ON f.id = u.file_id")}
        out: dict[str, Any] = {
            "files": sorted(db.execute("SELECT path, language, hash, size, lines, structured, has_errors, error "
                                       "FROM files")),
            "units": sorted((units[i], units.get(p), *rest) for i, p, *rest in db.execute(
                "SELECT id, parent_id, name, signature, params, return_type, decorators, docstring, bases, "
                "end_line, is_test FROM units")),
            "imports": sorted(db.execute("SELECT f.path, i.module, i.names, i.line FROM imports i "
                                         "JOIN files f ON f.id = i.file_id")),
            "skips": sorted(db.execute("SELECT path, reason FROM skips")),
        }
        chunks = {cid: (path, start, end, h) for cid, path, start, end, h in db.execute(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.hash FROM chunks c JOIN files f ON f.id = c.file_id")}
        out["chunks"] = sorted((chunks[cid], units.get(u), *rest) for cid, u, *rest in db.execute(
            "SELECT id, unit_id, node_kinds, scope, header, text FROM chunks"))
        # the keyword index is contentless: compare which chunks every word of the files finds
        words = sorted({w for t in (*V1.values(), *V2.values()) if isinstance(t, str)
                        for w in t.replace("_", " ").split() if w.isalpha() and len(w) > 2})
        out["keywords"] = {w: sorted(chunks[r[0]] for r in db.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{w}"',))) for w in words}
        out["edges"] = sorted((units[s], db_kind, name, receiver, line, argc, units.get(d) if d else None)
                              for s, db_kind, name, receiver, line, argc, d in db.execute(
                                  "SELECT src, kind, name, receiver, line, argc, dst FROM edges"))
        if vectors:
            out["vectors"] = {h: np.frombuffer(blob, dtype=np.float32) for h, blob in db.execute(
                f"SELECT v.hash, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id")}
        out["pending"] = db.get_meta("resolve_pending")
        return out
    finally:
        db.close()


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in a:
        if key == "vectors":
            if set(a[key]) != set(b[key]):
                out.append(f"vectors: {len(set(a[key]) ^ set(b[key]))} hashes differ")
            out += [f"vector {h[:8]} differs" for h in set(a[key]) & set(b[key])
                    if not np.allclose(a[key][h], b[key][h], atol=1e-4)]
        elif key == "keywords":
            out += [f"keyword {w}: {a[key][w]} != {b[key][w]}" for w in a[key] if a[key][w] != b[key][w]]
        elif a[key] != b[key]:
            sa, sb = set(map(repr, a[key])), set(map(repr, b[key]))
            out.append(f"{key}: only resumed {sorted(sa - sb)[:5]}, only fresh {sorted(sb - sa)[:5]}")
    return out


@pytest.fixture(scope="module")
def updated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, Any]]:
    """(the repository after the update, the index of its old state, the same with vectors, a
    fresh build's snapshot)."""
    tmp = tmp_path_factory.mktemp("interrupt")
    root = write_tree(tmp / "repo", dict(V1))
    old = tmp / "old.db"
    _index(root, old, "--no-embed")
    old_vectors = tmp / "old-vectors.db"
    _index(root, old_vectors)
    _update(root)
    fresh = tmp / "fresh.db"
    _index(root, fresh, "--no-embed")
    return root, old, old_vectors, snapshot(fresh)


def test_fixture_update_changes_the_graph(updated: tuple[Path, Path, Path, dict[str, Any]]) -> None:
    """The update is not trivial: its edges differ from the old index's, names move files."""
    _, old, _, fresh = updated
    assert _differences(snapshot(old), fresh)
    resolved = {(e[0][0], e[2], e[6][0]) for e in fresh["edges"] if e[1] == "CALLS" and e[6]}
    assert ("pkg/mod3.py", "parse", "pkg/extra.py") in resolved  # an old name, defined anew
    assert ("pkg/models.py", "fmt", "pkg/fmtlib.py") in resolved  # a moved definition
    assert ("pkg/models.py", "validate", "pkg/base.py") in resolved  # a new inherited member
    assert any(e[1] == "TESTS" and e[0][0] == "tests/test_util.py" for e in fresh["edges"])


def _commits(proc: subprocess.CompletedProcess[str]) -> int:
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split("COMMITS")[-1])


@pytest.mark.slow  # an update killed after each of its commits, each resumed
def test_an_update_killed_after_any_commit_resumes_to_a_fresh_build(
        updated: tuple[Path, Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    root, old, _, fresh = updated
    whole = tmp_path / "whole.db"
    _copy_index(old, whole)
    commits = _commits(_child(0, "index", str(root), "--db", str(whole), "--no-embed"))
    assert commits >= 8  # several batches of files, then skips and the graph
    assert _differences(snapshot(whole), fresh) == []  # uninterrupted: the incremental resolve

    failures = {}
    for k in range(1, commits + 1):
        db = tmp_path / f"k{k}.db"
        _copy_index(old, db)
        proc = _child(k, "index", str(root), "--db", str(db), "--no-embed")
        assert proc.returncode == 77, (k, proc.stderr)
        killed = snapshot(db)
        if killed["pending"] == "0":  # killed after the graph was done: nothing left to resolve
            assert _differences(killed, fresh) == [], k
        _index(root, db, "--no-embed")  # the resume
        diff = _differences(snapshot(db), fresh)
        if diff:
            failures[k] = diff
    assert failures == {}, f"{len(failures)} of {commits} interrupted updates differ: {failures}"


@pytest.mark.slow  # embeds, is killed, resumes
def test_an_update_killed_while_embedding_resumes_to_a_fresh_build(
        updated: tuple[Path, Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _, old, _ = updated
    config = tmp_path / "small-batches.toml"
    config.write_text("[embed]\nbatch_size = 1\n")  # several vector writes
    fresh = tmp_path / "fresh.db"
    _index(root, fresh, "--config", str(config))
    want = snapshot(fresh, vectors=True)
    assert want["vectors"]
    structural_only = tmp_path / "structural.db"
    _copy_index(old, structural_only)
    structural = _commits(_child(0, "index", str(root), "--db", str(structural_only), "--no-embed"))
    whole = tmp_path / "whole.db"
    _copy_index(old, whole)
    commits = _commits(_child(0, "index", str(root), "--db", str(whole), "--config", str(config)))
    assert _differences(snapshot(whole, vectors=True), want) == []
    assert commits >= structural + 3  # stale vectors, then new vectors in batches
    for k in range(structural + 1, commits + 1):
        db = tmp_path / f"k{k}.db"
        _copy_index(old, db)
        proc = _child(k, "index", str(root), "--db", str(db), "--config", str(config))
        assert proc.returncode == 77, (k, proc.stderr)
        _index(root, db, "--config", str(config))
        assert _differences(snapshot(db, vectors=True), want) == [], k
