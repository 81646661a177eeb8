"""The service on a PostgreSQL store (`--store URL`): status, context, callers, callees, the
repo map, the MCP tools and ask through the CLI, context composed by the one core on both
backends alike, and `coderag serve --store` end to end: a real server process on loopback over
a real PostgreSQL (`pg_server.py`), its HTTP API, tokens, a build job, and an answer streamed
from a scripted loopback model; `serve --store URL` alone serves every repository of the
database."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from coderag_tui.cli import main
from coderag_tui.config import ContextSettings
from coderag_tui.models import SearchHit
from coderag_tui.retrieval.compose import assemble
from coderag_tui.store.backend import open_store
from tests.helpers.files import write_tree
from tests.helpers.pg import fresh_database
from tests.helpers.server import ADMIN, READ, SHOP, Server, _mcp_calls, sse_events
from tests.helpers.store_service import ANSWER, TESTS, _config

ROOT = Path(__file__).resolve().parent.parent










def cli(pg_indexed: dict[str, Any], *args: str) -> list[str]:
    return [*args, "--repo", str(pg_indexed["repo"]), "--store", pg_indexed["url"], "--config", str(pg_indexed["config"])]


# --------------------------------------------------------------------------- the CLI on --store


def test_status_callers_callees_on_a_store(pg_indexed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(cli(pg_indexed, "status", "--json")) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["files"], status["units"]) == (3, 5)  # tax_for, Cart, __init__, total, test_tax_for
    assert status["edges"] > 0 and status["last_update"] > 0 and status["db_path"].startswith("postgresql://")
    assert status["languages"][0]["language"] == "python"
    assert main(cli(pg_indexed, "status")) == 0
    assert "python" in capsys.readouterr().out

    assert main(cli(pg_indexed, "callers", "tax_for", "--json")) == 0
    callers = json.loads(capsys.readouterr().out)
    assert {(c["qualname"], c["line"]) for c in callers} == {("Cart.total", 10), ("test_tax_for", 5)}, callers
    assert main(cli(pg_indexed, "callees", "Cart.total")) == 0
    assert "tax_for" in capsys.readouterr().out
    assert main(cli(pg_indexed, "callers", "no_such_function_here")) == 1

    assert main(cli(pg_indexed, "map")) == 0  # the repo map: the graph read from PostgreSQL
    repo_map = capsys.readouterr().out
    assert "def tax_for(amount)" in repo_map and "class Cart" in repo_map, repo_map
    assert main(cli(pg_indexed, "callers", "tax_for", "--json", "--db", str(pg_indexed["base"] / "x.db"))) == 2
    assert "--db names an index file; --store a database" in capsys.readouterr().err


def test_the_mcp_tools_on_a_store(pg_indexed: dict[str, Any]) -> None:
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.service import CodeRag

    service = CodeRag.open(pg_indexed["repo"], config=pg_indexed["config"], store=pg_indexed["url"])
    try:
        tools = CodeRagTools(service)
        tools.ready.set()
        assert "shop/tax.py:1-3  function tax_for" in tools.lookup_symbol("tax_for")
        assert "shop/cart.py:10" in tools.find_callers("tax_for")
        assert "1. shop/tax.py:1-3  function tax_for" in tools.search_codebase("sales tax")
        assert "return amount * 0.2" in tools.read_lines("shop/tax.py", 1, 3)
    finally:
        service.close()


def test_context_on_a_store_expands_the_graph(pg_indexed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(cli(pg_indexed, "context", "how is the tax of a cart computed", "--json")) == 0
    ctx = json.loads(capsys.readouterr().out)
    roles = {(p["path"], p["role"]) for p in ctx["pieces"]}
    assert ("shop/tax.py", "primary") in roles, roles
    # the graph around the hits (here every file is a hit: the graph shows in their metadata)
    about = [p["text"] for p in ctx["pieces"] if p["role"] == "metadata" and p["path"] == "shop/tax.py"]
    assert any("called by 2 units: Cart.total, test_tax_for" in text for text in about), about
    assert 0 < ctx["tokens"] <= ctx["budget"]
    assert main(cli(pg_indexed, "context", "tax", "--strategy", "depth", "--max-tokens", "300")) == 0
    assert "shop/tax.py:1-3" in capsys.readouterr().out


def test_ask_on_a_store_answers_with_citations(pg_indexed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(cli(pg_indexed, "ask", "How is the tax of a cart computed?", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["answer"] == "".join(ANSWER)
    cited = [s for s in doc["sources"] if s["cited"]]
    assert [s["path"] for s in cited] == ["shop/tax.py"] and not doc["invalid_citations"], doc
    prompt = str(pg_indexed["model"].requests[-1])
    assert "return amount * 0.2" in prompt  # the model was given the code from PostgreSQL


def test_one_composition_on_both_backends(pg_url: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The same hits composed on SQLite and on PostgreSQL give the same context."""
    repo = write_tree(tmp_path / "shop", {**SHOP, **TESTS})
    from coderag_tui.config import load_settings
    from coderag_tui.indexing.indexer import Indexer
    from coderag_tui.store.read import find_symbols

    settings = load_settings(repo, _config(tmp_path / "c.toml", "http://127.0.0.1:9"))
    texts = []
    for store in (open_store(tmp_path / "index.db"),
                  open_store(request.getfixturevalue("pg_url"), source=str(repo), create=True)):
        try:
            Indexer(store, repo, settings).run()
            [unit] = [u for u in find_symbols(store, "tax_for") if u.name == "tax_for"]
            ctx = assemble(store, [SearchHit(unit, 1.0, ("symbol",))], "tax of a cart", "hybrid",
                           ContextSettings(), 4000, repo)
            texts.append(ctx.render())
        finally:
            store.close()
    assert texts[0] == texts[1]
    assert "Cart.total calls tax_for" in texts[1] and "test_tax_for calls tax_for" in texts[1], texts[1]
    assert "called by 2 units: Cart.total, test_tax_for" in texts[1]


