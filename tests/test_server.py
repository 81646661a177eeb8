"""`coderag serve` end to end: a real server process on loopback serving two real git
repositories, its HTTP API, tokens, answers streamed as server-sent events from a scripted
OpenAI-compatible model server, and the CLI through `--server`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from coderag_tui.cli import main
from tests.helpers.files import write_tree
from tests.helpers.server import ADMIN, ANSWER, READ, _mcp_calls, sse_events


def client(served: dict[str, Any], token: str | None = READ) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=served["url"], headers=headers, timeout=60)


# --------------------------------------------------------------------------- the API


def test_search_spans_both_repositories_and_names_each(served: dict[str, Any]) -> None:
    with client(served) as http:
        body = {"query": "tax invoice", "limit": 10, "include_context": True}
        doc = http.post("/search", json=body).json()
        assert doc["total_found"] == len(doc["results"]) > 0 and doc["search_time_ms"] >= 0
        repos = {r["repository"] for r in doc["results"]}
        assert repos == {"shop", "billing"}
        tax = next(r for r in doc["results"] if r["name"] == "tax_for")
        assert (tax["path"], tax["type"], tax["language"]) == ("shop/tax.py", "function", "python")
        assert tax["summary"] == "The sales tax owed on an amount."
        assert "return amount * 0.2" in tax["code_snippet"]
        assert {"relation": "caller", "name": "Cart.total", "path": "shop/cart.py", "line": 10} in tax["context"]

        only = http.post("/search", json={**body, "repos": ["billing"]}).json()["results"]
        assert only and {r["repository"] for r in only} == {"billing"}
        typed = http.post("/search", json={"query": "tax", "filters": {"type": "class"}}).json()["results"]
        assert [r["name"] for r in typed] == ["Cart"]  # billing has no class: no error for it
        bad = http.post("/search", json={"query": "tax", "filters": {"type": "functon"}})
        assert bad.status_code == 400 and "function" in bad.json()["error"]
        unknown = http.post("/search", json={"query": "tax", "repos": ["shopp"]})
        assert unknown.status_code == 404 and "'shop'" in unknown.json()["error"]
        empty = http.post("/search", json={"query": ""})
        assert empty.status_code == 422 and empty.json()["error"].startswith("query:")


def test_symbol_unit_structural_context_status(served: dict[str, Any]) -> None:
    with client(served) as http:
        sym = http.get("/symbol/tax_for").json()
        [exact] = sym["exact_matches"]
        assert (exact["repository"], exact["path"], exact["start_line"]) == ("shop", "shop/tax.py", 1)

        unit = http.get(f"/unit/{exact['id']}", params={"repo": "shop"}).json()
        assert unit["unit"]["qualname"] == "tax_for"
        assert [c["unit"]["qualname"] for c in unit["relationships"]["callers"]] == ["Cart.total"]
        assert http.get("/unit/99999", params={"repo": "shop"}).status_code == 404
        many = http.get(f"/unit/{exact['id']}")
        assert many.status_code == 400  # two repositories: the id needs its repository

        called = http.post("/query/structural", json={"type": "called_by", "target": "tax_for"}).json()
        assert [(e["unit"]["qualname"], e["line"]) for e in called["results"]] == [("Cart.total", 10)]
        methods = http.post("/query/structural", json={"type": "methods_of", "target": "Cart"}).json()
        assert [u["name"] for u in methods["results"]] == ["__init__", "total"]
        importing = http.post("/query/structural", json={"type": "files_importing", "target": "shop/tax.py"})
        assert [u["path"] for u in importing.json()["results"]] == ["shop/cart.py"]

        ctx = http.post("/context", json={"query": "how is the tax of a cart computed"}).json()
        assert ctx["repository"] == "shop" and ctx["token_count"] > 0
        assert "shop/tax.py:1-3" in ctx["context_text"]
        assert any(s["path"] == "shop/tax.py" for s in ctx["sources"])
        deep = http.post("/context", json={"query": "how is the tax of a cart computed", "strategy": "depth"})
        assert deep.status_code == 200 and deep.json()["token_count"] > 0
        assert http.post("/context", json={"query": "tax", "strategy": "sideways"}).status_code == 422

        status = http.get("/index/status").json()
        assert [r["name"] for r in status["repositories"]] == ["shop", "billing"]
        assert status["files_count"] == 3 and status["languages"] == {"python": 3}
        assert status["code_units_count"] == sum(r["status"]["units"] for r in status["repositories"])


def test_openapi_describes_the_endpoints(served: dict[str, Any]) -> None:
    with client(served, None) as http:
        paths = http.get("/openapi.json").json()["paths"]
    for path in ("/index/build", "/index/status", "/search", "/context", "/symbol/{name}", "/unit/{unit_id}",
                 "/query/structural", "/ask"):
        assert path in paths


# --------------------------------------------------------------------------- tokens


def test_tokens_are_required_and_scoped(served: dict[str, Any]) -> None:
    with client(served, None) as anonymous:
        refused = anonymous.post("/search", json={"query": "tax"})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/health").status_code == 200
        big = b"x" * (9 * 1024 * 1024)
        assert anonymous.post("/search", content=big).status_code == 401  # no token: never read
    with client(served, READ) as reader:  # with one, each endpoint's limit, before it is read
        too_big = reader.post("/search", content=big[: 65 * 1024])
        assert too_big.status_code == 413 and "larger than 64 KiB" in too_big.json()["error"]
        streamed = reader.post("/ask", content=iter([big[:4 << 20]] * 3))  # chunked: no length
        assert streamed.status_code == 413 and "larger than 8 MiB" in streamed.json()["error"]
    with client(served, READ + "x") as wrong:
        answer = wrong.get("/index/status")
        assert answer.status_code == 401 and READ not in answer.text
    with client(served, READ) as reader:
        assert reader.post("/search", json={"query": "tax"}).status_code == 200
        denied = reader.post("/index/build", json={})
        assert denied.status_code == 403 and "admin" in denied.json()["error"]
    with client(served, ADMIN) as admin:
        job = admin.post("/index/build", json={"repos": ["billing"]})
        assert job.status_code == 202 and job.json()["status"] in ("queued", "running")
        state = job.json()
        while state["status"] in ("queued", "running"):
            time.sleep(0.2)
            state = admin.get(f"/index/jobs/{state['job_id']}").json()
        assert state["status"] == "done", state
        assert state["summaries"]["billing"]["files_unchanged"] == 1


def test_a_host_beyond_loopback_needs_tokens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CODERAG_ADMIN_TOKENS", raising=False)
    monkeypatch.delenv("CODERAG_READ_TOKENS", raising=False)
    assert main(["serve", "--host", "0.0.0.0", str(tmp_path)]) == 2
    assert "refusing to listen on 0.0.0.0 without tokens" in capsys.readouterr().err
    monkeypatch.setenv("CODERAG_READ_TOKENS", "short")
    assert main(["serve", "--host", "0.0.0.0", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "shorter than 16 characters" in err and "short," not in err


# --------------------------------------------------------------------------- answers




def test_ask_streams_the_answer_events(served: dict[str, Any]) -> None:
    with client(served) as http, http.stream("POST", "/ask", json={"question": "How is the tax of a cart "
                                                                     "computed?", "repo": "shop"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    kinds = [k for k, _ in events]
    assert kinds[0] == "status" and kinds[-1] == "done" and "opening" in kinds
    assert all(doc["kind"] == kind and doc["repository"] == "shop" for kind, doc in events)
    assert "".join(d["text"] for k, d in events if k == "token") == "".join(ANSWER)
    [sources] = [d for k, d in events if k == "sources"]
    assert [s["path"] for s in sources["sources"] if s["cited"]] == ["shop/tax.py"]
    assert events[-1][1]["conversation_id"] > 0


# --------------------------------------------------------------------------- the CLI through --server


def test_the_cli_through_the_server_prints_what_the_local_index_does(
        served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(key, served["env"][key])  # the server's index files, opened locally
    monkeypatch.setenv("CODERAG_TOKEN", READ)
    remote = ["--server", served["url"], "--repo", "shop"]
    local = ["--config", str(served["config"]), "--repo", str(served["shop"])]

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        return code, capsys.readouterr().out

    for command in (["search", "cart total tax", "--json"], ["symbol", "total", "--json"],
                    ["symbol", "shop/tax", "--json"],
                    ["callers", "tax_for", "--json"], ["context", "cart total", "--json"]):
        code_local, out_local = run(*command, *local)
        code_remote, out_remote = run(*command, *remote)
        assert code_local == code_remote == 0
        assert _without_repo(json.loads(out_local)) == _without_repo(json.loads(out_remote)), command

    code, out = run("search", "tax", *remote)
    assert code == 0 and "shop:shop/tax.py:1-3" in out
    code, out = run("search", "invoice", "--server", served["url"])  # every repository
    assert code == 0 and "billing:billing/invoice.py:1-3" in out

    code, out = run("status", "--server", served["url"])
    assert code == 0 and "== shop" in out and "== billing" in out

    code, out = run("ask", "How is the tax of a cart computed?", *remote)
    assert code == 0
    assert "".join(ANSWER) in out and "[1]* shop/tax.py:1-3" in out

    assert main(["index", "--server", served["url"], "--repo", "billing"]) == 2  # a read token
    assert "may search and ask, not index" in capsys.readouterr().err
    monkeypatch.setenv("CODERAG_TOKEN", ADMIN)
    code, out = run("index", "--server", served["url"], "--repo", "billing", "--json")
    assert code == 0 and json.loads(out)["files_unchanged"] == 1

    monkeypatch.setenv("CODERAG_TOKEN", "not-the-token-at-all")
    assert main(["search", "tax", *remote]) == 2
    err = capsys.readouterr().err
    assert "refused the request: the token is not accepted here" in err and "not-the-token" not in err
    monkeypatch.setenv("CODERAG_TOKEN", READ)
    code, out = run("map", "--server", served["url"], "--repo", "shop")  # the rest of the contract too
    assert code == 0 and "def tax_for" in out


def _without_repo(doc: Any) -> Any:
    """A server's results name their repository; a local index's do not."""
    if isinstance(doc, list):
        return [_without_repo(d) for d in doc]
    if isinstance(doc, dict):
        return {k: _without_repo(v) for k, v in doc.items() if k not in ("repository", "repo")}
    return doc


# --------------------------------------------------------------------------- MCP through --server




def test_the_mcp_tools_through_the_server(served: dict[str, Any]) -> None:
    import anyio

    calls: list[tuple[str, dict[str, Any]]] = [
        ("lookup_symbol", {"name": "tax_for"}), ("find_callers", {"name": "tax_for"}),
        ("search_codebase", {"query": "sales tax"}), ("read_lines", {"path": "./shop/cart.py", "start": 8}),
        ("read_lines", {"path": "shop/secret.env"}), ("get_context", {"task": "how is the cart's tax computed"}),
        ("repo_map", {}), ("get_file_summary", {"path": "shop/cart.py"})]
    out = anyio.run(_mcp_calls, served, calls)
    assert "shop/tax.py:1-3  function tax_for" in out["0:lookup_symbol"]
    assert "    3      return amount * 0.2" in out["0:lookup_symbol"]  # its code, read through the server
    assert "- shop/cart.py:10  in method Cart.total (shop/cart.py:8-10)" in out["1:find_callers"]
    assert "\n1. shop/tax.py:1-3  function tax_for" in out["2:search_codebase"]
    assert out["3:read_lines"] == ("shop/cart.py:8-10\n    8      def total(self):\n"
                                   "    9          subtotal = sum(self.items)\n"
                                   "   10          return subtotal + tax_for(subtotal)")
    assert out["4:read_lines"].startswith("error: ") and "no file 'shop/secret.env' in the index" in out["4:read_lines"]
    assert "return amount * 0.2" in out["5:get_context"]
    assert "class Cart" in out["6:repo_map"] and "def tax_for" in out["6:repo_map"]  # the server's map
    assert out["7:get_file_summary"].startswith("shop/cart.py:1-10  (python, 10 lines)")
    assert "- shop/cart.py:8-10  def total(self)" in out["7:get_file_summary"]


def test_a_server_in_the_config_leaves_local_folders_local(
        served: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "client.toml"
    config.write_text(f'[server]\nurl = "{served["url"]}"\n[embed]\nenabled = false\n')
    monkeypatch.setenv("CODERAG_CONFIG", str(config))
    monkeypatch.setenv("CODERAG_TOKEN", READ)
    assert main(["symbol", "render_invoice", "--json"]) == 0  # the server's repositories
    [unit] = json.loads(capsys.readouterr().out)
    assert unit["repo"] == "billing"
    local = write_tree(tmp_path / "mine", {"mine.py": "def render_invoice():\n    return 1\n"})
    assert main(["index", "--no-embed", str(local)]) == 0
    capsys.readouterr()
    assert main(["symbol", "render_invoice", "--json", "--repo", str(local)]) == 0
    [unit] = json.loads(capsys.readouterr().out)
    assert (unit["repo"], unit["path"]) == ("", "mine.py")
