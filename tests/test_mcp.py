"""`coderag mcp`: the real MCP stdio client of the `mcp` package starts the server as a
subprocess on a fixture repository, lists the tools and calls every one of them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.files import write_tree

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from tests.helpers.mcp import _session_calls, _text

TOOLS = {"search_codebase", "get_context", "lookup_symbol", "find_callers", "find_callees",
         "get_file_summary", "repo_map", "read_lines"}

FILES: dict[str, str | bytes] = {
    "billing/__init__.py": "",
    "billing/invoice.py": '''"""Invoices: totals, taxes and discounts."""
from billing.rates import vat_rate

DEFAULT_CURRENCY = "EUR"


class Invoice:
    """An invoice with lines of (description, amount)."""

    def __init__(self, customer):
        self.customer = customer
        self.lines = []

    def add_line(self, description, amount):
        self.lines.append((description, amount))

    def total_with_vat(self, country):
        """The invoice total including value added tax for a country."""
        subtotal = self.subtotal()
        return subtotal * (1 + vat_rate(country))

    def subtotal(self):
        return sum(amount for _, amount in self.lines)


def issue_invoice(customer, items, country):
    invoice = Invoice(customer)
    for description, amount in items:
        invoice.add_line(description, amount)
    return invoice.total_with_vat(country)
''',
    "billing/rates.py": '''"""VAT rates by country."""

RATES = {"de": 0.19, "fr": 0.2}


def vat_rate(country):
    """The value added tax rate of a country (0 when unknown)."""
    return RATES.get(country, 0.0)
''',
    "tests/test_invoice.py": '''from billing.invoice import Invoice, issue_invoice


def test_total_with_vat():
    inv = Invoice("ada")
    inv.add_line("book", 10)
    assert inv.total_with_vat("de") == pytest.approx(11.9)


def test_issue_invoice():
    assert issue_invoice("ada", [("pen", 1)], "fr") > 1
''',
}






@pytest.fixture
def served(tmp_path: Path) -> tuple[list[Any], dict[str, Any]]:
    repo = write_tree(tmp_path / "billing-repo", FILES)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lookup_symbol", {"name": "total_with_vat"}),
        ("find_callers", {"name": "total_with_vat"}),
        ("find_callees", {"name": "Invoice.total_with_vat"}),
        ("get_file_summary", {"path": "billing/invoice.py"}),
        ("search_codebase", {"query": "value added tax rate of a country", "limit": 5}),
        ("search_codebase", {"query": "invoice total", "limit": 5, "path_prefix": "tests/", "language": "python"}),
        ("search_codebase", {"query": "vat_rate", "limit": 5, "kind": "function"}),
        ("get_context", {"task": "how is the VAT added to an invoice total", "max_tokens": 1500}),
        ("repo_map", {"max_tokens": 400}),
        ("get_file_summary", {"path": "no/such/file.py"}),
        ("lookup_symbol", {"name": ""}),
        ("find_callers", {"name": "vat_rate"}),
        ("get_context", {"task": "invoice total with vat", "max_tokens": 1500, "strategy": "depth"}),
        ("get_context", {"task": "invoice total", "strategy": "sideways"}),
    ]
    result: tuple[list[Any], dict[str, Any]] = anyio.run(_session_calls, repo, tmp_path / "index.db", calls)
    return result


def test_every_tool_over_stdio(served: tuple[list[Any], dict[str, Any]]) -> None:
    tools, results = served
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert t.description and t.input_schema["type"] == "object"
    search = next(t for t in tools if t.name == "search_codebase")
    assert set(search.input_schema["properties"]) == {"query", "limit", "language", "path_prefix", "kind"}
    assert search.input_schema["required"] == ["query"]

    context_tool = next(t for t in tools if t.name == "get_context")
    assert set(context_tool.input_schema["properties"]) == {"task", "max_tokens", "strategy"}

    errors = ("9:", "10:", "13:")
    for key, result in results.items():
        assert result.is_error == key.startswith(errors), (key, _text(result))

    lookup = _text(results["0:lookup_symbol"])
    assert "billing/invoice.py:17-20  method Invoice.total_with_vat" in lookup
    assert "   17      def total_with_vat(self, country):" in lookup  # its code, numbered
    assert "The invoice total including value added tax for a country." in lookup

    callers = _text(results["1:find_callers"])
    assert callers.startswith("2 call sites of Invoice.total_with_vat (billing/invoice.py:17-20):")
    assert "- billing/invoice.py:30  in function issue_invoice (billing/invoice.py:26-30)" in callers
    assert "- tests/test_invoice.py:7  in function test_total_with_vat (tests/test_invoice.py:4-7)" in callers

    callees = _text(results["2:find_callees"])
    assert "- billing/invoice.py:22-23  method Invoice.subtotal  (called at line 19)" in callees
    assert "- billing/rates.py:6-8  function vat_rate  (called at line 20)" in callees

    summary = _text(results["3:get_file_summary"])
    assert summary.startswith("billing/invoice.py:1-30  (python, 30 lines)")
    assert "Invoices: totals, taxes and discounts." in summary
    assert "- billing/invoice.py:7-23  class Invoice" in summary
    assert "  - billing/invoice.py:17-20  def total_with_vat(self, country)" in summary
    assert "- billing/invoice.py:2  billing.rates (vat_rate) -> billing/rates.py" in summary
    assert "Imported by:\n- tests/test_invoice.py" in summary
    assert "Tested by: tests/test_invoice.py" in summary

    found = _text(results["4:search_codebase"])
    first = found.split("\n\n")[1]
    assert first.startswith("1. billing/rates.py:")  # the VAT rates come first
    assert "def vat_rate(country):" in found
    in_tests = _text(results["5:search_codebase"])
    assert "tests/test_invoice.py:" in in_tests and "billing/invoice.py:" not in in_tests
    functions = _text(results["6:search_codebase"])
    assert "billing/rates.py:6-8  function vat_rate" in functions

    context = _text(results["7:get_context"])
    assert context.startswith("Context for 'how is the VAT added to an invoice total'")
    assert "### billing/invoice.py:" in context and "```python" in context
    assert "return subtotal * (1 + vat_rate(country))" in context

    repo_map = _text(results["8:repo_map"])
    assert "billing/invoice.py:" in repo_map and "def total_with_vat(self, country)" in repo_map

    missing = _text(results["9:get_file_summary"])
    assert "no file 'no/such/file.py' in the index" in missing and len(missing.strip().splitlines()) == 1
    assert "give a symbol name" in _text(results["10:lookup_symbol"])
    assert "billing/invoice.py:20  in method Invoice.total_with_vat" in _text(results["11:find_callers"])
    assert "[primary] function vat_rate" in _text(results["12:get_context"])  # the chain's next unit
    assert "unknown strategy 'sideways'" in _text(results["13:get_context"])


def test_tools_directly_on_a_shared_index(tmp_path: Path, open_service: Any) -> None:
    """The tool functions over an index the app wrote (same file, per-thread connections)."""
    import threading

    from coderag_tui.mcp_server import CodeRagTools

    repo = write_tree(tmp_path / "r", FILES)
    service = open_service(repo)
    tools = CodeRagTools(service)
    tools.start()
    assert tools.ready.is_set()  # not empty: no indexing on start
    out: dict[str, str] = {}

    def worker() -> None:
        out["callers"] = tools.find_callers("vat_rate")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "billing/invoice.py:20  in method Invoice.total_with_vat" in out["callers"]
    summary = tools.get_file_summary(str(repo / "billing/rates.py"))  # an absolute path works too
    assert "billing/rates.py:6-8  def vat_rate(country)" in summary
    assert "\nProfile: billing/rates.py: module (python, 8 lines; referred to by 1 files" in summary
    assert "Imported by: billing/invoice.py." in summary
    from coderag_tui.store.descriptions import StoredSummary, put_summary, summary_key

    key = summary_key("billing/rates.py", "file", "billing/rates.py")
    put_summary(service.db, StoredSummary(key, "billing/rates.py", "file", "billing/rates.py", "Looks up VAT rates.",
                                          "llama:x.gguf", "1", "", "", False, 0.0, 0.0))
    assert "Summary:\nLooks up VAT rates." in tools.get_file_summary("billing/rates.py")


def test_watch_keeps_the_index_current(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "watched", FILES)
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("XDG_", "HF_", "CODERAG_")) or k in ("HOME", "PATH")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coderag_tui", "mcp", str(repo), "--db", str(tmp_path / "w.db"), "--watch"],
        env=env, cwd=str(repo),
    )

    async def run() -> tuple[str, str]:
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                before = _text(await session.call_tool("find_callers", {"name": "vat_rate"}))
                (repo / "billing" / "refunds.py").write_text(
                    "from billing.rates import vat_rate\n\n\ndef refund_vat(amount, country):\n"
                    "    return amount * vat_rate(country)\n")
                after = before
                for _ in range(60):
                    await anyio.sleep(0.5)
                    after = _text(await session.call_tool("find_callers", {"name": "vat_rate"}))
                    if "refunds.py" in after:
                        break
                return before, after

    before, after = anyio.run(run)
    assert "billing/invoice.py:20" in before and "refunds.py" not in before
    assert "- billing/refunds.py:5  in function refund_vat (billing/refunds.py:4-5)" in after


def test_stdout_carries_only_the_protocol(tmp_path: Path) -> None:
    """Raw JSON-RPC over a pipe, the index built on start: every stdout line is a message."""
    import json
    import subprocess

    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    repo = write_tree(tmp_path / "raw", FILES)
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "find_callees", "arguments": {"name": "issue_invoice"}}},
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coderag_tui", "mcp", str(repo), "--db", str(tmp_path / "raw.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[int, Any] = {}
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            while message["id"] not in replies:
                line = proc.stdout.readline()
                assert line, proc.stderr.read() if proc.stderr else ""
                reply = json.loads(line)  # anything else on stdout fails here
                assert reply["jsonrpc"] == "2.0"
                if "id" in reply:
                    replies[reply["id"]] = reply
    proc.stdin.close()
    rest = proc.stdout.read()
    proc.wait(timeout=60)
    for line in rest.splitlines():
        json.loads(line)
    assert replies[1]["result"]["serverInfo"]["name"] == "coderag"
    text = replies[2]["result"]["content"][0]["text"]
    assert "- billing/invoice.py:7-23  class Invoice  (called at line 27)" in text
    assert "billing/invoice.py:14-15  method Invoice.add_line  (called at line 29)" in text
