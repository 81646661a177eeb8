"""The structural index: discovery, skips, units, graph edges, incremental == fresh, crash safety."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import apsw
import pytest

from coderag_tui.config import IndexSettings, Settings
from coderag_tui.errors import IndexError_
from coderag_tui.service import CodeRag
from coderag_tui.store.db import Database

CORE = '''"""Core module."""
from pkg.util import helper, unused


class Base:
    def run(self):
        return self.step()

    def step(self):
        return helper(1)


class Child(Base):
    def step(self):
        return super().step() + helper(2)


def orchestrate():
    return Child().run()
'''
UTIL = '''def helper(x):
    """Double it."""
    return x * 2


def unused():
    return 0
'''
TEST = '''from pkg.core import Child, orchestrate


def test_child():
    assert Child().run() == 7


def test_orchestrate():
    assert orchestrate() == 7
'''


def dump(db: Database) -> dict[str, list[tuple[object, ...]]]:
    """Everything in an index, keyed by content instead of row ids."""
    units = sorted(db.rows(
        "SELECT f.path, u.kind, u.qualname, u.signature, u.start_line, u.end_line, u.params, "
        "u.docstring, u.bases, u.is_test, coalesce(p.qualname, '') FROM units u JOIN files f ON f.id=u.file_id "
        "LEFT JOIN units p ON p.id=u.parent_id"))
    edges = sorted(db.rows(
        "SELECT sf.path, s.qualname, e.kind, e.name, e.receiver, e.line, e.argc, coalesce(tf.path,''), "
        "coalesce(t.qualname,'') FROM edges e JOIN units s ON s.id=e.src JOIN files sf ON sf.id=s.file_id "
        "LEFT JOIN units t ON t.id=e.dst LEFT JOIN files tf ON tf.id=t.file_id"))
    chunks = sorted(db.rows(
        "SELECT f.path, c.start_line, c.end_line, c.hash, u.qualname FROM chunks c JOIN files f ON f.id=c.file_id "
        "JOIN units u ON u.id=c.unit_id"))
    files = sorted(db.rows("SELECT path, language, hash, lines FROM files"))
    fts = sorted(db.rows(
        "SELECT f.path, c.start_line FROM chunks_fts JOIN chunks c ON c.id=chunks_fts.rowid "
        "JOIN files f ON f.id=c.file_id WHERE chunks_fts MATCH 'helper OR step OR double'"))
    return {"files": files, "units": units, "edges": edges, "chunks": chunks, "fts": fts}


@pytest.fixture
def repo(make_repo):
    return make_repo({"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/util.py": UTIL,
                      "tests/test_core.py": TEST, "README.md": "# Demo\n\nA demo repository.\n"})


def edge_set(service: CodeRag, kind: str) -> set[tuple[str, str]]:
    rows = service.db.rows(
        "SELECT s.qualname, coalesce(t.qualname, '?' || e.name) FROM edges e JOIN units s ON s.id=e.src "
        "LEFT JOIN units t ON t.id=e.dst WHERE e.kind=?", (kind,))
    return set(rows)


def test_units_and_graph(repo, open_service):
    s = open_service(repo)
    calls = edge_set(s, "CALLS")
    assert ("Base.run", "Base.step") in calls  # self.step() -> the enclosing class
    assert ("Child.step", "Base.step") in calls  # super().step() -> the base class
    assert ("Base.step", "helper") in calls  # imported name -> pkg/util.py
    assert ("orchestrate", "Child") in calls
    assert ("test_child", "Base.run") in calls  # Child().run() -> inherited member
    assert ("Child", "Base") in edge_set(s, "INHERITS")
    assert ("pkg/core.py", "pkg/util.py") in edge_set(s, "IMPORTS")
    tests = edge_set(s, "TESTS")
    assert ("test_orchestrate", "orchestrate") in tests
    assert ("tests/test_core.py", "pkg/core.py") in tests  # by file name convention
    assert ("Base", "Base.run") in edge_set(s, "DEFINES")
    assert ("pkg/core.py", "Base") in edge_set(s, "CONTAINS")
    callers = {e.unit.qualname for e in s.callers("helper") if e.unit}
    assert callers == {"Base.step", "Child.step"}
    callees = {(e.unit.qualname if e.unit else e.name) for e in s.callees("Child.step")}
    assert callees == {"Base.step", "helper", "super"}
    [unit] = [u for u in s.symbols("helper") if u.kind == "function"]
    assert (unit.path, unit.start_line, unit.end_line, unit.signature) == ("pkg/util.py", 1, 3, "def helper(x)")
    assert unit.docstring == "Double it."
    assert s.symbols("orchstrate")[0].qualname == "orchestrate"  # fuzzy


def test_incremental_matches_fresh_build(repo, open_service, tmp_path):
    # test files named after a file that will disappear (util.py) and one that will appear (helpers.py)
    (repo / "tests/test_util.py").write_text("from pkg.util import helper\n\n\ndef test_helper():\n    assert helper(1) == 2\n")
    (repo / "tests/test_helpers.py").write_text("def test_nothing_yet():\n    pass\n")
    # a call made at file level, into a file that stays the same (its TESTS edge starts at the
    # file unit, as the edges derived from test file names do)
    (repo / "pkg/tools.py").write_text("def tool():\n    return 1\n")
    (repo / "tests/test_core.py").write_text("from pkg.tools import tool\n" + TEST + "\n\ntool()\n")
    live = open_service(repo)
    assert ("tests/test_util.py", "pkg/util.py") in edge_set(live, "TESTS")
    assert ("tests/test_core.py", "tool") in edge_set(live, "TESTS")
    # edit: a new function and a new call; rename: util.py -> helpers.py; delete: README.md
    (repo / "pkg/core.py").write_text(CORE.replace("return Child().run()", "return Child().run() + extra()")
                                      + "\n\ndef extra():\n    return helper(3)\n")
    (repo / "pkg/util.py").rename(repo / "pkg/helpers.py")
    (repo / "pkg/core.py").write_text((repo / "pkg/core.py").read_text().replace("pkg.util", "pkg.helpers"))
    (repo / "README.md").unlink()
    (repo / "docs").mkdir()
    (repo / "docs/guide.md").write_text("# Guide\n\nUse orchestrate().\n")
    summary = live.index()
    assert summary.files_deleted == 2 and summary.files_indexed == 3
    fresh = open_service(repo)
    assert dump(live.db) == dump(fresh.db)
    assert ("tests/test_helpers.py", "pkg/helpers.py") in edge_set(live, "TESTS")
    assert ("tests/test_core.py", "tool") in edge_set(live, "TESTS")  # kept while files came and went
    assert ("extra", "helper") in edge_set(live, "CALLS")
    # and a rename of a function: its caller is re-resolved to nothing, the same as a fresh build
    (repo / "pkg/helpers.py").write_text(UTIL.replace("def helper(", "def assist("))
    live.index()
    assert dump(live.db) == dump(open_service(repo).db)


def test_incremental_updates_follow_the_set_of_files(repo, open_service):
    """Incremental updates keep the repository's file tables between runs while only file
    contents change; an added or removed file must show up in them at once."""
    (repo / "pkg/user.py").write_text("from pkg.extra import thing\n\n\ndef use():\n    return thing()\n")
    live = open_service(repo)
    assert ("use", "?thing") in edge_set(live, "CALLS")
    (repo / "pkg/util.py").write_text(UTIL + "\n\ndef more():\n    return 1\n")
    live.index()  # an edit only: the file tables are kept for the next run
    (repo / "pkg/extra.py").write_text("def thing():\n    return 1\n")
    live.index()
    assert ("use", "thing") in edge_set(live, "CALLS")
    assert dump(live.db) == dump(open_service(repo).db)
    (repo / "pkg/extra.py").unlink()
    live.index()
    assert ("use", "?thing") in edge_set(live, "CALLS")
    assert dump(live.db) == dump(open_service(repo).db)


def test_removed_function_orphans_its_callers(repo, open_service):
    s = open_service(repo)
    (repo / "pkg/util.py").write_text(UTIL.replace("def helper(x):", "def renamed_helper(x):"))
    s.index()
    orphans = s.status().orphaned
    names = {(e.source.qualname if e.source else "?") for e in orphans}
    assert names == {"Base.step", "Child.step"}
    assert all("helper" in e.name and "pkg/util.py" in e.name for e in orphans)


def test_unchanged_files_are_skipped(repo, open_service):
    s = open_service(repo)
    again = s.index()
    assert again.files_indexed == 0 and again.files_unchanged == 5
    os.utime(repo / "pkg/util.py", None)  # touched, same content: hashed, not re-parsed
    touched = s.index()
    assert touched.files_indexed == 0


def test_discovery_skips_and_ignores(make_repo, open_service, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret(): pass\n")
    repo = make_repo({
        ".gitignore": "*.log\nbuild_out/\n",
        "src/.gitignore": "local_*.py\n!local_keep.py\n",
        "src/app.py": "def app():\n    return 1\n",
        "src/local_tmp.py": "def ignored(): pass\n",
        "src/local_keep.py": "def kept(): pass\n",
        "debug.log": "noise\n",
        "build_out/x.py": "def built(): pass\n",
        "node_modules/lib/index.js": "function dep() {}\n",
        "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "big.py": "x = 1\n" * 400_000,
        "bundle.js": "var a=1;" * 2000,
        "app.min.js": "var a=1;",
        "gen.py": "# Code generated by protoc. DO NOT EDIT.\nX = 1\n",
        "bad_utf8.py": b"def ok():\n    return '\xff\xfe'\n",
        "broken.py": "def broken(:\n    pass\n\ndef fine():\n    return 2\n",
    })
    os.symlink(outside / "secret.py", repo / "link.py")
    os.symlink(outside, repo / "linkdir")
    s = open_service(repo)
    paths = {r[0] for r in s.db.rows("SELECT path FROM files")}
    assert {"src/app.py", "src/local_keep.py", "bad_utf8.py", "broken.py"} <= paths
    assert not paths & {"src/local_tmp.py", "debug.log", "build_out/x.py", "node_modules/lib/index.js",
                        "link.py", "big.py", "image.png"}
    st = s.status()
    assert st.skips == {"binary": 1, "generated": 2, "minified": 1, "symlink": 2, "too-large": 1}
    names = {u.qualname for u in s.outline("broken.py")}
    assert "fine" in names  # a syntax error does not lose the rest of the file
    assert s.symbols("secret") == []


@pytest.mark.slow  # a `coderag index` process killed mid-way, then resumed
def test_kill_mid_index_then_resume(make_repo, tmp_path):
    files = {f"pkg/mod{i:04d}.py": f"def f{i}(x):\n    return g{(i + 1) % 3000}(x)\n\n\ndef g{i}(x):\n    return x\n"
             for i in range(3000)}
    repo = make_repo(files)
    db_path = tmp_path / "killed.db"
    code = ("import sys; from coderag_tui.service import CodeRag; from coderag_tui.config import Settings;"
            "from dataclasses import replace; s = Settings(); s = replace(s, index=replace(s.index, workers=1));"
            f"CodeRag(__import__('pathlib').Path({str(repo)!r}), s, __import__('pathlib').Path({str(db_path)!r})).index()")
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 120
    written = 0
    reader = None
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
        try:
            if reader is None and db_path.exists():
                reader = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
            if reader is not None:
                written = next(reader.execute("SELECT count(*) FROM files"))[0]
        except apsw.Error:
            continue  # the schema is not there yet, or a writer holds a lock
        if written >= 100:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if reader is not None:
        reader.close()
    assert 0 < written < 3000, "the index was not caught mid-way"
    killed = apsw.Connection(str(db_path))
    assert list(killed.execute("SELECT value FROM meta WHERE key='deferred_indexes'"))  # indexes still to build
    killed.close()
    resumed = CodeRag(repo, Settings(), db_path)
    summary = resumed.index()
    assert summary.files_unchanged >= written and summary.files_indexed == 3000 - summary.files_unchanged
    fresh = CodeRag(repo, Settings(), tmp_path / "fresh.db")
    fresh.index()
    assert dump(resumed.db) == dump(fresh.db)
    # a fresh build creates its secondary indexes last: the resumed run brought them back
    indexes = "SELECT name, sql FROM sqlite_master WHERE type='index' ORDER BY name"
    assert resumed.db.rows(indexes) == fresh.db.rows(indexes)
    assert not resumed.db.get_meta("deferred_indexes") and not fresh.db.get_meta("deferred_indexes")
    resumed.close()
    fresh.close()


def test_corrupt_index_gives_one_line(tmp_path, make_repo):
    repo = make_repo({"a.py": "def a(): pass\n"})
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexError_) as err:
        CodeRag(repo, Settings(), bad).index()
    assert "corrupt" in err.value.one_line() and "\n" not in err.value.one_line()
    out = subprocess.run([sys.executable, "-m", "coderag_tui", "status", "--repo", str(repo), "--db", str(bad)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "corrupt" in out.stderr and "Traceback" not in out.stderr


def test_cli_commands(repo, tmp_path):
    db = str(tmp_path / "cli.db")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "coderag_tui", *args, "--db", db], capture_output=True,
                              text=True, cwd=repo / "pkg")  # like git: the repo containing the cwd

    (repo / ".git").mkdir()
    out = run("index", "--no-embed")
    assert out.returncode == 0, out.stderr
    assert "indexed 5 files" in out.stdout
    import json

    symbols = json.loads(run("symbol", "Child", "--json").stdout)
    assert symbols[0]["path"] == "pkg/core.py" and symbols[0]["kind"] == "class"
    callers = json.loads(run("callers", "helper", "--json").stdout)
    assert {c["qualname"] for c in callers} == {"Base.step", "Child.step"}
    callees = run("callees", "orchestrate").stdout
    assert "pkg/core.py" in callees and "Child" in callees
    status = json.loads(run("status", "--json").stdout)
    assert status["files"] == 5 and status["edges"] > 10
    assert run("symbol", "nothing_like_this_zzz").returncode == 1


def test_settings_excludes_and_location(make_repo, tmp_path):
    repo = make_repo({"a.py": "def a(): pass\n", "gen/b.py": "def b(): pass\n", "c.txt": "notes\n"})
    settings = Settings(index=IndexSettings(exclude=("gen/",), include=("*.py",), location="repo"))
    s = CodeRag(repo, settings)
    s.index()
    assert s.db_path == repo / ".coderag" / "index.db"
    assert (repo / ".coderag" / ".gitignore").read_text() == "*\n"
    assert {r[0] for r in s.db.rows("SELECT path FROM files")} == {"a.py"}
    s.close()
    shutil.rmtree(repo / ".coderag")


def test_file_states(repo, open_service):
    s = open_service(repo, index=False)
    assert {f.state for f in s.files()} == {"pending"}
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    s.index()
    states = {f.path: f for f in s.files()}
    assert states["pkg/core.py"].state == "indexed" and states["pkg/core.py"].language == "python"
    assert states["blob.bin"].state == "skipped" and states["blob.bin"].reason == "binary"
    assert states["blob.bin"].error == ""  # a skip is not an error
    (repo / "pkg/new.py").write_text("def new(): pass\n")
    assert {f.path: f.state for f in s.files()}["pkg/new.py"] == "pending"


def test_threads_share_nothing_and_leak_nothing(make_repo, tmp_path):
    import gc
    import threading

    repo = make_repo({"a.py": "def a():\n    return 1\n"})
    service = CodeRag(repo, Settings(), tmp_path / "fresh.db")  # a brand-new index file
    errors: list[Exception] = []

    def use() -> None:
        try:
            service.symbols("a")
        except Exception as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []  # concurrent first opens: one migrates, the others wait
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(30):
        t = threading.Thread(target=use)
        t.start()
        t.join()
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= fds + 2  # a finished thread's connection is closed
    service.close()


def test_a_reader_connection_per_thread(repo, open_service):
    service = open_service(repo)
    service.index()
    db = service.db
    assert db.reader() is db  # on its own thread, the connection itself
    seen: list[object] = []

    def read() -> None:
        r = db.reader()
        seen.extend([r, r is db.reader(), r.scalar("SELECT count(*) FROM units")])
        with pytest.raises(apsw.ReadOnlyError):
            r.execute("DELETE FROM units")

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    reader, same, units = seen
    assert reader is not db and same and units == db.scalar("SELECT count(*) FROM units") > 0
    db.close()  # closes the readers it handed out
    with pytest.raises(apsw.ConnectionClosedError):
        reader.execute("SELECT 1")  # type: ignore[attr-defined]


def test_deferred_indexes_naming_a_rewritten_column_wait(repo, open_service):
    """A fresh build creates the edge indexes but `edges_dst` while the graph is resolved, and
    that one once the resolve has rewritten the column."""
    from coderag_tui.store.write import defer_indexes, restore_indexes

    service = open_service(repo)
    service.index()
    db = service.db
    listed = "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='edges' AND sql IS NOT NULL"
    all_edge_indexes = {r[0] for r in db.execute(listed)}
    with db.transaction():
        defer_indexes(db)
    assert not {r[0] for r in db.execute(listed)}
    with db.transaction():
        restore_indexes(db, skip={"edges_dst"})
    now = {r[0] for r in db.execute(listed)}
    assert {"edges_src", "edges_src_file", "edges_name", "edges_bases", "edges_orphan"} <= now
    assert "edges_dst" not in now
    assert db.get_meta("deferred_indexes")  # still owed, so a killed run makes them next time
    with db.transaction():
        restore_indexes(db)
    assert {r[0] for r in db.execute(listed)} == all_edge_indexes and not db.get_meta("deferred_indexes")


def test_ignore_files_in_a_folder_apply_in_order(make_repo, tmp_path):
    """.gitignore, then .ignore, then .coderagignore: a later file's rule wins, in any folder."""
    from coderag_tui.sources.discovery import walk

    repo = make_repo({
        "lib/.gitignore": "*.gen.py\nscratch/\n",
        "lib/.ignore": "!keep.gen.py\n",
        "lib/.coderagignore": "drop.py\n!keep2.gen.py\n",
        "lib/keep2.gen.py": "K2 = 1\n",
        "lib/a.gen.py": "A = 1\n",
        "lib/keep.gen.py": "K = 1\n",
        "lib/drop.py": "D = 1\n",
        "lib/ok.py": "O = 1\n",
        "lib/scratch/s.py": "S = 1\n",
        "lib/deep/.coderagignore": "*.txt\n",
        "lib/deep/n.txt": "note\n",
        "lib/deep/m.py": "M = 1\n",
    })
    paths = {c.path for c in walk(repo, IndexSettings()).files}
    assert {"lib/keep.gen.py", "lib/keep2.gen.py", "lib/ok.py", "lib/deep/m.py"} <= paths
    assert not paths & {"lib/a.gen.py", "lib/drop.py", "lib/scratch/s.py", "lib/deep/n.txt"}


