"""One product on every store: the same CLI commands, run in-process against a real git repository
indexed into an SQLite file, into a real PostgreSQL database (`--store URL`), and through a
`coderag serve` process of each (`--server URL`, with the server's token), each giving the same
kind of answer. Answers come from a scripted OpenAI-compatible model on loopback, so follow-ups
and the answer cache are checked exactly; summaries from the same model (through a server: the
server's summaries job). `watch` through a server prints the server's updates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.pg import fresh_database
from tests.helpers.watch import ctrl_c_stops_it

ROOT = Path(__file__).resolve().parent.parent
SHOP = {
    "shop/__init__.py": "",
    "shop/tax.py": 'def tax_for(amount):\n    """The sales tax owed on an amount."""\n    return amount * 0.2\n\n\n'
                   'def rounded(amount):\n    """An amount rounded to cents."""\n    return round(amount, 2)\n',
    "shop/cart.py": '"""The shopping cart."""\nfrom shop.tax import rounded, tax_for\n\n\nclass Cart:\n'
                    '    """Items to buy, and their total."""\n\n    def __init__(self):\n        self.items = []\n\n'
                    '    def add(self, price):\n        self.items.append(price)\n        return len(self.items)\n\n'
                    '    def total(self):\n        """The total price including tax."""\n'
                    '        subtotal = sum(self.items)\n        return rounded(subtotal + tax_for(subtotal))\n',
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_total():\n    cart = Cart()\n    cart.add(10)\n"
                          "    assert cart.total() == 12.0\n",
    "README.md": "# Shop\n\nA cart that adds the sales tax to its total.\n",
}
ANSWER = ["The total ", "adds the tax ", "(shop/cart.py:15-18)."]
NOTES = {  # a second repository beside the shop in the workspace: about something else
    "notes/__init__.py": "",
    "notes/weather.py": 'def forecast(city):\n    """Tomorrow\'s weather in a city."""\n    return "rain"\n',
}
BACKENDS = ["sqlite", "postgresql", "server-sqlite", "server-postgresql", "workspace"]
TOKEN = "admin-" + "c0ffee42" * 4  # the served repositories' admin token (summaries are an admin's job)


def _model(h: Handler, n: int) -> None:
    if h.command == "POST":
        openai_sse(h, ANSWER)  # answers and summaries alike
    else:
        h.send_json(404, {"error": "no"})


@pytest.fixture(scope="module")
def model() -> Iterator[Loopback]:
    served = Loopback(_model)
    yield served
    served.close()


@pytest.fixture(scope="module", params=BACKENDS)
def repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         model: Loopback) -> Iterator[dict[str, Any]]:
    """The shop repository (a git repository with one commit) indexed by `coderag index` into the
    backend; `args`: what every command is given to use that index. `server-*`: that index then
    served by `coderag serve` (a process of its own), every command given `--server URL` and
    the server's token in $CODERAG_TOKEN. `workspace`: the shop and a second repository, each
    indexed into its own file, every command given `--repo SHOP,NOTES`."""
    backend = request.param.removeprefix("server-")
    base = tmp_path_factory.mktemp(request.param)
    root = write_tree(base / "shop", SHOP)
    git_init(root)
    config = base / "config.toml"
    config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                      'model = "scripted"\ndiscover = false\ntools = "off"\ntimeout_s = 30\n'
                      '[summaries]\nbackground = false\n')
    args = ["--repo", str(root), "--config", str(config)]
    databases: Iterator[str] | None = None
    server, env = None, pytest.MonkeyPatch()
    if backend == "workspace":  # each index in the user's cache: the one every test sees
        env.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "userdirs" / "cache"))
        notes = write_tree(base / "notes", NOTES)
        git_init(notes)
        assert main(["index", str(root), str(notes), "--config", str(config)]) == 0
        args = ["--repo", f"{root},{notes}", "--config", str(config)]
        where: list[str] = []
    elif backend == "postgresql":
        databases = fresh_database(request.getfixturevalue("pg_server"), "coderag_contract")
        where = ["--store", next(databases)]
    else:
        where = ["--db", str(base / "index.db")]
    if where:
        args += where
        assert main(["index", *args]) == 0
    if request.param.startswith("server-"):
        from tests.helpers.server import Server
        server = Server(["--config", str(config), *where, str(root)],
                        {**os.environ, "PYTHONPATH": str(ROOT), "CODERAG_ADMIN_TOKENS": TOKEN}, base / "server.log")
        args = ["--server", server.url, "--config", str(config)]
        env.setenv("CODERAG_TOKEN", TOKEN)
    yield {"backend": backend, "server": server is not None, "root": root, "args": args, "base": base,
           "config": config, "workspace": backend == "workspace"}
    env.undo()
    if server is not None:
        log = server.close()
        assert "Traceback" not in log and TOKEN not in log, log
    if databases is not None:
        next(databases, None)  # drops the database


