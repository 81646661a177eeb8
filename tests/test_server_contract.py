"""The rest of the service contract through a real `coderag serve` process and its client
(`RemoteCodeRag`): similar code, the repo map, units at a line, conversations kept per token,
the server's models (listed, chosen, and nothing else accepted), reviews of the served
repository (a secret, a link or a path outside it never read), summaries and embedding as admin
jobs, descriptions, and the index updates followed as they happen."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from coderag_tui.client import RemoteCodeRag, ServerError
from coderag_tui.contract import MODELS, REVIEW, SUMMARIES, WATCH
from coderag_tui.models import WatchEvent
from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.marks import needs
from tests.helpers.server import ROOT, Server

pytestmark = pytest.mark.server  # tests here start `coderag serve` themselves, not only through a fixture

ADMIN = "admin-" + "9a8b7c6d" * 4
ALICE = "alice-" + "5e4f3a2b" * 4
BOB = "bob-" + "1c0d9e8f" * 4
ANSWER = ["`tax_for` ", "adds the tax ", "(shop/tax.py:1-3)."]
SECRET = "hunter2-never-shown"
SHOP = {
    "shop/tax.py": 'def tax_for(amount):\n    """The sales tax owed on an amount."""\n    return amount * 0.2\n\n\n'
                   'def vat_for(amount):\n    """The value added tax owed on an amount."""\n    return amount * 0.2\n',
    "shop/cart.py": "from shop.tax import tax_for\n\n\nclass Cart:\n    def __init__(self):\n"
                    "        self.items = []\n\n    def total(self):\n        subtotal = sum(self.items)\n"
                    "        return subtotal + tax_for(subtotal)\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_total():\n    assert Cart().total() == 0\n",
    "settings.py": f'PASSWORD = "{SECRET}"\n',  # named as a secret: [index] secret_files below
}
BILLING = {"billing/invoice.py": 'def render_invoice(customer):\n    """An invoice as text."""\n    return customer\n'}


def _model(h: Handler, n: int) -> None:
    if h.command == "POST":
        openai_sse(h, ANSWER)  # answers and summaries alike
    else:
        h.send_json(404, {"error": "no"})


@pytest.fixture(scope="module")
@needs("server")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("contract_served")
    shop, billing = write_tree(base / "shop", SHOP), write_tree(base / "billing", BILLING)
    git_init(shop)
    git_init(billing)
    (base / "outside.py").write_text(f'KEY = "{SECRET}"\n')
    model = Loopback(_model)
    config = base / "config.toml"
    config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                      'model = "scripted"\ndiscover = false\ntools = "off"\ncache_similarity = 0\ntimeout_s = 30\n'
                      f'[[llm.fallback]]\nprovider = "openai"\nbase_url = "{model.url}/v1"\nmodel = "second"\n'
                      '[index]\nsecret_files = ["settings.py"]\n[summaries]\nbackground = false\n'
                      "[server]\nfetch_interval_s = 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(base / "cache"),
           "XDG_CONFIG_HOME": str(base / "userconfig"), "XDG_DATA_HOME": str(base / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_ADMIN_TOKENS": ADMIN, "CODERAG_READ_TOKENS": f"{ALICE},{BOB}"}
    env.pop("CODERAG_CONFIG", None)
    server = Server(["--config", str(config), str(shop), str(billing)], env, base / "server.log")
    try:
        yield {"url": server.url, "model": model, "shop": shop, "billing": billing, "base": base}
    finally:
        log = server.close()
        model.close()
        assert "Traceback" not in log, log
        assert all(t not in log for t in (ADMIN, ALICE, BOB))


def client(served: dict[str, Any], token: str = ALICE, repos: tuple[str, ...] = ("shop",)) -> RemoteCodeRag:
    return RemoteCodeRag(served["url"], token, list(repos))


def http(served: dict[str, Any], token: str = ALICE) -> httpx.Client:
    return httpx.Client(base_url=served["url"], headers={"Authorization": f"Bearer {token}"}, timeout=60)


def test_similar_code_the_map_and_units_at_a_line(served: dict[str, Any]) -> None:
    shop = client(served)
    [tax] = [u for u in shop.symbols("tax_for") if u.qualname == "tax_for"]
    similar = shop.similar(tax.id, 5)
    assert similar and tax.id not in {h.unit.id for h in similar}
    assert all("similar to tax_for" in h.reasons for h in similar)
    assert {h.unit.repo for h in similar} == {"shop"}
    with http(served) as raw:
        assert raw.get("/similar/99999", params={"repo": "shop"}).status_code == 404
        assert raw.get(f"/similar/{tax.id}").status_code == 400  # two repositories: the id needs its own
    shown = shop.repo_map(400)
    assert "class Cart" in shown and "def tax_for" in shown
    at = shop.units_at("shop/cart.py", 10)  # innermost first, as the index orders them
    assert [u.qualname for u in at[:2]] == ["Cart.total", "Cart"] and [u.kind for u in at[2:]] == ["file"]
    assert shop.tests_for("Cart.total")[0].unit.path == "tests/test_cart.py"
    assert shop.capabilities == {WATCH, MODELS, REVIEW, SUMMARIES}
    shop.close()


def test_conversations_belong_to_the_token_that_made_them(served: dict[str, Any]) -> None:
    alice, bob = client(served, ALICE), client(served, BOB)
    events = list(alice.ask("How is the tax of a cart computed?"))
    conversation = events[-1].conversation_id
    assert events[-1].kind == "done" and conversation > 0
    assert [c[0] for c in alice.conversations()][:1] == [conversation]
    messages = alice.load_conversation(conversation)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].content == "".join(ANSWER) and messages[1].sources
    assert conversation not in [c[0] for c in bob.conversations()]
    with http(served, BOB) as raw:
        stolen = raw.get(f"/conversations/{conversation}", params={"repo": "shop"})
        assert stolen.status_code == 404 and stolen.json()["error"] == f"no conversation {conversation}"
        assert "tax" not in stolen.text
    with pytest.raises(ServerError, match=f"no conversation {conversation}"):
        bob.load_conversation(conversation)
    assert client(served, ALICE, ()).conversations() == []  # two served, none chosen: each keeps its own
    alice.close()
    bob.close()


def test_the_server_s_models_listed_and_only_those_chosen(served: dict[str, Any]) -> None:
    shop = client(served)
    models = shop.list_models()
    assert [m.choice for m in models][:2] == ["scripted", "second"]  # (then the bundled GGUF)
    assert shop.model_info().name == "scripted"
    gguf = [m for m in models if m.provider == "llama"]
    assert gguf and all("/" not in m.path_or_url for m in gguf)  # a file's name, no folder of the server's
    with pytest.raises(ServerError, match="no model named '/etc/passwd'"):
        shop.select_model("/etc/passwd")
    assert shop.selected_model is None
    asked = len(served["model"].requests)
    with http(served) as raw:
        refused = raw.post("/ask", json={"question": "tax?", "repo": "shop", "model": "../models/x.gguf"})
        assert refused.status_code == 400 and "no model named" in refused.json()["error"]
    assert len(served["model"].requests) == asked  # no model was asked

    assert shop.select_model("second").choice == "second"
    events = list(shop.ask("How is the tax of a cart computed?", fresh=True))
    assert events[-1].kind == "done", [e.text for e in events]
    sent = json.loads(served["model"].requests[-1]["body"])
    assert sent["model"] == "second"  # the chosen model answered
    assert shop.select_model(None).name == "scripted" and shop.selected_model is None
    shop.close()


def test_a_review_of_the_served_repository(served: dict[str, Any]) -> None:
    shop_dir = served["shop"]
    tax = shop_dir / "shop" / "tax.py"
    before = tax.read_text()
    tax.write_text(before.replace("def tax_for(amount):", "def tax_for(amount, rate=0.2):"))
    (shop_dir / "shop" / "link.py").symlink_to(shop_dir / "settings.py")  # a link to the secret
    shop = client(served)
    try:
        review = shop.review("HEAD")
        changed = {c["qualname"]: c for c in review.to_json()["changes"]}
        assert "tax_for" in changed and changed["tax_for"]["callers"]
        assert review.markdown().startswith("# Review: working tree vs HEAD")
        assert any(p.path == "shop/tax.py" for p in review.composed().pieces)
        assert SECRET not in review.markdown() and SECRET not in json.dumps(review.to_json())
    finally:
        tax.write_text(before)
        (shop_dir / "shop" / "link.py").unlink()
    diff = ("--- a/shop/tax.py\n+++ b/shop/tax.py\n@@ -1,3 +1,3 @@\n-def tax_for(amount):\n+def tax_for(amount, rate):\n"
            '     """The sales tax owed on an amount."""\n     return amount * 0.2\n'
            "--- a/settings.py\n+++ b/settings.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
            "--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n")
    review = shop.review(diff_text=diff, diff_label="the client's patch")
    doc = review.to_json()
    assert [c["qualname"] for c in doc["changes"]] == ["tax_for"]
    assert "2 changed files left out" in review.markdown()
    assert SECRET not in review.markdown() and SECRET not in json.dumps(doc)
    with http(served) as raw:
        option = raw.post("/review", json={"repo": "shop", "base": "--output=/tmp/x"})
        assert option.status_code == 422
        unknown = raw.post("/review", json={"repo": "shop", "base": "no-such-branch"})
        assert unknown.status_code == 404 and "unknown revision" in unknown.json()["error"]
    shop.close()


def test_summaries_are_an_admin_job_and_exported(served: dict[str, Any]) -> None:
    reader, admin = client(served, ALICE), client(served, ADMIN)
    with pytest.raises(ServerError, match="not index or summarize"):
        reader.summarize(["shop/tax.py"])
    planned = reader.summary_estimate(["shop/tax.py"])
    assert planned.model == "openai:scripted" and not planned.local and planned.estimate.requests >= 2
    seen: list[str] = []
    result = admin.summarize(["shop/tax.py"], progress=lambda p: seen.append(p.phase))
    assert result.made >= 2 and result.failed == 0 and result.model == "openai:scripted"
    [described] = reader.descriptions(["shop/tax.py"])
    assert described.summary == "".join(ANSWER)
    assert {u.qualname: u.summary for u in described.units}["tax_for"] == "".join(ANSWER)
    with http(served, ADMIN) as raw:
        bad = raw.post("/summaries", json={"repo": "shop", "model": "/tmp/other.gguf"})
        assert bad.status_code == 400 and "no model named" in bad.json()["error"]
    reader.close()
    admin.close()


def test_embedding_is_an_admin_job(served: dict[str, Any]) -> None:
    reader, admin = client(served, ALICE), client(served, ADMIN)
    with pytest.raises(ServerError, match="not index or summarize"):
        reader.embed()
    assert admin.embed() is None  # its vectors are off
    assert not reader.vectors_pending()
    reader.close()
    admin.close()


def test_the_index_updates_are_followed_as_they_happen(served: dict[str, Any]) -> None:
    shop, everything = client(served), client(served, BOB, ())
    got: list[WatchEvent] = []
    all_got: list[WatchEvent] = []
    arrived = threading.Event()

    def on_event(event: WatchEvent) -> None:
        got.append(event)
        if event.phase == "indexed" and "shop/discount.py" in event.paths:
            arrived.set()

    watcher = shop.watch(on_event)
    other = everything.watch(all_got.append)
    extra = served["shop"] / "shop" / "discount.py"
    invoice = served["billing"] / "billing" / "invoice.py"
    try:
        extra.write_text("def holiday_discount(amount):\n    return amount * 0.9\n")
        invoice.write_text(invoice.read_text() + "\n\ndef render_credit_note(customer):\n    return customer\n")
        assert arrived.wait(60), [e.message for e in got]
        assert shop.symbols("holiday_discount")[0].path == "shop/discount.py"
        deadline = time.time() + 60
        while time.time() < deadline and not any(e.message.startswith("billing: ") for e in all_got):
            time.sleep(0.2)
        assert any(e.message.startswith("billing: ") and e.phase == "indexed" for e in all_got)
        assert any(e.message.startswith("shop: ") for e in all_got)  # several followed: each named
        assert not any("billing" in e.message for e in got)  # one chosen: only its updates
    finally:
        started = time.monotonic()
        watcher.stop()
        other.stop()
        stopped_in = time.monotonic() - started
        extra.unlink()
        invoice.write_text(BILLING["billing/invoice.py"])
    assert not watcher.running and stopped_in < 15
    with http(served) as raw:
        assert raw.get("/index/events", params={"repos": "shopp"}).status_code == 404
    with http(served, "not-a-token-at-all") as raw, raw.stream("GET", "/index/events") as r:
        assert r.status_code == 401
    shop.close()
    everything.close()


def test_the_event_stream_says_ready_first(served: dict[str, Any]) -> None:
    with http(served) as raw, raw.stream("GET", "/index/events", params={"repos": "billing"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        first = next(iter(sse_events_first(r)))
    assert first == ("ready", {"repositories": ["billing"]})


def sse_events_first(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            yield kind, json.loads(line.split(":", 1)[1])


def test_openapi_describes_the_new_endpoints(served: dict[str, Any]) -> None:
    with httpx.Client(base_url=served["url"], timeout=60) as anonymous:
        paths = anonymous.get("/openapi.json").json()["paths"]
    for path in ("/similar/{unit_id}", "/map", "/conversations", "/conversations/{conversation_id}", "/models",
                 "/review", "/summaries", "/summaries/estimate", "/descriptions", "/index/embed", "/index/events"):
        assert path in paths, path



def test_a_server_s_vectors_made_by_its_embedding_job(tmp_path: Path) -> None:
    """With vectors on (the bundled embedding model): what the index lacks is pending until the
    server's embedding job (its start's, then one a client asks for) has made it."""
    repo = write_tree(tmp_path / "shop", {k: v for k, v in SHOP.items() if k.startswith("shop/")})
    git_init(repo)
    config = tmp_path / "config.toml"
    config.write_text("[llm]\ndiscover = false\n[summaries]\nbackground = false\n[server]\nwatch = false\n"
                      "fetch_interval_s = 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "HF_HUB_OFFLINE": "1", "CODERAG_ADMIN_TOKENS": ADMIN, "CODERAG_READ_TOKENS": ALICE}
    env.pop("CODERAG_CONFIG", None)
    server = Server(["--config", str(config), str(repo)], env, tmp_path / "server.log")
    try:
        admin = RemoteCodeRag(server.url, ADMIN)
        with http({"url": server.url}, ADMIN) as raw:  # the start's jobs (its update, its embedding) first
            deadline = time.time() + 300
            while raw.get("/index/status").json()["index_health"] == "indexing" and time.time() < deadline:
                time.sleep(0.5)
        (repo / "shop" / "discount.py").write_text("def holiday_discount(amount):\n    return amount * 0.9\n")
        assert admin.index().files_indexed == 1  # a build without vectors (after the start's embedding)
        assert admin.vectors_pending()
        done = admin.embed()
        assert done is not None and done.embedded >= 1 and done.embedded + done.reused == done.chunks
        assert not admin.vectors_pending()
        admin.close()
    finally:
        log = server.close()
    assert "Traceback" not in log, log
