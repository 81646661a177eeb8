"""A PostgreSQL restart under a running `coderag serve --store`: a real server process over a
real PostgreSQL of its own. Searches go on working after the restart (each thread's
connection is opened again), answer 503 while the database is down, and `/health` says so."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.files import git_init, write_tree
from tests.helpers.marks import needs
from tests.helpers.pg import Restartable
from tests.helpers.server import ROOT, Server

TOKEN = "reader-" + "3c4d5e6f" * 4
FILES = {"shop/tax.py": 'def tax_for(amount):\n    """The sales tax."""\n    return amount * 0.2\n'}


@pytest.fixture(scope="module")
@needs("postgres")
def pg() -> Iterator[Restartable]:
    server = Restartable(Path(tempfile.mkdtemp(prefix="coderag-pg-restart-")))
    yield server
    server.close()


@pytest.fixture
@needs("server")
def served(pg: Restartable, tmp_path: Path) -> Iterator[dict[str, Any]]:
    repo = write_tree(tmp_path / "shop", FILES)
    git_init(repo)
    url = pg.database(f"coderag_restart_{os.getpid()}_{int(time.time() * 1000) % 100000}")
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\n[server]\nfetch_interval_s = 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_READ_TOKENS": TOKEN}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS"):
        env.pop(key, None)
    server = Server(["--config", str(config), "--store", url, str(repo)], env, tmp_path / "server.log")
    try:
        yield {"server": server}
    finally:
        log = server.close()
        assert "Traceback" not in log, log


def _search(client: httpx.Client) -> httpx.Response:
    return client.post("/search", json={"query": "tax_for", "limit": 3})


def test_a_database_restart_under_a_running_server(pg: Restartable, served: dict[str, Any]) -> None:
    server = served["server"]
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
        assert _search(client).status_code == 200
        pg.restart()
        after = [_search(client) for _ in range(10)]
        assert [r.status_code for r in after] == [200] * 10, [r.text for r in after]
        assert after[-1].json()["results"][0]["name"] == "tax_for"
        assert client.get("/health").json()["stores"][0]["up"] is True

        pg.stop()
        try:
            down = _search(client)
            assert down.status_code == 503 and down.headers["retry-after"] == "2"
            assert "cannot be reached" in down.json()["error"] and "try again" in down.json()["error"]
            health = client.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "unavailable"
            assert health.json()["stores"][0]["up"] is False
        finally:
            pg.start()
        started = time.monotonic()
        while _search(client).status_code != 200:  # at most a second between tries while it was down
            assert time.monotonic() - started < 10
            time.sleep(0.2)
        assert client.get("/health").json()["status"] == "ok"
        assert all(_search(client).status_code == 200 for _ in range(5))


def test_a_git_url_served_from_postgres_follows_its_pushes(pg: Restartable, tmp_path: Path) -> None:
    from tests.helpers.git_server import defined, origin_with, push, status_of, wait_for
    origin, work = origin_with(tmp_path / "git", FILES)
    url = pg.database(f"coderag_pushes_{os.getpid()}_{int(time.time() * 1000) % 100000}")
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\n[server]\nfetch_interval_s = 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_READ_TOKENS": TOKEN}
    env.pop("CODERAG_CONFIG", None)
    server = Server(["--config", str(config), "--store", url, f"file://{origin}"], env, tmp_path / "server.log")
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
            assert defined(client, "tax_for") == ["origin:shop/tax.py"]
            head = push(work, {"shop/ship.py": "def shipping_cost(weight):\n    return weight * 3\n"}, "shipping")
            wait_for(lambda: defined(client, "shipping_cost") == ["origin:shop/ship.py"])
            wait_for(lambda: status_of(client, "origin")["commit"] == head)
            lines = client.get("/lines", params={"path": "shop/ship.py"}).json()  # read from the clone
            assert lines["lines"] == ["def shipping_cost(weight):", "    return weight * 3"]
    finally:
        log = server.close()
    assert "Traceback" not in log, log
