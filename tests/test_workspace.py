"""Several repositories on this machine as one workspace: `coderag index A B C`, search,
context and cited answers across them (a scripted OpenAI-compatible model on loopback), and
imports of a package another repository defines linked across them. Three real git
repositories: a shared library, a backend that imports it, an unrelated frontend."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering.citations import check_citations
from coderag_tui.cli import main
from coderag_tui.models import ContextPiece
from coderag_tui.service import CodeRag
from coderag_tui.workspace import Workspace
from tests.helpers.files import write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.workspace import QUESTION

# the scripted model cites both repositories, and once a file under the wrong repository




def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_several_then_search_context_and_ask_across(repos: dict[str, Any],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(repos[n]) for n in ("shared-lib", "backend", "frontend")]
    code, out, _ = run(capsys, "index", *paths, "--config", repos["config"], "--json")
    assert code == 0
    done = json.loads(out)
    assert [d["repository"] for d in done] == ["shared-lib", "backend", "frontend"]
    assert [d["files_indexed"] for d in done] == [3, 1, 2]
    for root in repos.values():  # each repository keeps its own index: a second run parses nothing
        if isinstance(root, Path):
            assert CodeRag.open(root).has_index()
    code, out, _ = run(capsys, "index", *paths, "--config", repos["config"])
    assert code == 0 and out.count("this run: 0 parsed") == 3 and "== backend" in out

    both = ",".join(paths[:2])
    code, out, _ = run(capsys, "search", "loyalty discount", "--repo", ",".join(paths), "--config",
                       repos["config"], "--json")
    hits = json.loads(out)
    assert {h["repository"] for h in hits} >= {"shared-lib", "backend"}
    assert "frontend" not in {h["repository"] for h in hits}

    code, out, _ = run(capsys, "callers", "apply_discount", "--workspace", "--config", repos["config"], "--json")
    assert code == 0 and {(c["repository"], c["qualname"], c["of_repository"]) for c in json.loads(out)} == {
        ("backend", "checkout_total", "shared-lib"), ("backend", "refund", "shared-lib")}

    code, out, _ = run(capsys, "context", QUESTION, "--workspace", "--config", repos["config"], "--json")
    assert code == 0
    ctx = json.loads(out)
    cited = [p["path"] for p in ctx["pieces"]]
    assert "shared-lib:shared_lib/pricing.py" in cited and "backend:app/checkout.py" in cited
    assert not any(p.startswith("frontend:") for p in cited)  # no top hit there: no share of the budget
    assert ctx["tokens"] <= ctx["budget"]

    code, out, err = run(capsys, "ask", QUESTION, "--repo", both, "--config", repos["config"], "--json")
    assert code == 0, err
    doc = json.loads(out)
    sources = {f"{s['path']}:{s['start_line']}-{s['end_line']}" for s in doc["sources"] if s["cited"]}
    assert sources >= {"backend:app/checkout.py:6-9", "shared-lib:shared_lib/pricing.py:4-7"}
    assert all(s.startswith(("backend:", "shared-lib:")) for s in sources)  # (and the files holding them)
    assert doc["invalid_citations"] == ["frontend:app/checkout.py:6-9"]  # verified per repository
    prompt = repos["model"].requests[-1]["body"].decode()
    assert "shared-lib:shared_lib/pricing.py:4-7" in prompt and "backend:app/checkout.py:6-9" in prompt


def test_the_configured_workspace_and_a_chosen_part(repos: dict[str, Any],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "index", *(str(repos[n]) for n in ("shared-lib", "backend", "frontend")),
               "--config", repos["config"])[0] == 0
    code, out, _ = run(capsys, "search", "banner", "--workspace", "--config", repos["config"])
    assert code == 0 and "frontend:src/banner.js" in out
    code, out, err = run(capsys, "search", "banner", "--workspace", "--repo", "backend,shared-lib",
                         "--config", repos["config"], "--json")
    assert all(h["repository"] in ("backend", "shared-lib") for h in json.loads(out or "[]"))
    code, _, err = run(capsys, "search", "x", "--workspace", "--repo", "backnd", "--config", repos["config"])
    assert code == 2 and "no repository named 'backnd'" in err and "backend" in err
    code, _, err = run(capsys, "search", "x", "--workspace")  # no list in the user's config
    assert code == 2 and "no workspace is configured" in err


def test_imports_of_another_repositorys_package_link_across(repos: dict[str, Any]) -> None:
    services = [CodeRag.open(repos[n]) for n in ("shared-lib", "backend", "frontend")]
    for s in services:
        s.index()
    ws = Workspace(services)
    try:
        callers = ws.structural("called_by", "apply_discount")
        where = {(e.unit.repo, e.unit.qualname, e.line) for e in callers if e.unit is not None}
        assert where == {("backend", "checkout_total", 9), ("backend", "refund", 13)}
        assert all(e.source is not None and e.source.repo == "shared-lib" for e in callers)
        callees = ws.structural("calls", "checkout_total")
        linked = [e for e in callees if e.name == "apply_discount"]
        assert len(linked) == 1 and linked[0].unit is not None
        assert (linked[0].unit.repo, linked[0].unit.path) == ("shared-lib", "shared_lib/pricing.py")
        importers = ws.structural("files_importing", "shared-lib:shared_lib/pricing.py")
        assert [(u.repo, u.path) for u in importers] == [("shared-lib", "shared_lib/__init__.py"),
                                                         ("backend", "app/checkout.py")]
        # one repository alone knows nothing of the other
        assert ws.structural("called_by", "apply_discount", repos=["shared-lib"]) == []
    finally:
        ws.close()


def test_a_javascript_require_links_to_the_package_json_name(tmp_path: Path) -> None:
    kit = write_tree(tmp_path / "ui-kit", {
        "package.json": '{"name": "@acme/ui-kit", "main": "lib/index.js"}',
        "lib/index.js": "function formatPrice(cents) { return '$' + (cents / 100).toFixed(2); }\n"
                        "module.exports = { formatPrice };\n"})
    web = write_tree(tmp_path / "web", {
        "app.js": "const { formatPrice } = require('@acme/ui-kit');\nconst kit = require('@acme/ui-kit');\n"
                  "function show(c) { return formatPrice(c) + kit.formatPrice(c); }\n",
        "price.js": "import { formatPrice } from '@acme/ui-kit/lib/index';\n"
                    "export function price(c) { return formatPrice(c); }\n"})
    services = [CodeRag.open(kit), CodeRag.open(web)]
    for s in services:
        s.index()
    ws = Workspace(services)
    try:
        callers = ws.structural("called_by", "formatPrice")
        assert sorted((e.unit.repo, e.unit.path, e.unit.name, e.line) for e in callers if e.unit) == [
            ("web", "app.js", "show", 3), ("web", "app.js", "show", 3), ("web", "price.js", "price", 2)]
        assert all(e.source is not None and e.source.path == "lib/index.js" for e in callers)
    finally:
        ws.close()


def test_a_citation_names_its_repository() -> None:
    pieces = [ContextPiece("backend:app/a.py", 1, 5, "primary", "a", "x\n" * 5, 5),
              ContextPiece("lib:app/a.py", 1, 3, "primary", "a", "y\n" * 3, 3)]
    checked = check_citations("see backend:app/a.py:2-4, lib:app/a.py:4 and lib:app/a.py:2", pieces)
    assert [s.citation for s in checked.sources if s.cited] == ["backend:app/a.py:1-5", "lib:app/a.py:1-3"]
    assert checked.invalid == ("lib:app/a.py:4",)  # line 4 exists in backend's file, not in lib's


def test_coderag_a_b_opens_them_together() -> None:
    import importlib

    cli = importlib.import_module("coderag_tui.cli.main")
    cli.load_commands()
    parser = cli.build_parser()
    arranged = cli._arrange(["./a", "../b", "--config", "c.toml"], parser)
    assert arranged == ["tui", "--config", "c.toml", "--", "./a", "../b"]
    assert parser.parse_args(arranged).repo_path == ["./a", "../b"]


def test_an_import_taken_for_a_folder_of_templates_still_links(tmp_path: Path) -> None:
    """`import shared_lib` in a repository with a `docs/_themes/shared_lib/` folder: its own
    graph takes the import for that folder's template; the workspace links it to the package."""
    lib = write_tree(tmp_path / "shared-lib", {"shared_lib/__init__.py": "def thing():\n    return 1\n"})
    app = write_tree(tmp_path / "app", {"docs/_themes/shared_lib/layout.html": "<html>{{ body }}</html>\n",
                                        "main.py": "from shared_lib import thing\n\n\ndef run():\n    return thing()\n"})
    services = [CodeRag.open(lib), CodeRag.open(app)]
    for s in services:
        s.index()
    ws = Workspace(services)
    try:
        callers = ws.structural("called_by", "thing")
        assert [(e.unit.repo, e.unit.qualname, e.line) for e in callers if e.unit] == [("app", "run", 5)]
    finally:
        ws.close()