def test_camel_case_words_match_their_regex_definition():
    """expand_identifiers finds identifiers with bytes.translate and split; it must add the same
    words as the regex `[A-Za-z_][A-Za-z0-9_]*` would, for any text."""
    import collections
    import re

    from coderag_tui.parsing.identifiers import _sub_words, expand_identifiers

    def by_regex(text: str) -> list[str]:
        return [w for ident in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) for w in _sub_words(ident)]

    texts = [
        "parseURLString(x) + HTTPServer.getValue(); snake_case MixedCase_name",
        "9abcDef 0xDeadBeef x1Ab 9x1Ab _1_2 a__B", "naïveCase café_Name Δelta fooBar",
        "getX getX getX", "", "\udcff lone surrogate camelCase", "tab\tsepCase\nnewLine",
    ]
    for text in texts:
        assert collections.Counter(expand_identifiers(text).split()) == collections.Counter(by_regex(text)), text


def test_prose_keeps_its_names_whole(make_repo, open_service):
    """Code and data get the sub-words of their camelCase names as keywords; prose (docs,
    translation catalogs) is words, found by a name as written but not by its parts."""
    repo = make_repo({
        "app/net.py": "def parseUrlString(s):\n    return s\n",
        "conf/app.json": '{"retryBackoffLimit": 3}\n',
        "docs/guide.md": "# Guide\n\nCall parseUrlString and set retryBackoffLimit.\n",
        "notes.txt": "parseUrlString retryBackoffLimit\n",
        "locale/fr.po": 'msgid "parseUrlString retryBackoffLimit"\nmsgstr "analyse"\n',
    })
    s = open_service(repo)

    def paths(query: str) -> set[str]:
        return {str(r[0]) for r in s.db.rows(
            "SELECT DISTINCT f.path FROM chunks_fts JOIN chunks c ON c.id=chunks_fts.rowid "
            "JOIN files f ON f.id=c.file_id WHERE chunks_fts MATCH ?", (query,))}

    prose = {"docs/guide.md", "notes.txt", "locale/fr.po"}
    assert paths("code:parseurlstring") == {"app/net.py"} | prose
    assert paths("code:retrybackofflimit") == {"conf/app.json"} | prose
    assert paths("code:url") == {"app/net.py"}
    assert paths("code:backoff") == {"conf/app.json"}


