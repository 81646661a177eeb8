"""A server that keeps itself current: a real `coderag serve` process serving a git repository
by its `file://` URL and a local folder. A commit pushed to the origin becomes searchable
without any call to `/index/build` (fetched on the interval, or at once on a signed push
webhook); a webhook with a wrong signature changes nothing; an edit in the local folder is
picked up by the watcher; `/index/status` says each repository's commit, when it was last
checked and what runs."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.files import write_tree
from tests.helpers.git_server import defined, git, origin_with, push, status_of, wait_for
from tests.helpers.server import ROOT, Server

pytestmark = pytest.mark.server  # tests here start `coderag serve` themselves, not only through a fixture

TOKEN = "reader-" + "5a6b7c8d" * 4
SECRET = "hook-secret-" + "9e8f7a6b" * 3
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}








def start(base: Path, targets: list[str], server_settings: str) -> Server:
    config = base / "config.toml"
    config.write_text(f"[embed]\nenabled = false\n[llm]\ndiscover = false\n[watch]\ndebounce_ms = 200\n"
                      f"save_debounce_ms = 100\n[server]\n{server_settings}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(base / "cache"),
           "XDG_CONFIG_HOME": str(base / "userconfig"), "XDG_DATA_HOME": str(base / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_READ_TOKENS": TOKEN, "CODERAG_WEBHOOK_SECRET": SECRET}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS"):
        env.pop(key, None)
    return Server(["--config", str(config), *targets], env, base / "server.log")


def http(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)








@pytest.fixture
def polled(tmp_path: Path) -> Iterator[dict[str, Any]]:
    origin, work = origin_with(tmp_path / "git", {"shop/tax.py": "def tax_for(amount):\n    return amount * 0.2\n"})
    folder = write_tree(tmp_path / "notes", {"notes/todo.py": "def remember():\n    return 1\n"})
    server = start(tmp_path, [f"file://{origin}", str(folder)], "fetch_interval_s = 1\n")
    try:
        yield {"server": server, "origin": origin, "work": work, "folder": folder}
    finally:
        log = server.close()
        assert "Traceback" not in log, log


def test_a_pushed_commit_becomes_searchable_without_a_build(polled: dict[str, Any]) -> None:
    server, work = polled["server"], polled["work"]
    with http(server) as client:
        assert defined(client, "tax_for") == ["origin:shop/tax.py"]
        first = status_of(client, "origin")
        head = push(work, {"shop/ship.py": "def shipping_cost(weight):\n    return weight * 3\n"}, "shipping")
        wait_for(lambda: defined(client, "shipping_cost") == ["origin:shop/ship.py"])
        assert first["kind"] == "git" and first["commit"] == git("rev-parse", "HEAD~1", cwd=work)
        wait_for(lambda: status_of(client, "origin")["commit"] == head)
        now = status_of(client, "origin")
        assert now["checked"] >= first["checked"] and now["error"] == ""
        jobs = client.get("/index/status").json()["jobs"]
        assert not any(j["status"] == "failed" for j in jobs), jobs

        notes = status_of(client, "notes")  # the local folder is watched
        assert notes["kind"] == "folder" and notes["watching"]
        (polled["folder"] / "notes" / "later.py").write_text("def postpone():\n    return 2\n")
        wait_for(lambda: defined(client, "postpone") == ["notes:notes/later.py"])


def _signed(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def test_a_signed_webhook_updates_and_a_wrong_one_changes_nothing(tmp_path: Path) -> None:
    origin, work = origin_with(tmp_path / "git", {"shop/tax.py": "def tax_for(amount):\n    return amount * 0.2\n"})
    server = start(tmp_path, [f"file://{origin}"], "fetch_interval_s = 0\n")  # no interval: hooks only
    try:
        with http(server) as client, httpx.Client(base_url=server.url, timeout=60) as platform:
            wait_for(lambda: all(j["status"] not in ("queued", "running")
                                 for j in client.get("/index/status").json()["jobs"]))
            jobs_before = len(client.get("/index/status").json()["jobs"])
            push(work, {"shop/ship.py": "def shipping_cost(weight):\n    return weight * 3\n"}, "shipping")
            body = json.dumps({"ref": "refs/heads/main", "repository": {
                "full_name": "team/origin", "clone_url": f"file://{origin}"}}).encode()
            headers = {"content-type": "application/json", "x-github-event": "push"}
            forged = platform.post("/hooks/github", content=body,
                                   headers={**headers, "x-hub-signature-256": "sha256=" + "0" * 64})
            assert forged.status_code == 401 and "signature" in forged.json()["error"]
            unsigned = platform.post("/hooks/github", content=body, headers=headers)
            assert unsigned.status_code == 401
            wrong_token = platform.post("/hooks/gitlab", content=body, headers={"x-gitlab-token": "guess" * 5})
            assert wrong_token.status_code == 401
            time.sleep(3)
            assert defined(client, "shipping_cost") == []  # nothing changed
            assert len(client.get("/index/status").json()["jobs"]) == jobs_before  # nothing ran

            ping = platform.post("/hooks/github", content=b"{}", headers={"x-github-event": "ping",
                                                                            "x-hub-signature-256": _signed(b"{}")})
            assert ping.status_code == 200
            other = json.dumps({"repository": {"clone_url": "https://github.com/someone/else.git"}}).encode()
            ignored = platform.post("/hooks/github", content=other,
                                    headers={**headers, "x-hub-signature-256": _signed(other)})
            assert ignored.status_code == 202 and ignored.json()["repositories"] == []

            signed = platform.post("/hooks/github", content=body, headers={**headers, "x-hub-signature-256": _signed(body)})
            assert signed.status_code == 202 and signed.json()["repositories"] == ["origin"]
            wait_for(lambda: defined(client, "shipping_cost") == ["origin:shop/ship.py"])

            push(work, {"shop/gift.py": "def wrap_gift(item):\n    return item\n"}, "gifts")
            gitlab = json.dumps({"object_kind": "push", "project": {"git_http_url": f"file://{origin}"}}).encode()
            hooked = platform.post("/hooks/gitlab", content=gitlab,
                                   headers={"x-gitlab-token": SECRET, "x-gitlab-event": "Push Hook"})
            assert hooked.status_code == 202 and hooked.json()["repositories"] == ["origin"]
            wait_for(lambda: defined(client, "wrap_gift") == ["origin:shop/gift.py"])
    finally:
        log = server.close()
    assert "Traceback" not in log and SECRET not in log