def run(repo: dict[str, Any], capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> str:
    capsys.readouterr()
    assert main([*argv, *repo["args"]]) == code, capsys.readouterr().err
    return capsys.readouterr().out


def run_json(repo: dict[str, Any], capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    return json.loads(run(repo, capsys, *argv, "--json"))


def test_status(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    status = run_json(repo, capsys, "status")
    if repo["workspace"]:  # each repository's, by name
        assert [s["repository"] for s in status] == ["shop", "notes"]
        status = status[0]
    assert status["files"] == 5 and status["units"] >= 7 and status["edges"] > 0
    assert ("postgresql" in status["db_path"]) == (repo["backend"] == "postgresql")


def test_search_with_every_filter_and_files(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    hits = run_json(repo, capsys, "search", "cart total tax")
    assert hits and hits[0]["path"] == "shop/cart.py"
    kinds = {h["kind"] for h in run_json(repo, capsys, "search", "total tax", "--kind", "function")}
    assert kinds == {"function"}
    paths = {h["path"] for h in run_json(repo, capsys, "search", "total", "--path", "tests/")}
    assert paths == {"tests/test_cart.py"}
    python = run_json(repo, capsys, "search", "tax", "--lang", "python")
    assert python and all(h["path"].endswith(".py") for h in python)
    assert run(repo, capsys, "search", "rounded", "--lang", "markdown", "--json", code=1).strip() == "[]"
    files = run_json(repo, capsys, "search", "tax", "--files")
    assert files and all(h["kind"] == "file" for h in files)
    assert files[0]["path"] == "shop/tax.py"


def test_symbol_callers_callees(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    units = run_json(repo, capsys, "symbol", "Cart.total")
    assert units[0]["qualname"] == "Cart.total"
    callers = run_json(repo, capsys, "callers", "tax_for")
    assert [e["qualname"] for e in callers] == ["Cart.total"]
    callees = {e["name"] for e in run_json(repo, capsys, "callees", "Cart.total")}
    assert {"tax_for", "rounded"} <= callees


def test_similar_and_map(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    if repo["workspace"]:  # a unit id is one index's: refused in one line, and the map is each one's
        capsys.readouterr()
        assert main(["similar", "tax_for", *repo["args"]]) == 2
        assert "one repository" in capsys.readouterr().err
        shown = run(repo, capsys, "map", "--max-tokens", "300")
        assert "# shop" in shown and "# notes" in shown and "def forecast" in shown
        return
    similar = run_json(repo, capsys, "similar", "tax_for")
    assert similar and all(h["name"] != "tax_for" for h in similar)
    shown = run(repo, capsys, "map", "--max-tokens", "300")
    assert "class Cart" in shown and "def tax_for" in shown


@pytest.mark.parametrize("strategy", ["relevance", "importance", "breadth", "depth"])
def test_context_with_each_strategy(repo: dict[str, Any], capsys: pytest.CaptureFixture[str], strategy: str) -> None:
    context = run_json(repo, capsys, "context", "how is the cart total computed", "--strategy", strategy,
                       "--max-tokens", "800")
    # (a workspace's pieces name their repository: `shop:shop/cart.py`)
    assert any(p["path"].removeprefix("shop:") == "shop/cart.py" for p in context["pieces"])


def test_ask_a_follow_up_and_from_the_cache(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    first = run_json(repo, capsys, "ask", "how is the cart total computed?")
    assert first["answer"] == "".join(ANSWER) and not first["cached"]
    conv = first["conversation_id"]
    follow = run_json(repo, capsys, "ask", "and where is the tax rate?", "--conversation", str(conv))
    assert follow["conversation_id"] == conv
    again = run_json(repo, capsys, "ask", "how is the cart total computed?")
    # an answer from several indexes is not cached: a cache entry is checked against the lines
    # it cited, and each index knows its own lines only
    assert again["cached"] != repo["workspace"] and again["answer"] == first["answer"]


def test_summarize_and_export(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    if repo["workspace"]:  # summaries are made for one repository at a time (the capability set)
        capsys.readouterr()
        assert main(["summarize", "shop/tax.py", "--yes", *repo["args"]]) == 2
        assert "one repository" in capsys.readouterr().err
        exported = run_json(repo, capsys, "export", "--format", "json")
        assert {"shop:shop/tax.py", "notes:notes/weather.py"} <= {f["path"] for f in exported}
        return
    made = run(repo, capsys, "summarize", "shop/tax.py", "--yes")
    assert "summaries made" in made
    exported = run_json(repo, capsys, "export", "--format", "json")
    tax = next(f for f in exported if f["path"] == "shop/tax.py")
    assert "".join(ANSWER) in json.dumps(tax), tax


def test_review_a_change(repo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    root = repo["root"]
    tax = root / "shop" / "tax.py"
    before = tax.read_text()
    tax.write_text(before.replace("def tax_for(amount):", "def tax_for(amount, rate=0.2):"))
    if repo["workspace"]:  # a review is of one repository's change
        capsys.readouterr()
        try:
            assert main(["review", "--base", "HEAD", *repo["args"]]) == 2
        finally:
            tax.write_text(before)
        assert "one repository" in capsys.readouterr().err
        return
    try:
        review = run_json(repo, capsys, "review", "--base", "HEAD")
    finally:
        tax.write_text(before)
    changed = {c["qualname"]: c for c in review["changes"]}
    assert "tax_for" in changed and changed["tax_for"]["callers"]


def test_watch_keeps_the_index_current(repo: dict[str, Any]) -> None:
    """`coderag watch` in a process of its own: a new function is found by `symbol` after it.
    Through a server, the server keeps its index current (it watches the folder it serves):
    `watch --server` follows it and prints its update as it happens."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "coderag_tui", "watch", *repo["args"]], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=ctrl_c_stops_it)
    lines: list[str] = []
    watching = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "watching" in line.lower():
                watching.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    extra = repo["root"] / "shop" / "discount.py"
    try:
        deadline = time.time() + 120
        assert watching.wait(120), lines  # its first line
        extra.write_text("def holiday_discount(amount):\n    return amount * 0.9\n")
        found = []
        while time.time() < deadline and not found:
            time.sleep(1)
            out = subprocess.run([sys.executable, "-m", "coderag_tui", "symbol", "holiday_discount", "--json",
                                  *repo["args"]], env=env, capture_output=True, text=True)
            found = json.loads(out.stdout or "[]") if out.returncode == 0 else []
        assert found and found[0]["path"] == "shop/discount.py"
        while time.time() < deadline and not any("updated 1 file" in line for line in lines):
            time.sleep(0.2)
        assert any("updated 1 file" in line for line in lines), lines  # the update, as it was made
        if repo["server"]:
            assert any(line.startswith("shop: updated 1 file") for line in lines), lines  # the server's
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(10)
        extra.unlink(missing_ok=True)


def test_the_stores_agree(tmp_path: Path, pg_server: str, model: Loopback) -> None:
    """The same repository in both stores: the same first file for every question."""
    root = write_tree(tmp_path / "shop", SHOP)
    databases = fresh_database(pg_server, "coderag_agree")
    url = next(databases)
    try:
        outs: dict[str, list[str]] = {}
        for name, where in (("sqlite", ["--db", str(tmp_path / "i.db")]), ("postgresql", ["--store", url])):
            args = ["--repo", str(root), *where]
            assert main(["index", "--no-embed", *args]) == 0
            tops = []
            for q in ("cart total", "sales tax", "rounded to cents", "Cart", "test total", "shopping cart items"):
                out = subprocess.run([sys.executable, "-m", "coderag_tui", "search", q, "--json", *args],
                                     env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
                hits = json.loads(out.stdout or "[]")
                tops.append(hits[0]["path"] if hits else "")
            outs[name] = tops
        assert outs["sqlite"] == outs["postgresql"] and all(outs["sqlite"])
    finally:
        next(databases, None)