def test_what_a_repository_defines_is_read_warily(tmp_path: Path) -> None:
    from coderag_tui.workspace.packages import packages

    root = write_tree(tmp_path / "r", {"pyproject.toml": "[project\nname = ", "package.json": "[1, 2]",
                                       "src/good_pkg/__init__.py": "", "tests/__init__.py": "",
                                       "not-an-identifier/__init__.py": ""})
    assert [(p.name, p.base) for p in packages(root)] == [("good_pkg", "src/good_pkg")]
    (root / "package.json").unlink()
    secret = write_tree(tmp_path / "outside", {"package.json": '{"name": "secret-name"}'})
    (root / "package.json").symlink_to(secret / "package.json")  # a link out of the repository is not followed
    assert [p.name for p in packages(root)] == ["good_pkg"]
    (root / "package.json").unlink()
    (root / "package.json").write_text('{"name": "bad name; rm -rf"}')
    assert [p.name for p in packages(root)] == ["good_pkg"]
    (root / "package.json").write_text('{"name": "@acme/kit", "main": "./lib/index.js"}')
    [_, kit] = packages(root)
    assert (kit.name, kit.main, kit.files_for("@acme/kit/lib/x")[1]) == ("@acme/kit", "lib/index.js", "lib/x.js")
    assert kit.files_for("@acme/kitten") is None


