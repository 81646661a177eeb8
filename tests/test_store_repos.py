"""Several repositories in one PostgreSQL database (a real server: pg_server.py), each in a
schema of its own: real git repositories indexed by `coderag index A B C --store URL`,
searched across a chosen set with results naming their repository, each one's status, a
repository read by name without its folder, two folders of the same name, re-indexing one
keeping the others, calls resolved within a repository and imports of another repository's
package linked at query time by the workspace. Then the registry itself (`public.repos`) and
migration 6, which moves a database of the first layout (every repository's rows in shared
tables) into per-repository schemas."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coderag_tui.cli import main
from coderag_tui.errors import StoreError
from coderag_tui.models import EdgeRef, UnitRef
from coderag_tui.service import CodeRag
from coderag_tui.store import embeddings, read, tracked
from coderag_tui.store.backend import open_store
from coderag_tui.workspace import Workspace
from tests.helpers.files import git_init, write_tree
from tests.helpers.store import rows_of
from tests.helpers.workspace import BACKEND, FRONTEND, QUESTION, SHARED


@pytest.fixture
def url(pg_url: str, request: pytest.FixtureRequest) -> str:
    """A fresh database of the session's PostgreSQL (skips where no server starts)."""
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, str]:
    out = {name: write_tree(tmp_path / name, dict(files))
           for name, files in (("shared-lib", SHARED), ("backend", BACKEND), ("frontend", FRONTEND))}
    for root in out.values():
        git_init(root)
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    return {**{k: str(v) for k, v in out.items()}, "config": str(config)}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def index_all(repos: dict[str, str], url: str, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run(capsys, "index", repos["shared-lib"], repos["backend"], repos["frontend"],
                         "--store", url, "--config", repos["config"])
    assert code == 0, err
    return out


def hits(capsys: pytest.CaptureFixture[str], url: str, config: str, query: str, *more: str) -> list[dict[str, Any]]:
    code, out, err = run(capsys, "search", query, "--store", url, "--config", config, "--json", *more)
    assert code == 0, err
    return list(json.loads(out))


def listed(url: str) -> dict[str, Any]:
    from coderag_tui.store.postgres.opening import stored_repositories

    return {r.name: r for r in stored_repositories(url)}


@pytest.fixture
def workspace(url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Iterator[Workspace]:
    """The three repositories indexed into the database, then read by name alone."""
    index_all(repos, url, capsys)
    ws = Workspace([CodeRag.named(url, n, config=repos["config"]) for n in ("shared-lib", "backend", "frontend")])
    yield ws
    ws.close()


# --------------------------------------------------------------------------- the command line
def test_three_repositories_in_one_database_searched_across_a_chosen_set(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    out = index_all(repos, url, capsys)
    assert "== shared-lib" in out and "== backend" in out and "== frontend" in out, out
    there = listed(url)
    assert sorted(there) == ["backend", "frontend", "shared-lib"]
    assert there["backend"].source == repos["backend"]
    assert {p["name"] for p in there["shared-lib"].packages} == {"shared_lib"}  # for the others' imports

    every = hits(capsys, url, repos["config"], QUESTION, "--repo", "shared-lib,backend,frontend")
    named = {(h["repository"], h["path"]) for h in every}
    assert {("backend", "app/checkout.py"), ("shared-lib", "shared_lib/pricing.py")} <= named, every
    code, text, _ = run(capsys, "search", QUESTION, "--repo", "backend,shared-lib", "--store", url,
                        "--config", repos["config"])
    assert code == 0 and "backend:app/checkout.py:" in text and "shared-lib:shared_lib/pricing.py:" in text, text

    some = hits(capsys, url, repos["config"], QUESTION, "--repo", "backend,frontend")
    assert some and {h["repository"] for h in some} <= {"backend", "frontend"}, some
    assert hits(capsys, url, repos["config"], "render the banner title", "--repo", "frontend")[0]["path"] == \
        "src/banner.js"
    by_folder = hits(capsys, url, repos["config"], "loyalty discount", "--repo", repos["shared-lib"])
    assert [h["path"] for h in by_folder][:1] == ["shared_lib/pricing.py"], by_folder

    code, text, _ = run(capsys, "symbol", "apply_discount", "--repo", "shared-lib,backend", "--store", url,
                        "--config", repos["config"])
    assert code == 0 and "shared-lib:shared_lib/pricing.py:4-7" in text, text
    code, _, err = run(capsys, "search", "x", "--store", url, "--repo", "backend,nope", "--config", repos["config"])
    assert code == 2 and "nope" in err and "backend" in err and "frontend, shared-lib" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_the_status_of_each_repository(url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    index_all(repos, url, capsys)
    for name, files in (("shared-lib", 3), ("backend", 1), ("frontend", 2)):
        for where in (name, repos[name]):  # by its name, or by its folder
            code, out, err = run(capsys, "status", "--repo", where, "--store", url, "--config", repos["config"],
                                 "--json")
            assert code == 0, err
            status = json.loads(out)
            assert status["files"] == files and status["db_path"].endswith(f"(repository {name})"), status
            assert status["repo_root"] == where, status  # its folder, or (read by name) its name
    code, out, err = run(capsys, "status", "--repo", "nothing-here", "--store", url, "--config", repos["config"])
    assert code in (1, 2) and "nothing-here" in out + err and len(err.strip().splitlines()) <= 1, (out, err)


def test_a_repository_is_read_by_name_without_its_folder(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    index_all(repos, url, capsys)
    shutil.rmtree(repos["backend"])  # only the database holds it now
    where = ["--repo", "backend", "--store", url, "--config", repos["config"]]
    found = hits(capsys, url, repos["config"], "loyalty discount checkout total", "--repo", "backend")
    assert found and found[0]["path"] == "app/checkout.py", found
    code, out, err = run(capsys, "context", "checkout total", "--json", *where)
    assert code == 0, err
    pieces = json.loads(out)["pieces"]
    assert any("apply_discount(subtotal, customer.loyalty_years)" in p["text"] for p in pieces), pieces
    code, out, err = run(capsys, "callees", "checkout_total", *where)
    assert code == 0 and "apply_discount" in out, out + err
    service = CodeRag.named(url, "backend", config=repos["config"])
    try:
        assert service.read_lines("app/checkout.py", 6, 7) == ["def checkout_total(cart, customer):",
                                                               '    """The amount a customer pays for a cart, '
                                                               'after the loyalty discount."""']
        assert [f.path for f in service.files()] == ["app/checkout.py"] and service.has_index()
    finally:
        service.close()
    code, _, err = run(capsys, "index", *where)  # nothing on this machine to index
    assert code == 2 and "not on this machine" in err and len(err.strip().splitlines()) == 1, err


def test_two_folders_of_the_same_name_are_two_repositories(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_tree(tmp_path / "team-a" / "app", {"app/main.py": "def start_engine():\n    return 'a'\n"})
    second = write_tree(tmp_path / "team-b" / "app", {"app/main.py": "def start_rocket():\n    return 'b'\n"})
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    for folder in (first, second):
        assert run(capsys, "index", str(folder), "--store", url, "--config", str(config))[0] == 0
    there = listed(url)
    assert sorted(there) == ["app", "app-2"]
    assert (there["app"].source, there["app-2"].source) == (str(first), str(second))
    assert run(capsys, "index", str(second), "--store", url, "--config", str(config))[0] == 0  # again: the same one
    assert sorted(listed(url)) == ["app", "app-2"]
    for name, folder, word in (("app", first, "start_engine"), ("app-2", second, "start_rocket")):
        for where in (name, str(folder)):
            code, out, err = run(capsys, "symbol", word, "--repo", where, "--store", url, "--config", str(config))
            assert code == 0 and "app/main.py:1-2" in out, out + err
    code, out, _ = run(capsys, "symbol", "start_rocket", "--repo", "app", "--store", url, "--config", str(config))
    assert code == 1  # the other one's definition


def test_reindexing_one_repository_keeps_the_others(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    index_all(repos, url, capsys)

    def state(name: str) -> Any:
        store = open_store(url, repo=name)
        try:
            return tracked.file_states(store), store.rows("SELECT id, qualname FROM units ORDER BY id"), \
                store.get_meta("last_update")
        finally:
            store.close()

    kept = {name: state(name) for name in ("shared-lib", "frontend")}
    backend = Path(repos["backend"])
    (backend / "app/checkout.py").write_text(BACKEND["app/checkout.py"] + "\n\ndef gift_wrap(order):\n    return order\n")
    (backend / "app/shipping.py").write_text("def ship(order):\n    return order\n")
    code, out, err = run(capsys, "index", repos["backend"], "--store", url, "--config", repos["config"])
    assert code == 0 and "2 parsed" in out, out + err
    assert {name: state(name) for name in kept} == kept
    store = open_store(url, repo="backend")
    try:
        assert sorted(tracked.file_states(store)) == ["app/checkout.py", "app/shipping.py"]
        assert [u.path for u in read.find_symbols(store, "gift_wrap")] == ["app/checkout.py"]
    finally:
        store.close()


def test_the_configured_workspace_is_indexed_into_and_searched_in_the_database(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    folders = ", ".join(f'"{repos[n]}"' for n in ("shared-lib", "backend"))
    Path(repos["config"]).write_text(f"[embed]\nenabled = false\n[server]\nrepositories = [{folders}]\n")
    code, out, err = run(capsys, "index", "--workspace", "--store", url, "--config", repos["config"])
    assert code == 0 and "== shared-lib" in out and "== backend" in out, out + err
    assert sorted(listed(url)) == ["backend", "shared-lib"]
    found = hits(capsys, url, repos["config"], QUESTION, "--workspace")
    assert {h["repository"] for h in found} == {"backend", "shared-lib"}, found
    some = hits(capsys, url, repos["config"], QUESTION, "--workspace", "--repo", "backend")
    assert {h["repository"] for h in some} == {"backend"}, some


def test_a_git_url_is_cloned_into_its_own_repository_named_without_secrets(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bare = tmp_path / "frontend.git"
    subprocess.run(["git", "clone", "-q", "--bare", repos["frontend"], str(bare)], check=True)
    code, out, err = run(capsys, "index", f"file://{bare}", "--store", url, "--config", repos["config"])
    assert code == 0, err
    assert [(r.name, r.source) for r in listed(url).values()] == [("frontend", f"file://{bare}")]
    assert hits(capsys, url, repos["config"], "render the banner", "--repo", "frontend")[0]["path"] == "src/banner.js"
    # a URL's credentials clone (here: nothing answers) and never reach the database or the screen
    code, out, err = run(capsys, "index", "https://user:s3cret@127.0.0.1:1/acme/web.git", "--store", url,
                         "--config", repos["config"])
    assert code == 2 and "s3cret" not in out + err and len(err.strip().splitlines()) == 1, err
    assert list(listed(url)) == ["frontend"]


# --------------------------------------------------------------------------- across repositories
def test_a_question_whose_code_spans_two_repositories_finds_both(workspace: Workspace) -> None:
    top = workspace.search(QUESTION, 4)
    assert {(h.unit.repo, h.unit.path) for h in top[:2]} == {("backend", "app/checkout.py"),
                                                              ("shared-lib", "shared_lib/pricing.py")}, top
    assert all(h.unit.repo != "frontend" for h in top)


def test_context_and_callers_across_two_repositories_of_the_database(workspace: Workspace) -> None:
    """The context of a question whose code spans two repositories holds both, read through
    connections of other threads too; callers across them come from the workspace's links."""
    import threading

    _, context = workspace.context(QUESTION, max_tokens=2000, repos=["shared-lib", "backend"])
    paths = {p.path for p in context.pieces}
    assert {"backend:app/checkout.py", "shared-lib:shared_lib/pricing.py"} <= paths or \
        {"app/checkout.py", "shared_lib/pricing.py"} <= paths, paths
    seen: list[set[str]] = []
    worker = threading.Thread(target=lambda: seen.append(
        {h.unit.repo for h in workspace.search(QUESTION, 10, repos=["shared-lib", "backend"])}))
    worker.start()
    worker.join()
    assert seen == [{"backend", "shared-lib"}]  # the other thread's connections: the same two
    callers = workspace.structural("called_by", "apply_discount", ["shared-lib", "backend"])
    where = {(e.unit.repo, e.unit.qualname, e.line) for e in callers if e.unit is not None}  # type: ignore[union-attr]
    assert {("backend", "checkout_total", 9), ("backend", "refund", 13)} <= where, callers


def test_imports_of_another_repositorys_package_link_into_it(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    # the importing repository first: its imports link once the package's repository comes
    for name in ("backend", "shared-lib", "frontend"):
        assert run(capsys, "index", repos[name], "--store", url, "--config", repos["config"])[0] == 0
    where = ["--repo", "shared-lib,backend", "--store", url, "--config", repos["config"]]
    code, out, err = run(capsys, "callers", "apply_discount", "--json", *where)
    assert code == 0, err
    found = {(c["repository"] if "repository" in c else c.get("repo"), c["qualname"], c["line"]) for c in json.loads(out)}
    assert {("backend", "checkout_total", 9), ("backend", "refund", 13)} <= found, found
    ws = Workspace([CodeRag.named(url, n, config=repos["config"]) for n in ("shared-lib", "backend")])
    try:
        importers = {(u.repo, u.path) for u in ws.structural("files_importing", "shared_lib/pricing.py")
                     if isinstance(u, UnitRef)}
        assert ("backend", "app/checkout.py") in importers, importers
        calls = ws.structural("calls", "checkout_total", ["backend", "shared-lib"])
        linked = [e for e in calls if isinstance(e, EdgeRef) and e.name == "apply_discount"]
        assert [(e.unit.repo, e.unit.path) for e in linked if e.unit] == [
            ("shared-lib", "shared_lib/pricing.py")], calls
    finally:
        ws.close()
    # the library changes: its definitions are new rows, the calls into them are linked again
    lib = Path(repos["shared-lib"])
    (lib / "shared_lib/pricing.py").write_text("# moved down a line\n" + SHARED["shared_lib/pricing.py"])
    assert run(capsys, "index", repos["shared-lib"], "--store", url, "--config", repos["config"])[0] == 0
    code, out, _ = run(capsys, "callers", "apply_discount", "--json", *where)
    assert code == 0 and {c["qualname"] for c in json.loads(out)} >= {"checkout_total", "refund"}
    # the module leaves the library: the calls through it are open again
    (lib / "shared_lib/pricing.py").unlink()
    (lib / "shared_lib/__init__.py").write_text('"""Shared helpers."""\n')
    assert run(capsys, "index", repos["shared-lib"], "--store", url, "--config", repos["config"])[0] == 0
    code, out, _ = run(capsys, "callers", "apply_discount", *where)
    assert code == 1, out


def test_a_js_package_of_another_repository_links_its_require_and_calls(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kit = write_tree(tmp_path / "ui-kit", {
        "package.json": '{"name": "@acme/ui-kit", "main": "lib/index.js"}\n',
        "lib/index.js": "function formatPrice(cents) {\n  return '$' + (cents / 100).toFixed(2);\n}\n"
                        "module.exports = { formatPrice };\n"})
    web = write_tree(tmp_path / "web", {
        "package.json": '{"name": "@acme/web"}\n',
        "src/cart.js": "const { formatPrice } = require('@acme/ui-kit');\n\nfunction cartLabel(cart) {\n"
                       "  return 'Total: ' + formatPrice(cart.total);\n}\nmodule.exports = { cartLabel };\n"})
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    for root in (kit, web):
        git_init(root)
    assert run(capsys, "index", str(web), str(kit), "--store", url, "--config", str(config))[0] == 0
    shutil.rmtree(kit)  # the packages come from the database, not the folder
    ws = Workspace([CodeRag.named(url, n, config=str(config)) for n in ("ui-kit", "web")])
    try:
        callers = ws.structural("called_by", "formatPrice")
        assert [(e.unit.repo, e.unit.name) for e in callers if e.unit] == [("web", "cartLabel")]  # type: ignore[union-attr]
        importers = {(u.repo, u.path) for u in ws.structural("files_importing", "lib/index.js")}  # type: ignore[union-attr]
        assert importers == {("web", "src/cart.js")}
    finally:
        ws.close()


def test_calls_and_tests_resolve_within_their_repository(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each repository's graph is resolved within it: a name another repository defines is not
    this one's call, and re-indexing one keeps the other's TESTS edges."""
    lib = write_tree(tmp_path / "lib", {
        "lib/tools.py": "def only_in_lib():\n    return 1\n",
        "tests/test_tools.py": "from lib.tools import only_in_lib\n\n\ndef test_only():\n"
                               "    assert only_in_lib() == 1\n"})
    app = write_tree(tmp_path / "app", {
        "app/main.py": "from app.local import local\n\n\ndef main():\n    return only_in_lib() + local()\n",
        "app/local.py": "def local():\n    return 2\n"})
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    assert run(capsys, "index", str(lib), str(app), "--store", url, "--config", str(config))[0] == 0
    in_lib, in_app = open_store(url, repo="lib"), open_store(url, repo="app")
    try:
        main_unit = [u for u in read.find_symbols(in_app, "main") if u.kind == "function"][0]
        called = {e.name: e.unit for e in read.callees(in_app, [main_unit.id])}
        assert called["local"] is not None and called["local"].path == "app/local.py"
        assert called["only_in_lib"] is None  # another repository's definition is not this one's call
        target = read.find_symbols(in_lib, "only_in_lib")[0]
        tests = read.callers(in_lib, [target.id], kinds=("TESTS",))
        assert [e.unit.name for e in tests if e.unit] == ["test_only"]
        (app / "app" / "local.py").write_text("def local():\n    return 3\n")
        assert run(capsys, "index", str(app), "--store", url, "--config", str(config))[0] == 0
        assert [e.unit.name for e in read.callers(in_lib, [target.id], kinds=("TESTS",)) if e.unit] == ["test_only"]
    finally:
        in_lib.close()
        in_app.close()


def test_keyword_and_vector_searches_keep_to_their_repository(url: str) -> None:
    from coderag_tui.store.write import write_file

    a = open_store(url, source="/src/a", create=True)
    b = open_store(url, source="/src/b", create=True)
    try:
        for store, text in ((a, "def parse_invoice(text):\n    return text\n"),
                            (b, "def parse_invoice_line(text):\n    return text.split()\n")):
            with store.transaction():
                write_file(store, *rows_of("m.py", text))
            store.refresh_statistics()
            pending, _ = embeddings.pending_chunks(store)
            assert pending  # each repository embeds its own chunks
            store.ensure_model_table("test-model", 8)
            hashes = [h for _, h in pending]
            store.write_vectors(hashes, np.random.default_rng(len(hashes)).normal(size=(len(hashes), 8)), "test-model")
        for store, name in ((a, "parse_invoice"), (b, "parse_invoice_line")):
            found = store.keyword_rows(["parse", "invoice"], 10)
            assert [read.get_unit(store, r[1]).name for r in found] == [name]  # type: ignore[union-attr]
            assert len(store.knn_rows(np.ones(8, dtype=np.float32), 10)) == embeddings.vector_count(store) == 1
            assert read.counts(store).files == 1 and read.counts(store).vectors == read.counts(store).chunks
    finally:
        a.close()
        b.close()


# --------------------------------------------------------------------------- the registry
def test_the_registry_of_repositories(url: str, tmp_path: Path) -> None:
    import psycopg

    from coderag_tui.store.postgres import repos
    from coderag_tui.store.postgres.layout import schema_name
    from coderag_tui.store.write import write_file

    one = open_store(url, source="/src/one", create=True)
    two = open_store(url, source="/elsewhere/one", create=True)  # the same folder name, elsewhere
    try:
        assert (one.repo.name, two.repo.name) == ("one", "one-2")  # type: ignore[attr-defined]
        for store, body in ((one, "def helper():\n    return 1\n"), (two, "def helper():\n    return 2\n")):
            with store.transaction():
                write_file(store, *rows_of("app/util.py", body))
        assert tracked.file_states(one).keys() == tracked.file_states(two).keys() == {"app/util.py"}
        from coderag_tui.store.write import delete_file

        with one.transaction():
            assert delete_file(one, "app/util.py") is not None and delete_file(one, "app/util.py") is None
        assert tracked.is_empty(one) and list(tracked.file_states(two)) == ["app/util.py"]
        one.set_packages([{"name": "one", "language": "python", "base": "one"}])
    finally:
        one.close()
        two.close()
    with psycopg.connect(url, autocommit=True) as conn:
        found = repos.by_name(conn, "one")
        assert found.source == "/src/one" and found.packages == ({"name": "one", "language": "python", "base": "one"},)
        assert repos.by_source(conn, "/elsewhere/one").name == "one-2"  # type: ignore[union-attr]
        assert repos.by_source(conn, "/nowhere") is None
        assert repos.add(conn, "other-name", "/src/one").name == "one"  # a source is added once
        with pytest.raises(StoreError) as caught:
            repos.by_name(conn, "three")
        assert "one, one-2" in caught.value.one_line()
        for bad in ("a,b", "a/b", "a:b", "", "x" * 201, "tab\there"):
            with pytest.raises(StoreError, match="cannot name a repository"):
                repos.valid_name(bad)
        assert repos.name_for("https://host/acme/My Web!.git") == "My-Web"
        assert repos.name_for("/") == "repo"
        repos.drop(conn, found.id)
        assert [r.name for r in repos.listing(conn)] == ["one-2"]
        assert conn.execute("SELECT to_regnamespace(%s)", (schema_name(found.id),)).fetchone() == (None,)
    with pytest.raises(StoreError, match="no repository 'one'"):
        open_store(url, repo="one")
    with pytest.raises(StoreError, match="is not indexed"):
        open_store(url, source="/src/three")
    with pytest.raises(StoreError, match="index file holds one repository"):
        open_store(tmp_path / "index.db", repo="x")


# --------------------------------------------------------------------------- migration 6
def _old_rows(conn: Any, repo_id: int, files: dict[str, str]) -> None:
    """A repository's rows as the first layout kept them: shared tables, `files.repo_id`, ids
    from the shared sequences, keyword columns and postings, written by raw SQL."""
    from coderag_tui.store.postgres.keywords import POSTINGS_SELECT, words

    for path, text in files.items():
        rows, meta = rows_of(path, text)
        file_id = conn.execute(
            "INSERT INTO files(repo_id, path, language, hash, size, mtime_ns, lines, structured, has_errors, "
            "indexed_at) VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id",
            (repo_id, path, rows.language, meta.hash, meta.size, 0, rows.lines, rows.structured, rows.has_errors,
             1000.0 + repo_id)).fetchone()[0]
        ids = [conn.execute("SELECT nextval('unit_ids')").fetchone()[0] for _ in rows.units]
        for u in rows.units:
            conn.execute("INSERT INTO units(id, file_id, parent_id, kind, name, qualname, signature, params, "
                         "return_type, decorators, docstring, bases, start_line, end_line, is_test) "
                         "VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                         (ids[u[0]], file_id, None if u[1] is None else ids[u[1]], *u[2:13], bool(u[13])))
        for s, d, k, n, r, ln, a in rows.edges:
            conn.execute("INSERT INTO edges(src, src_file, dst, kind, name, receiver, line, argc) "
                         "VALUES(%s,%s,%s,%s,%s,%s,%s,%s)", (ids[s], file_id, None if d is None else ids[d], k, n, r,
                                                             ln, a))
        for module, names, line in rows.imports:
            conn.execute("INSERT INTO imports(file_id, module, names, line) VALUES(%s,%s,%s,%s)",
                         (file_id, module, names, line))
        for c, (names, pwords, sig, doc, extra) in zip(rows.chunks, rows.fts, strict=True):
            conn.execute("INSERT INTO chunks(id, file_id, unit_id, start_line, end_line, node_kinds, scope, hash, "
                         "header, text, kw_names, kw_meta, kw_code) VALUES(nextval('chunk_ids'),%s,%s,%s,%s,%s,%s,%s,"
                         "%s,%s,%s,%s,%s)", (file_id, ids[c[0]], *c[1:], words(names), words(pwords, sig, doc),
                                             words(c[7], extra)))
        conn.execute(f"INSERT INTO keyword_postings(term, impact, chunk_id) {POSTINGS_SELECT} WHERE c.file_id = %s",
                     (file_id,))
    conn.execute("INSERT INTO skips(repo_id, path, reason) VALUES(%s, 'logo.png', 'binary')", (repo_id,))
    # the graph as the first layout's resolver left it: each call at the function of its name
    conn.execute("UPDATE edges e SET dst = (SELECT min(u.id) FROM units u JOIN files f ON f.id = u.file_id "
                 "WHERE f.repo_id = %s AND u.name = e.name AND u.kind = 'function') WHERE e.kind = 'CALLS' "
                 "AND e.src_file IN (SELECT id FROM files WHERE repo_id = %s)", (repo_id, repo_id))


def test_migration_6_moves_the_shared_tables_into_each_repositorys_schema(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from coderag_tui.store.postgres.schema import MIGRATIONS, MOVE_MIGRATION
    from coderag_tui.store.postgres.store import vector_literal

    assert MOVE_MIGRATION == 6
    with psycopg.connect(url, autocommit=True) as conn:  # the first layout, as coderag left it at schema 5
        for sql in MIGRATIONS[:5]:
            conn.execute(sql.encode())
        conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '5')")
        conn.execute("INSERT INTO repos(name, source) VALUES('lib', '/src/lib')")  # id 2 (1: the nameless one)
        conn.execute("INSERT INTO repos(name, source) VALUES('empty', %s)", (str(tmp_path / "empty"),))  # no rows yet
        _old_rows(conn, 1, {"old.py": "def legacy_total(items):\n    return sum(items)\n"})
        _old_rows(conn, 2, {"lib/money.py": "def parse_amount(text):\n    return float(text)\n\n\n"
                                            "def deposit(text):\n    return parse_amount(text)\n",
                            "lib/cart.py": "from lib.money import parse_amount\n\n\n"
                                           "def cart_total(prices):\n    return sum(parse_amount(p) for p in prices)\n"})
        conn.execute("INSERT INTO keyword_df SELECT term, count(*) FROM keyword_postings GROUP BY term")
        hashes = [str(h) for (h,) in conn.execute("SELECT hash FROM chunks ORDER BY id").fetchall()]
        rng = np.random.default_rng(5)
        vecs = rng.normal(size=(len(hashes), 384)).astype(np.float32)
        for h, v in zip(hashes, vecs, strict=True):
            conn.execute("INSERT INTO vectors(hash, model, embedding) VALUES(%s, 'm', %s)", (h, vector_literal(v)))
        conn.execute("INSERT INTO meta(key, value) VALUES('embed_model', 'm'), ('resolve_pending@2', '1')")
        old = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
               for t in ("files", "units", "chunks", "edges", "keyword_postings", "vectors", "imports")}
        old_units = conn.execute("SELECT u.id, u.qualname FROM units u JOIN files f ON f.id = u.file_id "
                                 "WHERE f.repo_id = 2 ORDER BY u.id").fetchall()

    lib = open_store(url, repo="lib")  # migrates: each repository into its schema
    try:
        assert lib.rows("SELECT id, qualname FROM units ORDER BY id") == old_units  # ids kept
        # the learned ranker's inbound counts, from the moved edges (cart_total calls parse_amount)
        assert lib.rows("SELECT f.path, i.refs, i.tests FROM file_inbound i JOIN files f ON f.id = i.file_id") == [
            ("lib/money.py", 1, 0)]
        assert sorted(tracked.file_states(lib)) == ["lib/cart.py", "lib/money.py"]
        assert tracked.skips(lib) == {"logo.png": ("binary", -1, -1)}
        assert lib.get_meta("resolve_pending") == "1" and float(lib.get_meta("last_update")) == 1002.0
        assert lib.get_meta("embed_model") == "m" and lib.get_meta("embed_dim") == "384"
        assert lib.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
                          "AND indexname = 'vectors_hnsw'") == 1
        new = {t: int(lib.scalar(f"SELECT count(*) FROM {t}")) for t in old}
        legacy = open_store(url, repo="repo-1")  # the nameless repository got a name
        try:
            moved = {t: new[t] + int(legacy.scalar(f"SELECT count(*) FROM {t}")) for t in old}
            assert moved == old, (moved, old)
            assert [u.qualname for u in read.find_symbols(legacy, "legacy_total")] == ["legacy_total"]
        finally:
            legacy.close()
        # what the moved index answers: keywords, vectors, symbols, the graph (resolved again)
        [top] = lib.keyword_rows(["cart", "total"], 1)
        assert read.get_unit(lib, top[1]).path == "lib/cart.py"  # type: ignore[union-attr]
        by_hash = dict(zip(hashes, vecs, strict=True))
        some = str(lib.scalar("SELECT hash FROM chunks ORDER BY id LIMIT 1"))
        assert lib.knn_rows(by_hash[some], 1)[0][0] == some
        assert lib.vectors_for_hashes([some])[some].shape == (384,)
    finally:
        lib.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM public.meta WHERE key = 'schema_version'").fetchone() == ("6",)
        assert conn.execute("SELECT to_regclass('public.files'), to_regclass('public.units')").fetchone() == (
            None, None)
        assert conn.execute("SELECT count(*) FROM public.meta").fetchone() == (1,)
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    # a repository registered before the move but never written (an index that died at its start)
    empty = write_tree(tmp_path / "empty", {"e.py": "def empty_handed():\n    return None\n"})
    assert main(["index", str(empty), "--store", url, "--config", str(config)]) == 0
    assert sorted(listed(url)) == ["empty", "lib", "repo-1"]
    service = CodeRag.named(url, "lib", config=str(config))
    try:
        assert service.has_index()
        found = service.search("total of the cart prices")
        assert found and found[0].unit.name == "cart_total", found
        amount = service.callers("parse_amount")
        assert {e.unit.name for e in amount if e.unit} >= {"deposit"}
    finally:
        service.close()


def test_a_role_that_only_reads_searches_and_cannot_write(pg_url: str,
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest) -> None:
    """A team's readers connect as a role that may read every repository (pg_read_all_data):
    searches work; indexing is refused in one line, without the password."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with psycopg.connect(request.getfixturevalue("pg_server"), autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'coderag_reader'").fetchone():
            admin.execute("CREATE ROLE coderag_reader LOGIN PASSWORD 'r3ader-pw' IN ROLE pg_read_all_data")
    assert run(capsys, "index", repos["backend"], "--store", url, "--config", repos["config"])[0] == 0
    parts = urlsplit(url)
    reader = urlunsplit((parts.scheme, f"coderag_reader:r3ader-pw@{parts.hostname or ''}"
                         + (f":{parts.port}" if parts.port else ""), parts.path, parts.query, ""))
    found = hits(capsys, reader, repos["config"], "loyalty discount", "--repo", "backend")
    assert found[0]["path"] == "app/checkout.py"
    for args in (["index", repos["backend"]], ["index", repos["frontend"]]):  # an update; a new repository
        code, out, err = run(capsys, *args, "--store", reader, "--config", repos["config"])
        assert code == 2 and "permission denied" in err and len(err.strip().splitlines()) == 1, err
        assert "r3ader-pw" not in out + err and "unexpected" not in err
    assert sorted(listed(url)) == ["backend"]