# --------------------------------------------------------------------------- coderag serve --store




def http(pg_served: dict[str, Any], token: str | None = READ) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=pg_served["url"], headers=headers, timeout=60)


def test_the_api_over_postgres(pg_served: dict[str, Any]) -> None:
    with http(pg_served) as c:
        doc = c.post("/search", json={"query": "tax of a cart", "limit": 5, "include_context": True}).json()
        assert doc["total_found"] == len(doc["results"]) > 0
        tax = next(r for r in doc["results"] if r["name"] == "tax_for")
        assert (tax["repository"], tax["path"], tax["type"]) == ("shop", "shop/tax.py", "function")
        assert "return amount * 0.2" in tax["code_snippet"]
        assert {"relation": "caller", "name": "Cart.total", "path": "shop/cart.py", "line": 10} in tax["context"]

        sym = c.get("/symbol/tax_for").json()
        [exact] = sym["exact_matches"]
        assert (exact["repository"], exact["path"], exact["start_line"]) == ("shop", "shop/tax.py", 1)
        unit = c.get(f"/unit/{exact['id']}").json()
        assert {e["unit"]["qualname"] for e in unit["relationships"]["callers"]} == {"Cart.total", "test_tax_for"}
        assert c.get("/unit/99999999").status_code == 404

        called = c.post("/query/structural", json={"type": "called_by", "target": "tax_for"}).json()
        assert {(e["unit"]["qualname"], e["line"]) for e in called["results"]} == {("Cart.total", 10),
                                                                                   ("test_tax_for", 5)}
        methods = c.post("/query/structural", json={"type": "methods_of", "target": "Cart"}).json()
        assert [u["name"] for u in methods["results"]] == ["__init__", "total"]
        tested = c.post("/query/structural", json={"type": "tested_by", "target": "tax_for"})
        assert tested.status_code == 200
        assert {e["unit"]["qualname"] for e in tested.json()["results"]} == {"test_tax_for"}

        ctx = c.post("/context", json={"query": "how is the tax of a cart computed"}).json()
        assert ctx["repository"] == "shop" and ctx["token_count"] > 0
        assert "shop/tax.py:1-3" in ctx["context_text"]
        lines = c.get("/lines", params={"path": "shop/tax.py", "start": 1, "end": 3}).json()
        assert lines["lines"][0] == "def tax_for(amount):"

        status = c.get("/index/status").json()
        assert [r["name"] for r in status["repositories"]] == ["shop"]
        assert status["files_count"] == 3 and status["index_health"] == "ok"
        files = {f["path"]: f["state"] for f in c.get("/files").json()["files"]}  # the app's tree
        assert files["shop/tax.py"] == "indexed" and files["tests/test_tax.py"] == "indexed", files
        outline = c.get("/outline", params={"path": "shop/cart.py"}).json()
        assert [u["qualname"] for u in outline["units"]] == ["shop/cart.py", "Cart", "Cart.__init__", "Cart.total"]
        filtered = c.post("/search", json={"query": "tax", "filters": {"language": "python", "path_prefix": "shop/"}})
        assert filtered.status_code == 200, filtered.text
        assert {r["path"] for r in filtered.json()["results"]} <= {"shop/tax.py", "shop/cart.py"}
        assert filtered.json()["results"]
        unknown = c.post("/search", json={"query": "tax", "filters": {"language": "pyhton"}})
        assert unknown.status_code == 400 and "python" in unknown.json()["error"], unknown.text

    # concurrent requests: each of the server's threads reads through a connection of its own
    def ask_search(i: int) -> tuple[int, list[str]]:
        with http(pg_served) as c:
            r = c.post("/search", json={"query": ["tax", "cart total", "items"][i % 3], "limit": 3})
            return r.status_code, [h["path"] for h in r.json()["results"]]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask_search, range(16)))
    assert all(code == 200 and paths for code, paths in answers), answers


