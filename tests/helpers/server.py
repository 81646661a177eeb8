"""`coderag serve` in a process of its own (`Server`), and `served`: two real git repositories
served with tokens and a scripted model; SSE and MCP-over-HTTP readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.marks import needs

ROOT = Path(__file__).resolve().parents[2]  # the repository


ADMIN = "admin-" + "a1b2c3d4" * 4


READ = "read-" + "e5f6a7b8" * 4


ANSWER = ["`tax_for` ", "adds the tax ", "(shop/tax.py:1-3)."]


SHOP = {
    "shop/tax.py": 'def tax_for(amount):\n    """The sales tax owed on an amount."""\n    return amount * 0.2\n',
    "shop/cart.py": "from shop.tax import tax_for\n\n\nclass Cart:\n    def __init__(self):\n"
                    "        self.items = []\n\n    def total(self):\n        subtotal = sum(self.items)\n"
                    "        return subtotal + tax_for(subtotal)\n",
}


BILLING = {
    "billing/invoice.py": 'def render_invoice(customer, lines):\n    """An invoice as text."""\n'
                          '    return customer + "\\n" + "\\n".join(lines)\n',
}


def _answer(h: Handler, n: int) -> None:
    if h.command == "POST":
        openai_sse(h, ANSWER)
    else:
        h.send_json(404, {"error": "no"})


class Server:
    """`coderag serve --json` in a process of its own; its address read from the line it prints
    once listening (its stderr goes to a file, read at the end)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "coderag_tui", "serve", "--json", "--port", "0",
                                          *args], env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server did not start: {log.read_text()}"
        self.info = json.loads(line)
        self.url = self.info["url"]

    def close(self) -> str:
        self.proc.terminate()
        self.proc.communicate(timeout=60)
        return self.log.read_text()


@pytest.fixture(scope="module")
@needs("server")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("served")
    shop, billing = write_tree(base / "shop", SHOP), write_tree(base / "billing", BILLING)
    git_init(shop)
    git_init(billing)
    model = Loopback(_answer)
    config = base / "config.toml"
    config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                      'model = "scripted"\ndiscover = false\ntools = "off"\ncache_similarity = 0\ntimeout_s = 30\n'
                      f'[server]\nrepositories = ["{shop}", "{billing}"]\n')  # the workspace to serve
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(base / "cache"),
           "XDG_CONFIG_HOME": str(base / "userconfig"), "XDG_DATA_HOME": str(base / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_ADMIN_TOKENS": ADMIN, "CODERAG_READ_TOKENS": READ}
    env.pop("CODERAG_CONFIG", None)
    server = Server(["--config", str(config)], env, base / "server.log")
    assert server.info["repositories"] == ["shop", "billing"] and server.info["tokens_required"]
    try:
        yield {"url": server.url, "config": config, "env": env, "model": model, "server": server,
               "shop": shop}
    finally:
        log = server.close()
        model.close()
        assert ADMIN not in log and READ not in log  # tokens never reach the server's output


def sse_events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    events, kind = [], ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            events.append((kind, json.loads(line.split(":", 1)[1])))
    return events


async def _mcp_calls(served: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {**served["env"], "CODERAG_TOKEN": READ}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "coderag_tui", "mcp", "--server", served["url"], "--repo", "shop"])
    out: dict[str, str] = {}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for n, (name, arguments) in enumerate(calls):
                result = await session.call_tool(name, arguments)
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                out[f"{n}:{name}"] = ("error: " if result.is_error else "") + text
    return out