def test_the_workspace_watches_each_repository(repos: dict[str, Any]) -> None:
    """A file saved in one repository is re-indexed into its own index; the event names it as
    the app's tree does, and a file named `repo/path` is indexed in its repository alone."""
    from coderag_tui.workspace import Workspace
    from coderag_tui.workspace.local import WorkspaceService

    services = [CodeRag.open(repos[n], config=repos["config"]) for n in ("shared-lib", "backend", "frontend")]
    service = WorkspaceService(Workspace(services), tree_paths=True)
    first = service.index()
    assert first.files_indexed == 6 and first.errors == ()
    events: list[Any] = []
    with service.watch(events.append) as watcher:
        (repos["backend"] / "app" / "invoices.py").write_text("def issue_invoice(order):\n    return order.total\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                e.phase == "indexed" and "backend/app/invoices.py" in e.paths for e in events):
            time.sleep(0.1)
        assert watcher.wait_idle(30)
    assert any(e.phase == "indexed" and e.paths == ("backend/app/invoices.py",) for e in events), events
    assert [(u.repo, u.path) for u in service.symbols("issue_invoice")] == [("backend", "backend/app/invoices.py")]

    (repos["frontend"] / "src" / "banner.js").write_text("function renderFooter() { return 1; }\n")
    again = service.index(only=["frontend/src/banner.js"])
    assert again.files_indexed == 1 and again.files_seen == 2  # the frontend alone was walked
    assert [u.repo for u in service.symbols("renderFooter")] == ["frontend"]
    assert services[1].status().files == 2  # backend untouched by the frontend's run


def test_an_answer_across_repositories_calls_their_tools(repos: dict[str, Any], tmp_path: Path) -> None:
    """A model with tools, answering across two repositories, reads a file of one of them: the
    tool's result cites `repo:path` as the context does, so what it showed verifies."""
    from tests.helpers.tool_use import openai_tool_call
    def respond(h: Handler, n: int) -> None:
        if n == 0:
            openai_tool_call(h, "c1", "read_lines", {"path": "shared-lib:shared_lib/pricing.py", "start": 1,
                                                     "end": 3})
        else:
            openai_sse(h, ["Prices are shared (shared-lib:shared_lib/pricing.py:1-3), and the total is ",
                           "computed at checkout (backend:app/checkout.py:6-9)."])

    model = Loopback(respond)
    try:
        config = tmp_path / "tools.toml"
        config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                          'model = "scripted"\ndiscover = false\ntools = "on"\ncache_similarity = 0\n'
                          "timeout_s = 30\n")
        services = [CodeRag.open(repos[n], config=str(config)) for n in ("shared-lib", "backend", "frontend")]
        for s in services:
            s.index()
        _, answer = Workspace(services).ask(QUESTION, repos=["shared-lib", "backend"])
        events = list(answer)
    finally:
        model.close()
    [tool] = [e for e in events if e.kind == "tool"]
    assert "read_lines" in tool.text
    prompt = json.loads(model.requests[0]["body"])["messages"][-1]["content"]
    assert "== shared-lib (cite its paths as shared-lib:PATH)" in prompt and "== backend" in prompt
    result = json.loads(model.requests[1]["body"])["messages"][-1]
    assert result["role"] == "tool" and result["content"].startswith("shared-lib:shared_lib/pricing.py:1-3\n")
    [sources] = [e for e in events if e.kind == "sources"]
    cited = [s.citation for s in sources.sources if s.cited]
    assert "shared-lib:shared_lib/pricing.py:1-3" in cited and "backend:app/checkout.py:6-9" in cited
    assert sources.invalid_citations == ()