def test_ask_streams_from_postgres(pg_served: dict[str, Any]) -> None:
    with http(pg_served) as c, c.stream("POST", "/ask", json={"question": "How is the tax of a cart computed?"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    kinds = [k for k, _ in events]
    assert kinds[0] == "status" and kinds[-1] == "done" and "opening" in kinds, kinds
    assert "".join(d["text"] for k, d in events if k == "token") == "".join(ANSWER)
    [sources] = [d for k, d in events if k == "sources"]
    assert [s["path"] for s in sources["sources"] if s["cited"]] == ["shop/tax.py"]


def test_the_cli_through_the_server_prints_what_the_store_does(
        pg_served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CODERAG_TOKEN", READ)
    remote = ["--server", pg_served["url"]]
    local = ["--repo", str(pg_served["repo"]), "--store", pg_served["store"], "--config", str(pg_served["config"])]

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        return code, capsys.readouterr().out

    for command in (["search", "cart total tax", "--json"], ["symbol", "total", "--json"],
                    ["callers", "tax_for", "--json"], ["callees", "Cart.total", "--json"],
                    ["context", "cart total", "--json"]):
        code_local, out_local = run(*command, *local)
        code_remote, out_remote = run(*command, *remote)
        assert code_local == code_remote == 0, command
        assert _without_repo(json.loads(out_local)) == _without_repo(json.loads(out_remote)), command
    code, out = run("ask", "How is the tax of a cart computed?", *remote)
    assert code == 0 and "".join(ANSWER) in out and "[1]* shop/tax.py:1-3" in out, out


def test_the_mcp_tools_through_a_postgres_backed_server(pg_served: dict[str, Any]) -> None:
    import anyio

    calls: list[tuple[str, dict[str, Any]]] = [
        ("lookup_symbol", {"name": "tax_for"}), ("find_callers", {"name": "tax_for"}),
        ("search_codebase", {"query": "sales tax"}), ("get_context", {"task": "how is the cart's tax computed"})]
    out = anyio.run(_mcp_calls, pg_served, calls)
    assert "shop/tax.py:1-3  function tax_for" in out["0:lookup_symbol"], out
    assert "- shop/cart.py:10  in method Cart.total (shop/cart.py:8-10)" in out["1:find_callers"], out
    assert "1. shop/tax.py:1-3  function tax_for" in out["2:search_codebase"], out
    assert "return amount * 0.2" in out["3:get_context"], out


def _without_repo(doc: Any) -> Any:
    """A server's results name their repository; a local store's do not."""
    if isinstance(doc, list):
        return [_without_repo(d) for d in doc]
    if isinstance(doc, dict):
        return {k: _without_repo(v) for k, v in doc.items() if k not in ("repository", "repo", "of_repository")}
    return doc


def test_tokens_and_a_build_job_on_postgres(pg_served: dict[str, Any]) -> None:
    with http(pg_served, None) as anonymous:
        refused = anonymous.post("/search", json={"query": "tax"})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    with http(pg_served, READ) as reader:
        assert reader.post("/index/build", json={}).status_code == 403
    # a new file, indexed into PostgreSQL by a job of the server's
    (pg_served["repo"] / "shop" / "ship.py").write_text("def shipping_cost(weight):\n    return weight * 3\n")
    with http(pg_served, ADMIN) as admin:
        state = admin.post("/index/build", json={}).json()
        while state["status"] in ("queued", "running"):
            time.sleep(0.2)
            state = admin.get(f"/index/jobs/{state['job_id']}").json()
        assert state["status"] == "done", state
        # (the server watches its folder: the file may be indexed before the job looks)
        assert state["summaries"]["shop"]["files_indexed"] in (0, 1)
        found = admin.get("/symbol/shipping_cost").json()["exact_matches"]
        assert [u["path"] for u in found] == ["shop/ship.py"]


def test_serve_store_beyond_loopback_needs_tokens(pg_indexed: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CODERAG_ADMIN_TOKENS", raising=False)
    monkeypatch.delenv("CODERAG_READ_TOKENS", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--store", pg_indexed["url"], str(pg_indexed["repo"])]) == 2
    assert "refusing to listen on 0.0.0.0 without tokens" in capsys.readouterr().err


def test_serve_store_alone_serves_every_repository_of_the_database(pg_url: str,
        request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`coderag serve --store URL` with no folder: every repository the database holds, read from
    the database alone (their folders gone), each result naming its repository."""
    import shutil

    from tests.helpers.server import BILLING
    url = request.getfixturevalue("pg_url")
    billing_files: dict[str, str | bytes] = {**BILLING}
    shop, billing = write_tree(tmp_path / "shop", {**SHOP, **TESTS}), write_tree(tmp_path / "billing", billing_files)
    config = _config(tmp_path / "config.toml", "http://127.0.0.1:9")
    assert main(["index", str(shop), str(billing), "--store", url, "--config", str(config)]) == 0
    shutil.rmtree(shop)
    shutil.rmtree(billing)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "HF_HUB_OFFLINE": "1"}
    for name in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS", "CODERAG_READ_TOKENS"):
        env.pop(name, None)
    server = Server(["--store", url, "--config", str(config)], env, tmp_path / "server.log")
    try:
        assert sorted(server.info["repositories"]) == ["billing", "shop"]
        token = {"Authorization": f"Bearer {server.info['token']}"}  # the one a loopback server makes
        with httpx.Client(base_url=server.url, timeout=60, headers=token) as c:
            doc = c.post("/search", json={"query": "tax of a cart", "limit": 10}).json()
            assert {r["repository"] for r in doc["results"]} >= {"shop"}, doc
            lines = c.get("/lines", params={"path": "shop/tax.py", "start": 1, "end": 3, "repo": "shop"}).json()
            assert lines["lines"][0] == "def tax_for(amount):", lines  # from the chunks: the folder is gone
            status = c.get("/index/status").json()
            assert sorted(r["name"] for r in status["repositories"]) == ["billing", "shop"], status
    finally:
        log = server.close()
        assert "Traceback" not in log, log
    fresh = fresh_database(request.getfixturevalue("pg_server"), "coderag_empty")
    empty = next(fresh)
    try:
        assert main(["serve", "--store", empty, "--config", str(config)]) == 2
        assert "holds no repository yet" in capsys.readouterr().err
    finally:
        next(fresh, None)