def test_json_lists_are_json_dumps():
    import json

    from coderag_tui.store.write import _json_list

    for items in [(), ("a",), ("x: int = 1", "*args"), ('say "hi"', "é\u2028", "\\n", "𝔘")]:
        assert _json_list(items) == json.dumps(items)
        assert json.loads(_json_list(items)) == list(items)


def test_gc_paused_restores_the_collector():
    import gc

    from coderag_tui.indexing.workers import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_parsing_during_the_walk_gives_the_same_index(make_repo, tmp_path):
    """An empty index sends files to the parse workers as the walk finds them (`walk(on_file=)`):
    the index is the one a single process builds after the walk."""
    from dataclasses import replace

    from coderag_tui.sources.discovery import walk

    files = {f"pkg{i % 7}/m{i:03d}.py": f"class C{i}:\n    def run(self):\n        return helper{(i + 1) % 400}()\n\n\n"
                                           f"def helper{i}():\n    return C{i}().run\n" for i in range(400)}
    files["docs/readme.md"] = "# Title\n\nSome text.\n"
    repo = make_repo(files)
    seen: list[str] = []
    walked = walk(repo, IndexSettings(), on_file=lambda c: seen.append(c.path))
    assert seen == [c.path for c in walked.files] and len(seen) == 401
    one = replace(Settings(), index=replace(Settings().index, workers=1))
    two = replace(Settings(), index=replace(Settings().index, workers=2))
    serial, fed = CodeRag(repo, one, tmp_path / "one.db"), CodeRag(repo, two, tmp_path / "two.db")
    assert serial.index().files_indexed == fed.index().files_indexed == 401
    assert dump(fed.db) == dump(serial.db)
    again = fed.index()  # the index is no longer empty: no feed, nothing to parse
    assert again.files_unchanged == 401 and again.files_indexed == 0
    serial.close()
    fed.close()


