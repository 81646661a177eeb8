"""Remote providers against real HTTP servers on loopback (no network needed).

- a real OpenAI-compatible server: `python -m llama_cpp.server` with the bundled GGUF;
- scripted stdlib HTTP servers that fail on purpose (429, 500, 401, broken streams),
  speak Anthropic's SSE, or serve a file for `pull_model`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering import Answerer, ProviderOptions, create, create_llm, pull_model
from coderag_tui.answering.fallback import FallbackProvider
from coderag_tui.answering.providers.anthropic import AnthropicProvider
from coderag_tui.answering.providers.openai_compat import OpenAICompatProvider, chat_url
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import ModelError, ProviderError
from coderag_tui.models import ChatMessage, ComposedContext, ContextPiece, Progress
from tests.helpers.loopback import (
    Handler,
    LlamaServer,
    free_port,
    openai_sse,
)

FAST = ProviderOptions(backoff_s=0.01, max_retry_after_s=5.0)
SECRET = "sk-test-5f0c1e9a2b7d4c3e8f6a"
MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "Say hello.")]

# --------------------------------------------------------------------------- a scripted server












def openai(base_url: str, **kw: Any) -> ProviderSettings:
    kw.setdefault("timeout_s", 10.0)
    return ProviderSettings(provider="openai", base_url=base_url, **kw)


def stream_text(provider: Any, max_tokens: int = 32) -> str:
    return "".join(provider.stream(MESSAGES, max_tokens=max_tokens, temperature=0.0))


# --------------------------------------------------------------------------- OpenAI-compatible


def test_chat_url_accepts_servers_with_or_without_v1() -> None:
    assert chat_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_url("") == "https://api.openai.com/v1/chat/completions"


def test_openai_streams_and_sends_the_request(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_KEY", SECRET)
    server = loopback(lambda h, n: openai_sse(h, ["Hel", "lo", "!"]))
    provider = create(openai(server.url, model="m", api_key_env="CODERAG_TEST_KEY"), FAST)
    assert stream_text(provider) == "Hello!"
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == f"Bearer {SECRET}"
    body = json.loads(req["body"])
    assert body["stream"] is True and body["model"] == "m" and body["max_tokens"] == 32
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]


def test_429_with_retry_after_then_success(loopback: Any) -> None:
    def respond(h: Handler, n: int) -> None:
        if n == 0:
            h.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})
        else:
            openai_sse(h, ["ok"])

    server = loopback(respond)
    provider = create(openai(server.url, retries=2), ProviderOptions(backoff_s=0.01))
    start = time.monotonic()
    assert stream_text(provider) == "ok"
    assert len(server.requests) == 2
    assert time.monotonic() - start >= 0.9  # Retry-After was honoured, not the tiny backoff


def test_500_always_gives_a_retryable_error_after_n_retries(loopback: Any) -> None:
    server = loopback(lambda h, n: h.send_json(500, {"error": {"message": "model crashed"}}))
    provider = create(openai(server.url, retries=3), FAST)
    start = time.monotonic()
    with pytest.raises(ProviderError) as exc:
        stream_text(provider)
    assert time.monotonic() - start < 5
    assert len(server.requests) == 4  # 1 try + 3 retries
    assert exc.value.retryable
    assert "HTTP 500" in exc.value.one_line() and "model crashed" in exc.value.one_line()


def test_401_names_the_variable_never_the_key(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_KEY", SECRET)
    server = loopback(lambda h, n: h.send_json(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}))
    provider = create(openai(server.url, api_key_env="CODERAG_TEST_KEY", retries=3), FAST)
    assert isinstance(provider, OpenAICompatProvider)
    with pytest.raises(ProviderError) as exc:
        stream_text(provider)
    line = exc.value.one_line()
    assert line == f"the API key in $CODERAG_TEST_KEY was rejected by {server.url} (HTTP 401)"
    assert SECRET not in line and SECRET not in repr(exc.value) and SECRET not in str(exc.value.__cause__)
    assert not exc.value.retryable and len(server.requests) == 1
    assert SECRET not in repr(provider.http) and SECRET not in repr(provider.info())
    events = list(Answerer(provider).ask("q?", ComposedContext("q", "semantic", (), 0, 100), ""))
    assert events[-1].kind == "error" and SECRET not in events[-1].text


def test_other_4xx_is_not_retried_and_the_key_is_redacted(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_KEY", SECRET)
    server = loopback(lambda h, n: h.send_json(400, {"error": {"message": f"bad request with {SECRET}"}}))
    provider = create(openai(server.url, api_key_env="CODERAG_TEST_KEY"), FAST)
    with pytest.raises(ProviderError, match="refused the request \\(HTTP 400\\): bad request with \\*\\*\\*") as exc:
        stream_text(provider)
    assert SECRET not in exc.value.one_line() and len(server.requests) == 1


def test_connection_refused_is_one_clear_line() -> None:
    port = free_port()
    provider = create(openai(f"http://127.0.0.1:{port}/v1", retries=2), FAST)
    with pytest.raises(ProviderError) as exc:
        stream_text(provider)
    assert exc.value.one_line() == f"cannot reach http://127.0.0.1:{port}: is the server running?"
    assert exc.value.retryable


def test_a_stream_broken_midway_is_reported_not_replayed(loopback: Any) -> None:
    def respond(h: Handler, n: int) -> None:
        h.start_sse()
        doc = {"choices": [{"delta": {"content": "partial"}}]}
        h.chunk(f"data: {json.dumps(doc)}\n\n")
        h.abort()

    server = loopback(respond)
    provider = create(openai(server.url, retries=3), FAST)
    got: list[str] = []
    with pytest.raises(ProviderError, match="broke during the answer"):
        for text in provider.stream(MESSAGES, max_tokens=8, temperature=0):
            got.append(text)
    assert got == ["partial"] and len(server.requests) == 1


@pytest.mark.parametrize("first", ["503", "refused"])
def test_fallback_answers_from_the_second_provider(loopback: Any, first: str) -> None:
    good = loopback(lambda h, n: openai_sse(h, ["from ", "second"]))
    if first == "503":
        bad_url = loopback(lambda h, n: h.send_json(503, {"error": "overloaded"})).url
    else:
        bad_url = f"http://127.0.0.1:{free_port()}"
    settings = LLMSettings(
        provider="openai", model="first", base_url=bad_url, retries=1, timeout_s=5.0,
        fallback=(openai(good.url, model="second"),),
    )
    provider = create_llm(settings, FAST)
    assert isinstance(provider, FallbackProvider)
    piece = ContextPiece("a.py", 1, 2, "primary", "a", "x = 1\ny = 2", 6, "python")
    events = list(Answerer(provider, max_tokens=16).ask("q?", ComposedContext("q", "symbol", (piece,), 6, 100), ""))
    assert "".join(e.text for e in events if e.kind == "token") == "from second"
    done = events[-1]
    assert done.kind == "done" and done.text.startswith("answered by openai:second (after: openai:first:")
    assert provider.answered_by == "openai:second" and provider.info().name == "second"


def test_fallback_does_not_hide_a_rejected_key(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_KEY", SECRET)
    bad = loopback(lambda h, n: h.send_json(403, {}))
    good = loopback(lambda h, n: openai_sse(h, ["never"]))
    provider = create_llm(LLMSettings(provider="openai", base_url=bad.url, api_key_env="CODERAG_TEST_KEY",
                                      fallback=(openai(good.url),)), FAST)
    with pytest.raises(ProviderError, match="CODERAG_TEST_KEY was rejected"):
        stream_text(provider)
    assert not good.requests


# --------------------------------------------------------------------------- Anthropic


def anthropic_sse(h: Handler, tokens: list[str]) -> None:
    h.start_sse()

    def event(name: str, doc: dict[str, Any]) -> None:
        h.chunk(f"event: {name}\ndata: {json.dumps(doc)}\n\n")

    event("message_start", {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}})
    event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    event("ping", {"type": "ping"})
    for t in tokens:
        event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": t}})
    event("content_block_stop", {"type": "content_block_stop", "index": 0})
    event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}})
    event("message_stop", {"type": "message_stop"})
    h.end_chunks()


def test_anthropic_streams_messages_api(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_ANTHROPIC", SECRET)

    def respond(h: Handler, n: int) -> None:
        if n == 0:
            h.send_json(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        else:
            anthropic_sse(h, ["Hi ", "there", "."])

    server = loopback(respond)
    settings = ProviderSettings(provider="anthropic", model="claude-test", base_url=server.url,
                                api_key_env="CODERAG_TEST_ANTHROPIC", retries=2)
    provider = create(settings, FAST)
    assert isinstance(provider, AnthropicProvider) and provider.context_window() == 200_000
    history = [ChatMessage("system", "Rules."), ChatMessage("assistant", "earlier"), ChatMessage("user", "now?")]
    assert "".join(provider.stream(history, max_tokens=20, temperature=0.1)) == "Hi there."
    req = server.requests[-1]
    assert req["path"] == "/v1/messages" and len(server.requests) == 2
    assert req["headers"]["x-api-key"] == SECRET and req["headers"]["anthropic-version"] == "2023-06-01"
    body = json.loads(req["body"])
    assert body["system"] == "Rules." and body["stream"] is True and body["model"] == "claude-test"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_anthropic_errors(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_ANTHROPIC", SECRET)

    def overloaded(h: Handler, n: int) -> None:
        h.start_sse()
        h.chunk('event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n')
        h.end_chunks()

    server = loopback(overloaded)
    settings = ProviderSettings(provider="anthropic", base_url=server.url, api_key_env="CODERAG_TEST_ANTHROPIC")
    with pytest.raises(ProviderError, match="overloaded_error: Overloaded") as exc:
        stream_text(create(settings, FAST))
    assert exc.value.retryable

    denied = loopback(lambda h, n: h.send_json(401, {"type": "error", "error": {"type": "authentication_error"}}))
    settings = ProviderSettings(provider="anthropic", base_url=denied.url, api_key_env="CODERAG_TEST_ANTHROPIC")
    with pytest.raises(ProviderError) as exc:
        stream_text(create(settings, FAST))
    assert exc.value.one_line() == f"the API key in $CODERAG_TEST_ANTHROPIC was rejected by {denied.url} (HTTP 401)"
    assert SECRET not in exc.value.one_line()


# --------------------------------------------------------------------------- pull_model


def test_pull_model_downloads_atomically_with_progress(
    loopback: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_" + SECRET)
    payload = b"GGUF" + os.urandom(3 * 1024 * 1024)

    def respond(h: Handler, n: int) -> None:
        if h.path != "/org/tiny-GGUF/resolve/main/tiny.Q4.gguf":
            h.send_json(404, {"error": "no such file"})
            return
        h.send_response(200)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        for i in range(0, len(payload), 256 * 1024):
            h.wfile.write(payload[i:i + 256 * 1024])
            h.wfile.flush()

    server = loopback(respond)
    models = tmp_path / "models"
    events: list[Progress] = []
    path = pull_model("org/tiny-GGUF", "tiny.Q4.gguf", models, events.append, base_url=server.url)
    assert path == models / "tiny.Q4.gguf" and path.read_bytes() == payload
    assert sorted(p.name for p in models.iterdir()) == ["tiny.Q4.gguf"]  # no temporary file left
    assert server.requests[0]["headers"]["Authorization"] == "Bearer hf_" + SECRET
    fetch = [e for e in events if e.phase == "fetch"]
    assert fetch and fetch[-1].done == fetch[-1].total == len(payload)
    assert [e.done for e in fetch] == sorted(e.done for e in fetch)
    assert events[-1].phase == "done"

    with pytest.raises(ModelError, match="HTTP 404 \\(check the repository and file name\\)"):
        pull_model("org/tiny-GGUF", "other.gguf", models, None, base_url=server.url)
    assert sorted(p.name for p in models.iterdir()) == ["tiny.Q4.gguf"]


def test_pull_model_refuses_what_is_not_a_gguf(loopback: Any, tmp_path: Path) -> None:
    def respond(h: Handler, n: int) -> None:
        data = b"<html>login</html>"
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    server = loopback(respond)
    with pytest.raises(ModelError, match="not a GGUF model file"):
        pull_model("org/x", "x.gguf", tmp_path, None, base_url=server.url)
    assert list(tmp_path.iterdir()) == []


def test_pull_model_offline_fails_with_one_clear_line(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ModelError) as exc:
        pull_model("org/repo", "m.gguf", tmp_path / "models", None, base_url=base)
    assert exc.value.one_line() == (
        f"cannot download {base}/org/repo/resolve/main/m.gguf: no network? put a GGUF in models/ instead"
    )
    assert list((tmp_path / "models").iterdir()) == []


# --------------------------------------------------------------------------- REAL llama_cpp.server

def test_real_openai_compatible_server_streams_an_answer(llama_server: LlamaServer) -> None:
    provider = create(openai(llama_server.url + "/v1", model="smollm", timeout_s=120.0), FAST)
    assert isinstance(provider, OpenAICompatProvider)
    pieces: list[str] = list(provider.stream(
        [ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", "What is Python?")],
        max_tokens=32, temperature=0.0,
    ))
    assert len(pieces) > 3 and "".join(pieces).strip()


def test_real_server_through_the_answerer(llama_server: LlamaServer) -> None:
    code = "def area(radius):\n    \"\"\"Area of a circle.\"\"\"\n    return 3.14159 * radius ** 2"
    piece = ContextPiece("geometry.py", 1, 3, "primary", "area", code, 25, "python")
    provider = create(openai(llama_server.url, timeout_s=120.0), FAST)
    events = list(Answerer(provider, max_tokens=40, temperature=0.0).ask(
        "What does area compute?", ComposedContext("area", "symbol", (piece,), 25, 1000), ""))
    assert events[-1].kind == "done", events[-1].text
    assert "".join(e.text for e in events if e.kind == "token").strip()
    sources = next(e for e in events if e.kind == "sources").sources
    assert [s.citation for s in sources] == ["geometry.py:1-3"]
