"""The store service over a real PostgreSQL: the shop indexed by `coderag index --store`
(`pg_indexed`), then served by `coderag serve --store` (`pg_served`), with a scripted model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.marks import needs
from tests.helpers.pg import fresh_database
from tests.helpers.server import ADMIN, READ, ROOT, SHOP, Server

TESTS = {"tests/test_tax.py": "from shop.tax import tax_for\n\n\ndef test_tax_for():\n    assert tax_for(10) == 2.0\n"}


def _answer(h: Handler, n: int) -> None:
    if h.command == "POST":
        openai_sse(h, ANSWER)
    else:
        h.send_json(404, {"error": "no"})


def _config(path: Path, model_url: str) -> Path:
    path.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model_url}/v1"\n'
                    'model = "scripted"\ndiscover = false\ntools = "off"\ncache_similarity = 0\ntimeout_s = 30\n')
    return path


@pytest.fixture(scope="module")
def pg_module(pg_server: str) -> Iterator[str]:
    """A database of its own for the module's tests (the server's tests read one index)."""
    yield from fresh_database(pg_server, "coderag_svc")


@pytest.fixture(scope="module")
def pg_indexed(pg_module: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The shop repository indexed into PostgreSQL by `coderag index --store`."""
    base = tmp_path_factory.mktemp("pgsvc")
    repo = write_tree(base / "shop", {**SHOP, **TESTS})
    git_init(repo)
    model = Loopback(_answer)
    config = _config(base / "config.toml", model.url)
    try:
        assert main(["index", str(repo), "--store", pg_module, "--config", str(config)]) == 0
        yield {"url": pg_module, "repo": repo, "config": config, "model": model, "base": base}
    finally:
        model.close()


@pytest.fixture(scope="module")
@needs("server")
def pg_served(pg_indexed: dict[str, Any]) -> Iterator[dict[str, Any]]:
    base: Path = pg_indexed["base"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(base / "cache"),
           "XDG_CONFIG_HOME": str(base / "userconfig"), "XDG_DATA_HOME": str(base / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_ADMIN_TOKENS": ADMIN, "CODERAG_READ_TOKENS": READ}
    env.pop("CODERAG_CONFIG", None)
    # beyond loopback (every address), so tokens are required; the tests connect through loopback
    server = Server(["--host", "0.0.0.0", "--store", pg_indexed["url"], "--config", str(pg_indexed["config"]),
                     str(pg_indexed["repo"])], env, base / "server.log")
    try:
        assert server.info["repositories"] == ["shop"] and server.info["tokens_required"]
        assert server.url.startswith("http://0.0.0.0:")
        yield {**pg_indexed, "url": server.url.replace("0.0.0.0", "127.0.0.1"), "store": pg_indexed["url"], "env": env}
    finally:
        log = server.close()
        assert ADMIN not in log and READ not in log and "Traceback" not in log, log
        assert not list((base / "cache").rglob("*.db")), "an index file was made beside the store"


ANSWER = ["`tax_for` ", "adds the tax ", "(shop/tax.py:1-3)."]