def test_prechecks_agree_with_their_regexes():
    """is_test_path and the generated-header check skip a regex scan when a cheap substring test
    rules it out; the answers must be the regexes' answers."""
    from coderag_tui.parsing.kinds import TEST_PATH, is_test_path
    from coderag_tui.sources.generated import MARK, generated_header

    paths = ["tests/a.py", "src/Test/x.go", "pkg/TESTING/b.rb", "a/__tests__/c.js", "x/specs/d.rb",
             "lib/test_util.py", "lib/util_test.go", "web/app.test.ts", "web/app.Spec.JS", "src/FooTests.cs",
             "src/FooTest.java", "conftest.py", "src/contest.py", "src/attest/x.py", "src/latest.py",
             "src/inspect.py", "src/spectrum.c", "docs/testimony.md", "src/main.rs", "README"]
    for p in paths:
        assert is_test_path(p) == bool(TEST_PATH.search(p)), p
    # one-line headers: the check must say what the marker regex says of the line
    heads = [b"// Code generated by protoc. DO NOT EDIT.\n", b"# @Generated file\n", b"/* AUTO-GENERATED */",
             b"# do not edit this\n", b"# generated by hand, edited since\n", b"# Autogenerated by Thrift\n",
             b"-- automatically generated\n", b"# Generated by Django 5.1\n", b"def f():\n    pass\n", b""]
    for head in heads:
        assert generated_header(head, "x.src") == bool(MARK.search(head)), head


