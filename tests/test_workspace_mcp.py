"""`coderag mcp A B C`: the MCP tools over a workspace of three real git repositories, over
stdio. Every path is `repo/path`, so each citation names its repository and a path given
back reaches it; the repositories are indexed by the server when they have no index."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _calls(paths: list[str], config: str, cwd: Path,
                 calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("XDG_", "HF_", "CODERAG_")) or k in ("PYTHONPATH", "HOME", "PATH")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    params = StdioServerParameters(command=sys.executable, args=["-m", "coderag_tui", "mcp", *paths,
                                                                 "--config", config], env=env, cwd=str(cwd))
    out = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, arguments in calls:
                out.append(await session.call_tool(name, arguments))
    return out


def test_the_tools_span_the_workspace(repos: dict[str, Any], tmp_path: Path) -> None:
    paths = [str(repos[n]) for n in ("shared-lib", "backend", "frontend")]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_codebase", {"query": "loyalty discount applied at checkout", "limit": 5}),
        ("lookup_symbol", {"name": "apply_discount"}),
        ("find_callers", {"name": "apply_discount"}),
        ("read_lines", {"path": "backend/app/checkout.py", "start": 6, "end": 9}),
        ("get_file_summary", {"path": "shared-lib/shared_lib/pricing.py"}),
        ("repo_map", {"max_tokens": 600}),
        ("read_lines", {"path": "elsewhere/app.py"}),
        ("get_context", {"task": "how is the discount for a customer's cart computed", "max_tokens": 1500}),
    ]
    search, symbol, callers, lines, summary, repo_map, missing, context = [
        r for r in anyio.run(_calls, paths, repos["config"], tmp_path, calls)]
    found = _text(search)
    assert "backend/app/checkout.py:" in found and "shared-lib/shared_lib/pricing.py:" in found
    assert "shared-lib/shared_lib/pricing.py:4-7" in _text(symbol)
    assert "backend/app/checkout.py:" in _text(callers)
    assert _text(lines).startswith("backend/app/checkout.py:6-9\n") and "def checkout_total" in _text(lines)
    text = _text(summary)
    assert text.startswith("shared-lib/shared_lib/pricing.py:1-") and "def apply_discount" in text
    assert "== shared-lib" in _text(repo_map) and "== backend" in _text(repo_map)
    assert missing.is_error and "in no repository of this workspace" in _text(missing)
    assert "backend/app/checkout.py:" in _text(context) and "shared-lib/shared_lib/pricing.py:" in _text(context)
