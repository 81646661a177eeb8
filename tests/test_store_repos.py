"""Several repositories in one PostgreSQL database (a real server: pg_server.py): three real git
repositories indexed into one database by `coderag index A B C --store URL`, searched across all
or a chosen set with results naming their repository, re-indexed one at a time, calls resolved
within a repository, and imports of a package another repository defines linked into it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from coderag_tui.store_service import StoreService
from coderag_tui.workspace.store_repos import _source

from coderag_tui.cli import main
from coderag_tui.errors import StoreError
from coderag_tui.store.backend import open_store
from coderag_tui.store.postgres.schema import MIGRATIONS
from tests.conftest import git_init, write_tree
from tests.test_store_backends import rows_of
from tests.test_workspace import BACKEND, FRONTEND, QUESTION, SHARED

from .pg_server import pg_server, pg_url  # noqa: F401 (fixtures)


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    """A fresh database of the session's PostgreSQL (skips where no server starts)."""
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, str]:
    out = {name: write_tree(tmp_path / name, files)
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


def test_three_repositories_in_one_database_searched_across_all_or_some(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    out = index_all(repos, url, capsys)
    assert "== shared-lib" in out and "== backend" in out and "== frontend" in out, out
    store = open_store(url)
    try:
        listed = {r.name: r for r in store.repositories()}
        assert sorted(listed) == ["backend", "frontend", "shared-lib"]
        assert listed["backend"].source == repos["backend"] and listed["backend"].files == 1
        assert store.files() == []  # the nameless repository of a database used without names
    finally:
        store.close()

    found = hits(capsys, url, repos["config"], QUESTION)  # every repository
    named = {(h["repository"], h["path"]) for h in found}
    assert {("backend", "app/checkout.py"), ("shared-lib", "shared_lib/pricing.py")} <= named, found
    code, text, _ = run(capsys, "search", QUESTION, "--store", url, "--config", repos["config"])
    assert code == 0 and "backend:app/checkout.py:" in text and "shared-lib:shared_lib/pricing.py:" in text, text

    some = hits(capsys, url, repos["config"], QUESTION, "--repo", "backend,frontend")
    assert some and {h["repository"] for h in some} <= {"backend", "frontend"}, some
    assert hits(capsys, url, repos["config"], "render the banner title", "--repo", "frontend")[0]["path"] == \
        "src/banner.js"
    by_folder = hits(capsys, url, repos["config"], "loyalty discount", "--repo", repos["shared-lib"])
    assert {h["repository"] for h in by_folder} == {"shared-lib"}, by_folder

    code, text, _ = run(capsys, "symbol", "apply_discount", "--store", url, "--config", repos["config"])
    assert code == 0 and "shared-lib:shared_lib/pricing.py:4-7" in text, text
    code, _, err = run(capsys, "search", "x", "--store", url, "--repo", "backend,nope", "--config", repos["config"])
    assert code != 0 and "no repository 'nope'" in err and "backend, frontend, shared-lib" in err, err
    assert len(err.strip().splitlines()) <= 2, err


def test_the_configured_workspace_is_indexed_into_and_searched_in_the_database(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    listed = ", ".join(f'"{repos[n]}"' for n in ("shared-lib", "backend"))
    Path(repos["config"]).write_text(f"[embed]\nenabled = false\n[server]\nrepositories = [{listed}]\n")
    code, out, err = run(capsys, "index", "--workspace", "--store", url, "--config", repos["config"])
    assert code == 0 and "== shared-lib" in out and "== backend" in out, out + err
    index_all(repos, url, capsys)  # the frontend too: in the database, not in the workspace
    found = hits(capsys, url, repos["config"], QUESTION, "--workspace")
    assert {h["repository"] for h in found} == {"backend", "shared-lib"}, found
    some = hits(capsys, url, repos["config"], QUESTION, "--workspace", "--repo", "backend")
    assert {h["repository"] for h in some} == {"backend"}, some
    code, _, err = run(capsys, "search", "x", "--workspace", "--repo", "frontend", "--store", url,
                       "--config", repos["config"])
    assert code != 0 and "no repository 'frontend'" in err, err


def test_a_question_whose_code_spans_two_repositories_finds_both(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    index_all(repos, url, capsys)
    service = StoreService.open(url, None, repos["config"])
    try:
        top = service.search(QUESTION, 4)
        assert {(h.unit.repo, h.unit.path) for h in top[:2]} == {("backend", "app/checkout.py"),
                                                                  ("shared-lib", "shared_lib/pricing.py")}, top
        assert all(h.unit.repo != "frontend" for h in top)
    finally:
        service.close()


def test_context_and_callers_across_two_repositories_of_the_database(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """The context of a question whose code spans two repositories holds both, read through
    connections of other threads too (each keeps the chosen repositories)."""
    import threading

    index_all(repos, url, capsys)
    service = StoreService.open(url, "shared-lib,backend", repos["config"])
    try:
        context = service.context(QUESTION, max_tokens=2000)
        paths = {p.path for p in context.pieces}
        assert "app/checkout.py" in paths and "shared_lib/pricing.py" in paths, paths
        seen: list[set[str | None]] = []
        worker = threading.Thread(target=lambda: seen.append({h.unit.repo for h in service.search(QUESTION, 10)}))
        worker.start()
        worker.join()
        assert seen == [{"backend", "shared-lib"}]  # the other thread's connection: the same two
        assert [e.unit.repo for e in service.callers("apply_discount") if e.unit] == ["backend"] * 2
    finally:
        service.close()


def test_reindexing_one_repository_keeps_the_others(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    index_all(repos, url, capsys)
    before = {name: open_store(url, repo=name) for name in ("shared-lib", "backend", "frontend")}
    try:
        kept = {n: (s.file_hashes(), [u.id for u in s.file_outline(next(iter(s.files())))]) for n, s in before.items()}
    finally:
        for s in before.values():
            s.close()
    backend = Path(repos["backend"])
    (backend / "app/checkout.py").write_text(BACKEND["app/checkout.py"] + "\n\ndef gift_wrap(order):\n    return order\n")
    (backend / "app/shipping.py").write_text("def ship(order):\n    return order\n")
    code, out, err = run(capsys, "index", repos["backend"], "--store", url, "--config", repos["config"])
    assert code == 0 and "2 parsed" in out, out + err
    for name in ("shared-lib", "frontend"):
        store = open_store(url, repo=name)
        try:
            assert (store.file_hashes(), [u.id for u in store.file_outline(next(iter(store.files())))]) == kept[name]
        finally:
            store.close()
    store = open_store(url, repo="backend")
    try:
        assert store.files() == ["app/checkout.py", "app/shipping.py"]
        assert [u.repo for u in store.find_symbols("gift_wrap")] == ["backend"]
    finally:
        store.close()


def test_paths_are_per_repository_and_deletes_keep_to_one(url: str) -> None:
    base = open_store(url)
    one, two = base.repository("one", source="/src/one"), base.repository("two", source="/src/two")  # type: ignore[attr-defined]
    try:
        for store, body in ((one, "def helper():\n    return 1\n"), (two, "def helper():\n    return 2\n")):
            store.write_file(*rows_of("app/util.py", body))
        assert one.files() == two.files() == ["app/util.py"]
        assert one.delete_file("app/util.py") and not one.delete_file("app/util.py")
        assert one.files() == [] and two.files() == ["app/util.py"]
        assert two.file_outline("app/util.py")[0].repo == "two"
        assert base.repository("one", source="/src/one").repo_id == one.repo_id  # type: ignore[attr-defined]
        assert base.repository("one", source="/elsewhere/one").repo == "one-2"  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match="only reads"):
            base.across(None).write_file(*rows_of("a.py", "x = 1\n"))  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match="cannot name a repository"):
            base.repository("a,b", source="/src/ab")  # type: ignore[attr-defined]
    finally:
        base.close()


def test_calls_resolve_within_their_repository(url: str) -> None:
    base: Any = open_store(url)
    lib, app = base.repository("lib", source="/src/lib"), base.repository("app", source="/src/app")
    try:
        lib.write_file(*rows_of("lib/tools.py", "def only_in_lib():\n    return 1\n\n\ndef use():\n"
                                                "    return only_in_lib()\n"))
        app.write_file(*rows_of("app/main.py", "def main():\n    return only_in_lib() + local()\n"))
        app.write_file(*rows_of("app/local.py", "def local():\n    return 2\n"))
        lib.link_calls()
        app.link_calls()
        main_unit = app.find_symbols("main")[0]
        called = {e.name: e.unit for e in app.callees([main_unit.id])}
        assert called["local"] is not None and called["local"].repo == "app"
        assert called["only_in_lib"] is None  # another repository's definition is not this one's call
        use = lib.find_symbols("use")[0]
        assert [(e.unit.repo, e.unit.name) for e in lib.callees([use.id]) if e.unit] == [("lib", "only_in_lib")]
    finally:
        base.close()


def test_the_graph_resolver_keeps_to_the_repository_it_indexes(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`index --store` resolves each repository's graph within it: a name another repository
    defines is not this one's call, and re-indexing one keeps the other's TESTS edges."""
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
    base: Any = open_store(url)
    try:
        in_lib, in_app = base.repository("lib"), base.repository("app")
        main_unit = in_app.find_symbols("main")[0]
        called = {e.name: e.unit for e in in_app.callees([main_unit.id])}
        assert called["local"] is not None and called["local"].repo == "app"
        assert called["only_in_lib"] is None  # another repository's definition is not this one's call
        target = in_lib.find_symbols("only_in_lib")[0]
        assert [e.unit.name for e in in_lib.callers([target.id], kinds=("TESTS",)) if e.unit] == ["test_only"]
        (app / "app" / "local.py").write_text("def local():\n    return 3\n")
        assert run(capsys, "index", str(app), "--store", url, "--config", str(config))[0] == 0
        assert [e.unit.name for e in in_lib.callers([target.id], kinds=("TESTS",)) if e.unit] == ["test_only"]
    finally:
        base.close()


def test_keyword_and_vector_searches_keep_to_the_chosen_repositories(url: str) -> None:
    base: Any = open_store(url)
    a, b = base.repository("a", source="/src/a"), base.repository("b", source="/src/b")
    try:
        a.write_file(*rows_of("m.py", "def parse_invoice(text):\n    return text\n"))
        b.write_file(*rows_of("m.py", "def parse_invoice_line(text):\n    return text.split()\n"))
        for store in (a, b):
            pending = store.chunks_without_vector("test-model")
            assert pending  # each repository embeds its own chunks
            rng = np.random.default_rng(len(store.repo))
            store.set_vectors("test-model", [h for h, _ in pending], rng.normal(size=(len(pending), 384)))
        assert {h.path for h in a.keyword_search(["parse", "invoice"])} == {"m.py"}
        assert {a.get_unit(h.unit_id).repo for h in a.keyword_search(["parse", "invoice"])} == {"a"}
        both = base.across(["a", "b"])
        assert {both.get_unit(h.unit_id).repo for h in both.keyword_search(["parse", "invoice"])} == {"a", "b"}
        assert sorted(both.files()) == ["a:m.py", "b:m.py"] and both.counts().files == 2
        probe = np.random.default_rng(1).normal(size=384)
        assert {b.get_unit(h.unit_id).repo for h in b.vector_search(probe, "test-model")} == {"b"}
        assert {both.get_unit(h.unit_id).repo for h in both.vector_search(probe, "test-model")} == {"a", "b"}
        assert [u.repo for u in both.find_symbols("parse_invoice")][:1] == ["a"]
        assert a.counts().files == 1 and a.counts().vectors == a.counts().chunks
    finally:
        base.close()


def test_imports_of_another_repositorys_package_link_into_it(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    # the importing repository first: its imports link once the package's repository comes
    for name in ("backend", "shared-lib", "frontend"):
        assert run(capsys, "index", repos[name], "--store", url, "--config", repos["config"])[0] == 0
    backend: Any = open_store(url, repo="backend")
    shared: Any = open_store(url, repo="shared-lib")
    try:
        checkout = backend.find_symbols("app/checkout.py")[0]
        imports = {e.name: e.unit for e in backend.callees([checkout.id], ("IMPORTS",))}
        assert (imports["shared_lib.pricing"].repo, imports["shared_lib.pricing"].path) == \
            ("shared-lib", "shared_lib/pricing.py")
        assert (imports["shared_lib"].repo, imports["shared_lib"].path) == ("shared-lib", "shared_lib/__init__.py")
        pricing = shared.find_symbols("shared_lib/pricing.py")[0]
        importers = {(e.unit.repo, e.unit.path) for e in shared.callers([pricing.id], ("IMPORTS",))}
        assert ("backend", "app/checkout.py") in importers, importers
        # calls through those imports reach the definition there: `callers` shows them
        discount = [u for u in shared.find_symbols("apply_discount") if u.kind == "function"][0]
        callers = {(e.unit.repo, e.unit.qualname, e.line) for e in shared.callers([discount.id])}
        assert {("backend", "checkout_total", 9), ("backend", "refund", 13)} <= callers, callers
        # the library's own import of its own module is not another repository's
        init = shared.find_symbols("shared_lib/__init__.py")[0]
        own = [e for e in shared.callees([init.id], ("IMPORTS",)) if e.unit is not None]
        assert all(e.unit.repo == "shared-lib" for e in own)
    finally:
        backend.close()
        shared.close()
    # the library changes: its definitions are new rows, the calls into them are linked again
    lib = Path(repos["shared-lib"])
    (lib / "shared_lib/pricing.py").write_text("# moved down a line\n" + SHARED["shared_lib/pricing.py"])
    assert run(capsys, "index", repos["shared-lib"], "--store", url, "--config", repos["config"])[0] == 0
    shared = open_store(url, repo="shared-lib")
    try:
        discount = [u for u in shared.find_symbols("apply_discount") if u.kind == "function"][0]
        assert discount.start_line == 5
        assert {e.unit.qualname for e in shared.callers([discount.id])} >= {"checkout_total", "refund"}
    finally:
        shared.close()
    # the module leaves the library: the import is open again, the others stay
    (lib / "shared_lib/pricing.py").unlink()
    assert run(capsys, "index", repos["shared-lib"], "--store", url, "--config", repos["config"])[0] == 0
    backend = open_store(url, repo="backend")
    try:
        checkout = backend.find_symbols("app/checkout.py")[0]
        imports = {e.name: e.unit for e in backend.callees([checkout.id], ("IMPORTS",))}
        assert imports["shared_lib.pricing"] is None and imports["shared_lib"].repo == "shared-lib"
        assert all(e.unit is None for e in backend.callees([backend.find_symbols("checkout_total")[0].id])
                   if e.name == "apply_discount")  # its definition left with the module
    finally:
        backend.close()


def test_a_git_url_is_cloned_into_its_own_repository_named_without_secrets(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bare = tmp_path / "frontend.git"
    subprocess.run(["git", "clone", "-q", "--bare", repos["frontend"], str(bare)], check=True)
    code, out, err = run(capsys, "index", f"file://{bare}", "--store", url, "--config", repos["config"])
    assert code == 0, err
    store = open_store(url)
    try:
        assert [(r.name, r.source) for r in store.repositories()] == [("frontend", f"file://{bare}")]
    finally:
        store.close()
    assert "s3cret" not in _source("https://user:s3cret@github.com/acme/web.git")
    # a URL's credentials clone, and never reach the database
    service = StoreService.open(url, "https://user:s3cret@github.com/acme/web.git", repos["config"])
    try:
        assert service.display_name == "web" and not service.has_index()
    finally:
        service.close()


def test_a_database_written_before_repositories_had_names_is_adopted(
        url: str, repos: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # schema 2, as an older coderag left it
        for sql in MIGRATIONS[:2]:
            conn.execute(sql.encode())
        conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '2')")
        conn.execute("INSERT INTO files(path, language, hash, size, mtime_ns, indexed_at) "
                     "VALUES('old.py', 'python', 'h', 1, 0, 0)")
    old: Any = open_store(url)  # migrates: its rows are the nameless repository's
    try:
        assert old.files() == ["old.py"] and old.schema_version == len(MIGRATIONS)
    finally:
        old.close()
    assert run(capsys, "index", repos["backend"], "--store", url, "--config", repos["config"])[0] == 0
    store: Any = open_store(url)
    try:
        assert [(r.name, r.files) for r in store.repositories()] == [("backend", 1)]
        assert store.repository("backend").files() == ["app/checkout.py"]
    finally:
        store.close()


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
    store: Any = open_store(url, repo="ui-kit")
    try:
        module = store.find_symbols("lib/index.js")[0]
        assert {(e.unit.repo, e.unit.path) for e in store.callers([module.id], ("IMPORTS",))} == {("web", "src/cart.js")}
        price = [u for u in store.find_symbols("formatPrice") if u.kind == "function"][0]
        assert [(e.unit.repo, e.unit.name) for e in store.callers([price.id])] == [("web", "cartLabel")]
    finally:
        store.close()


def test_a_keyword_search_reads_the_postings_alone_while_the_database_holds_one_repository(url: str) -> None:
    base: Any = open_store(url)
    a = base.repository("a", source="/src/a")
    try:
        a.write_file(*rows_of("m.py", "def parse_invoice(text):\n    return text\n"))
        alone = a.keyword_search(["parse", "invoice"])
        assert a._keyword_scope() == "TRUE" and [h.path for h in alone] == ["m.py"]
        assert alone == base.across(None).keyword_search(["parse", "invoice"])
        b = base.repository("b", source="/src/b")
        b.write_file(*rows_of("n.py", "def parse_invoice_line(text):\n    return text.split()\n"))
        assert a._keyword_scope() != "TRUE"  # now each word's postings are kept to the repository
        assert a.keyword_search(["parse", "invoice"]) == alone
        assert {h.path for h in b.keyword_search(["parse", "invoice"])} == {"n.py"}
    finally:
        base.close()