def test_closest_file_matches_its_definition():
    """closest narrows long candidate lists level by level; the answer must be the file sharing
    the most leading path parts with the importer, ties to fewer parts, then to the path."""
    import itertools

    from coderag_tui.indexing.modpaths import closest, path_parts

    paths = ["django/conf/locale/af/LC_MESSAGES/django.po", "django/conf/locale/de/LC_MESSAGES/django.po",
             "django/__init__.py", "django.py", "docs/django.txt", "a/b/django/x.py", "a/django.py",
             "a/b/django.py", "b/django.py", "a/b/c.py/django.py", "a/b/c.py"]
    ids = {i: p for i, p in enumerate(paths)}

    def by_definition(files: list[int], src: str) -> int:
        def key(fid: int) -> tuple[int, int, str]:
            pairs = zip(path_parts(src), path_parts(ids[fid]), strict=False)
            shared = sum(1 for _ in itertools.takewhile(lambda ab: ab[0] == ab[1], pairs))
            return (-shared, len(path_parts(ids[fid])), ids[fid])
        return min(files, key=key)

    for src in ["django/db/models/base.py", "a/b/c.py", "a/x.py", "tests/t.py", "top.py", "a/b/django/y.py"]:
        for n in range(1, len(paths) + 1):
            for files in (list(ids)[:n], list(ids)[-n:], list(reversed(ids))[:n]):
                assert closest(files, src, ids) == by_definition(files, src), (src, files)


