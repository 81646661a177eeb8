"""A served repository probed as an attacker would: a real `coderag serve` process on loopback
(tokens, a scripted model), reached with a rebinding `Host`, a web page's `Origin`, a second
token continuing someone's conversation, a large body sent without a token, ids and line
numbers out of range, a file swapped for a symbolic link after indexing; and a server given
no token on loopback, which makes one."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.marks import needs
from tests.helpers.server import ROOT, Server, sse_events

pytestmark = pytest.mark.server  # tests here start `coderag serve` themselves, not only through a fixture

ADMIN = "admin-" + "0a1b2c3d" * 4
ALICE = "alice-" + "4e5f6a7b" * 4
BOB = "bob-" + "8c9d0e1f" * 4
FILES = {
    "shop/tax.py": 'def tax_for(amount):\n    """The sales tax owed on an amount."""\n    return amount * 0.2\n',
    "shop/long.py": "".join(f"X{n} = {n}\n" for n in range(1, 1001)),
    ".env": "DATABASE_PASSWORD=hunter2-very-secret\n",
}


def _answer(h: Handler, n: int) -> None:
    if h.command == "POST":
        openai_sse(h, ["The tax is 20% ", "(shop/tax.py:1-3)."])
    else:
        h.send_json(404, {"error": "no"})


def _env(base: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(base / "cache"),
           "XDG_CONFIG_HOME": str(base / "userconfig"), "XDG_DATA_HOME": str(base / "data"), "HF_HUB_OFFLINE": "1",
           **extra}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS", "CODERAG_READ_TOKENS", "CODERAG_TOKEN"):
        if key not in extra:
            env.pop(key, None)
    return env


@pytest.fixture(scope="module")
@needs("server")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("trust")
    repo = write_tree(base / "shop", FILES)
    git_init(repo)
    model = Loopback(_answer)
    config = base / "config.toml"
    config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                      'model = "scripted"\ndiscover = false\ntools = "off"\ncache_similarity = 0\ntimeout_s = 30\n'
                      "[server]\nwatch = false\nfetch_interval_s = 0\n")
    env = _env(base, CODERAG_ADMIN_TOKENS=ADMIN, CODERAG_READ_TOKENS=f"{ALICE},{BOB}")
    server = Server(["--config", str(config), str(repo)], env, base / "server.log")
    try:
        yield {"url": server.url, "repo": repo, "model": model, "server": server, "base": base, "config": config}
    finally:
        log = server.close()
        model.close()
        assert "Traceback" not in log, log
        assert all(t not in log for t in (ADMIN, ALICE, BOB))


def http(served: dict[str, Any], token: str | None = ALICE, **headers: str) -> httpx.Client:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=served["url"], headers={**auth, **headers}, timeout=60)


def test_a_rebinding_host_and_a_foreign_origin_are_refused(served: dict[str, Any]) -> None:
    port = httpx.URL(served["url"]).port
    with http(served) as own:
        assert own.get("/lines", params={"path": "shop/tax.py"}).status_code == 200
        assert own.get("/lines", params={"path": "shop/tax.py"}, headers={"Host": f"localhost:{port}"}).status_code == 200
        # what a page on rebind.example sends once its name resolves to 127.0.0.1
        rebound = own.get("/lines", params={"path": "shop/tax.py"}, headers={"Host": f"rebind.example:{port}"})
        assert rebound.status_code == 421 and "tax_for" not in rebound.text
        assert "host name" in rebound.json()["error"]
        assert own.get("/health", headers={"Host": f"rebind.example:{port}"}).status_code == 421
        page = own.post("/search", json={"query": "tax"}, headers={"Origin": "https://evil.example"})
        assert page.status_code == 403 and "tax_for" not in page.text
        assert own.post("/search", json={"query": "tax"}, headers={"Origin": "null"}).status_code == 403
        same = own.post("/search", json={"query": "tax"}, headers={"Origin": served["url"]})
        assert same.status_code == 200  # the server's own origin


def test_a_second_token_cannot_continue_a_conversation(served: dict[str, Any]) -> None:
    with http(served, ALICE) as alice, alice.stream("POST", "/ask", json={"question": "How is tax computed?"}) as r:
        events = sse_events(r)
    assert events[-1][0] == "done"
    conversation = events[-1][1]["conversation_id"]
    assert conversation > 0
    asked = len(served["model"].requests)
    with http(served, BOB) as bob:
        stolen = bob.post("/ask", json={"question": "And what did I ask before?", "conversation_id": conversation})
        assert stolen.status_code == 404 and stolen.json()["error"] == f"no conversation {conversation}"
        never = bob.post("/ask", json={"question": "And then?", "conversation_id": 987654})
        assert never.status_code == 404 and never.json()["error"] == "no conversation 987654"  # the same answer
    assert len(served["model"].requests) == asked  # the model was never asked
    with http(served, ALICE) as alice, alice.stream(
            "POST", "/ask", json={"question": "And where is it defined?", "conversation_id": conversation}) as r:
        events = sse_events(r)
    assert events[-1][0] == "done" and events[-1][1]["conversation_id"] == conversation


def _raw(url: str, head: bytes, body: bytes, wait_s: float) -> bytes:
    """Send `head` and the start of a body, then read what comes back within `wait_s`."""
    parsed = httpx.URL(url)
    with socket.create_connection((parsed.host, parsed.port), timeout=wait_s) as sock:
        sock.sendall(head + body)
        sock.settimeout(wait_s)
        try:
            return sock.recv(65536)
        except TimeoutError:
            return b""


def test_a_large_body_without_a_token_is_refused_unread(served: dict[str, Any]) -> None:
    port = httpx.URL(served["url"]).port
    size = 6_500_000  # announced; only its first bytes are ever sent
    head = (f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    started = time.perf_counter()
    answer = _raw(served["url"], head, b"[" * 4096, wait_s=10)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]  # answered without waiting for the rest
    assert time.perf_counter() - started < 10
    assert b"connection: close" in answer.lower()
    with http(served) as reader:  # and a body over an endpoint's limit, with a token, is not read either
        refused = reader.post("/search", content=b"[" * (70 * 1024), headers={"content-type": "application/json"})
        assert refused.status_code == 413 and refused.json()["error"] == "the request is larger than 64 KiB"
        assert reader.get("/health").json()["status"] == "ok"


def test_ids_and_line_numbers_out_of_range(served: dict[str, Any]) -> None:
    with http(served) as reader:
        past = reader.get("/lines", params={"path": "shop/long.py", "end": -1})
        assert past.status_code == 422 and past.json()["error"].startswith("query.end:")
        capped = reader.get("/lines", params={"path": "shop/long.py", "start": 1, "end": 100_000}).json()
        assert len(capped["lines"]) == 400 and capped["total"] == 1000
        for big in ("9223372036854775808", "99999999999999999999999999"):
            huge = reader.get(f"/unit/{big}")
            assert huge.status_code == 422 and "unit_id" in huge.json()["error"]
        assert reader.get("/unit/9223372036854775807").status_code == 404
        too_big = reader.post("/ask", json={"question": "x", "conversation_id": 2**63})
        assert too_big.status_code == 422
        assert reader.get("/health").status_code == 200  # the connection and the server are fine


def test_a_file_swapped_for_a_link_after_indexing_is_not_read(served: dict[str, Any]) -> None:
    tax = served["repo"] / "shop" / "tax.py"
    kept = tax.read_text()
    tax.unlink()
    tax.symlink_to(served["repo"] / ".env")
    try:
        with http(served) as reader:
            lines = reader.get("/lines", params={"path": "shop/tax.py"})
            assert lines.status_code == 404 and "symbolic link" in lines.json()["error"] and "hunter2" not in lines.text
            found = reader.post("/search", json={"query": "tax_for", "include_context": True}).json()["results"]
            assert found and all("hunter2" not in r["code_snippet"] for r in found)
            secret = reader.get("/lines", params={"path": ".env"})
            assert secret.status_code in (400, 404) and "hunter2" not in secret.text
    finally:
        tax.unlink()
        tax.write_text(kept)


def test_a_server_on_loopback_without_tokens_makes_one(tmp_path: Path) -> None:
    from coderag_tui.client import RemoteCodeRag, local_token
    from coderag_tui.config import Settings

    repo = write_tree(tmp_path / "shop", {"shop/tax.py": FILES["shop/tax.py"]})
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\n[server]\nwatch = false\n")
    env = _env(tmp_path)
    server = Server(["--config", str(config), str(repo)], env, tmp_path / "server.log")
    try:
        token = server.info["token"]
        assert server.info["tokens_required"] and len(token) >= 32
        with httpx.Client(base_url=server.url, timeout=60) as anonymous:
            assert anonymous.get("/lines", params={"path": "shop/tax.py"}).status_code == 401
            ok = anonymous.get("/lines", params={"path": "shop/tax.py"}, headers={"Authorization": f"Bearer {token}"})
            assert ok.status_code == 200
        # this user's clients find it (the file is this user's alone)
        old = os.environ.get("XDG_DATA_HOME")
        os.environ["XDG_DATA_HOME"] = env["XDG_DATA_HOME"]
        try:
            assert local_token(server.url) == token
            client = RemoteCodeRag.from_settings(server.url, Settings())
            assert [u.name for u in client.symbols("tax_for")] == ["tax_for"]
            client.close()
        finally:
            if old is None:
                os.environ.pop("XDG_DATA_HOME")
            else:
                os.environ["XDG_DATA_HOME"] = old
    finally:
        log = server.close()
    assert f"token {token}" in log  # printed once, to whoever started it
    no_token = Server(["--config", str(config), "--no-token", str(repo)], env, tmp_path / "server2.log")
    try:
        assert no_token.info["token"] is None and not no_token.info["tokens_required"]
        assert httpx.get(no_token.url + "/lines", params={"path": "shop/tax.py"}, timeout=60).status_code == 200
    finally:
        no_token.close()


def test_the_answer_cache_is_shared_and_conversations_are_not(served: dict[str, Any], tmp_path: Path) -> None:
    """A cached answer reaches every token (it is made from the repository's code only), as a
    new conversation of the one who asked; the service refuses another's conversation too."""
    from coderag_tui.config import load_settings
    from coderag_tui.service import CodeRag

    repo = write_tree(tmp_path / "shop", {"shop/tax.py": FILES["shop/tax.py"]})
    config = tmp_path / "config.toml"
    config.write_text(served["config"].read_text().replace("cache_similarity = 0", "cache_similarity = 0.5"))
    service = CodeRag(repo, load_settings(repo, config), tmp_path / "index.db")
    service.index()
    first = list(service.ask("How is the sales tax computed?", owner="alice"))
    assert first[-1].kind == "done"
    again = list(service.ask("how is the sales tax computed", owner="bob"))
    assert any(e.cached for e in again) and again[-1].kind == "done"
    assert again[-1].conversation_id != first[-1].conversation_id
    assert service.conversation_owner(again[-1].conversation_id) == "bob"
    assert service.conversation_owner(first[-1].conversation_id) == "alice"
    stolen = list(service.ask("and then?", first[-1].conversation_id, owner="bob"))
    assert stolen[-1].kind == "error" and stolen[-1].text == f"no conversation {first[-1].conversation_id}"
    assert not any(e.kind == "token" for e in stolen)
    service.close()
