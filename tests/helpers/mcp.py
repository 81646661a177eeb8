"""Driving the MCP server over stdio: a session's calls and their text answers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _session_calls(repo: Path, db: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[
        list[Any], dict[str, Any]]:
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("XDG_", "HF_", "CODERAG_")) or k in ("PYTHONPATH", "HOME", "PATH")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coderag_tui", "mcp", str(repo), "--db", str(db)],
        env=env,
        cwd=str(repo),
    )
    results: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            for key, (name, arguments) in enumerate(calls):
                results[f"{key}:{name}"] = await session.call_tool(name, arguments)
    return tools, results