def test_module_parts_of_absolute_and_relative_imports():
    from coderag_tui.indexing.modpaths import module_parts

    assert module_parts("django.db.models", "x/y.py") == ["django", "db", "models"]
    assert module_parts("crate::a::b", "src/lib.rs") == ["a", "b"]
    assert module_parts('"sub/dir/file.h"', "src/main.c") == ["sub", "dir", "file.h"]
    assert module_parts("..models", "app/sub/views.py") == ["app", "models"]
    assert module_parts(".", "app/sub/views.py") == ["app", "sub"]
    assert module_parts("../lib/util.js", "web/src/app.js") == ["web", "lib", "util"]
    assert module_parts("  ", "a.py") is None and module_parts("::", "a.rs") is None
    parts = module_parts("django.db", "a.py")
    assert parts is not None
    parts.append("mutated")  # callers may extend the list: the cached answer must not change
    assert module_parts("django.db", "a.py") == ["django", "db"]


def test_an_index_of_an_older_schema_is_migrated_in_place(repo, open_service):
    """Schema 8 makes edges_dst a partial index of the resolved edges: an index written by schema
    7 gets it on open, keeps its rows, and answers callers from it."""
    from coderag_tui.store.db import open_database
    from coderag_tui.store.schema import SCHEMA_VERSION

    service = open_service(repo)
    db = service.db
    path = db.path
    before = db.rows("SELECT * FROM edges ORDER BY id")
    with db.transaction():  # as schema 7 left it
        db.execute("DROP INDEX edges_dst")
        db.execute("CREATE INDEX edges_dst ON edges(dst, kind)")
        db.execute("ALTER TABLE messages DROP COLUMN outcome")  # (added by schema 9)
        db.execute("ALTER TABLE messages DROP COLUMN invalid")
        db.execute("ALTER TABLE messages DROP COLUMN opening")  # (added by schema 12)
        db.execute("ALTER TABLE conversations DROP COLUMN owner")  # (added by schema 14)
        db.execute("PRAGMA user_version=7")
    service.close()
    db = open_database(path)
    try:
        assert db.schema_version == SCHEMA_VERSION >= 8
        sql = db.scalar("SELECT sql FROM sqlite_master WHERE name='edges_dst'")
        assert "WHERE dst IS NOT NULL" in sql
        assert db.rows("SELECT * FROM edges ORDER BY id") == before
        assert {"outcome", "invalid"} <= {r[1] for r in db.rows("PRAGMA table_info(messages)")}
        query = "EXPLAIN QUERY PLAN SELECT src FROM edges WHERE dst=? AND kind='CALLS'"
        plan = " ".join(r[3] for r in db.execute(query, (1,)))
        assert "edges_dst" in plan
    finally:
        db.close()
    service = CodeRag(repo, Settings(), path)
    try:
        assert {e.unit.qualname for e in service.callers("helper") if e.unit} == {"Base.step", "Child.step"}
    finally:
        service.close()
