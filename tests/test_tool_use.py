"""A model that calls the index's tools before it answers, over both protocols, against real
HTTP loopback on loopback that script the model's turns; and the plain path for one without."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering import Answerer, ProviderOptions, create
from coderag_tui.answering.fallback import FallbackProvider, create_llm
from coderag_tui.answering.toolbox import CodeRagTools
from coderag_tui.answering.tools import pieces_from_result, tools_wanted
from coderag_tui.config import LLMSettings, ProviderSettings, Settings
from coderag_tui.errors import ConfigError
from coderag_tui.models import AnswerEvent, ComposedContext
from coderag_tui.service import CodeRag
from tests.helpers.loopback import Handler, Loopback, openai_sse
from tests.helpers.tool_use import ANSWER, FILES, openai_script, openai_tool_call

FAST = ProviderOptions(backoff_s=0.01, max_retry_after_s=1.0)



@pytest.fixture
def service(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(FILES))


def bodies(server: Loopback) -> list[dict[str, Any]]:
    return [json.loads(r["body"]) for r in server.requests]


# --------------------------------------------------------------------------- OpenAI shape






def ask_with_tools(provider: Any, service: CodeRag, steps: int = 4) -> list[AnswerEvent]:
    """Answer with nothing given up front (and no index lookup for citations): whatever the
    answer may cite validly came from the tools."""
    tools = CodeRagTools(service)
    tools.ready.set()
    answerer = Answerer(provider, None, max_tokens=64, tools=tools, tool_steps=steps)
    empty = ComposedContext("q", "semantic", (), 0, 1000)
    return list(answerer.ask("How is tax computed?", empty))


def test_openai_tool_calls_round_trip_and_their_lines_are_cited(loopback: Any, service: CodeRag) -> None:
    server = loopback(openai_script)
    provider = create(ProviderSettings(provider="openai", base_url=server.url, model="m", timeout_s=10), FAST)
    events = ask_with_tools(provider, service)
    assert [e.kind for e in events if e.kind == "error"] == []
    tools = [e.tool for e in events if e.kind == "tool"]
    assert [t.name for t in tools if t] == ["search_codebase", "read_lines"]
    assert tools[1] is not None and tools[1].summary == "shop/tax.py:4-6" and tools[1].ok
    assert json.loads(tools[1].arguments) == {"path": "shop/tax.py", "start": 4, "end": 6}
    assert "".join(e.text for e in events if e.kind == "token") == ANSWER

    sent = bodies(server)
    assert len(sent) == 3
    assert [t["function"]["name"] for t in sent[0]["tools"]][:2] == ["search_codebase", "lookup_symbol"]
    assert sent[0]["tool_choice"] == "auto"
    # the second request carries the assistant's call and the tool's result, in OpenAI's shape
    call_msg, result_msg = sent[1]["messages"][-2:]
    assert call_msg["role"] == "assistant" and call_msg["tool_calls"] == [
        {"id": "call_a", "type": "function",
         "function": {"name": "search_codebase", "arguments": '{"query": "tax owed"}'}}]
    assert result_msg["role"] == "tool" and result_msg["tool_call_id"] == "call_a"
    assert "shop/tax.py:4-6" in result_msg["content"]
    last = sent[2]["messages"][-1]
    assert last["role"] == "tool" and last["tool_call_id"] == "call_b"
    assert last["content"].startswith("shop/tax.py:4-6\n    4  def tax_for(amount):")

    [sources] = [e for e in events if e.kind == "sources"]
    cited = [s.citation for s in sources.sources if s.cited]
    assert "shop/tax.py:4-6" in cited  # verified: a tool returned these lines
    # docs/greeting.py:1-2 exists, but no tool showed it to the model: not verified
    assert "docs/greeting.py" not in sent[1]["messages"][-1]["content"]
    assert sources.invalid_citations == ("docs/greeting.py:1-2",)


def test_the_steps_are_bounded_then_the_model_must_answer(loopback: Any, service: CodeRag) -> None:
    def respond(h: Handler, n: int) -> None:
        body = json.loads(h.server.loopback.requests[n]["body"])
        if body["tool_choice"] == "none":
            openai_sse(h, ["done"])
        else:  # a model that would call tools forever
            openai_tool_call(h, f"call_{n}", "lookup_symbol", {"name": "tax_for"})

    server = loopback(respond)
    provider = create(ProviderSettings(provider="openai", base_url=server.url, model="m", timeout_s=10), FAST)
    events = ask_with_tools(provider, service, steps=2)
    assert [e.kind for e in events].count("tool") == 2
    assert [b["tool_choice"] for b in bodies(server)] == ["auto", "auto", "none"]
    assert "".join(e.text for e in events if e.kind == "token") == "done"


def test_a_failing_or_unknown_tool_answers_the_model_one_line(loopback: Any, service: CodeRag) -> None:
    def respond(h: Handler, n: int) -> None:
        if n == 0:
            openai_tool_call(h, "c1", "read_lines", {"path": "node_modules/dep/key.js", "start": 1, "end": 1})
        elif n == 1:
            openai_tool_call(h, "c2", "rm_rf", {})
        else:
            openai_sse(h, ["ok"])

    server = loopback(respond)
    provider = create(ProviderSettings(provider="openai", base_url=server.url, model="m", timeout_s=10), FAST)
    events = ask_with_tools(provider, service)
    tools = [e.tool for e in events if e.tool is not None]
    assert [(t.name, t.ok) for t in tools] == [("read_lines", False), ("rm_rf", False)]
    results = [b["messages"][-1]["content"] for b in bodies(server)[1:]]
    # a file the index left out stays home
    assert results[0] == "error: no file 'node_modules/dep/key.js' in the index"
    assert results[1].startswith("error: no tool 'rm_rf'")
    assert all("do-not-send" not in r["body"].decode() for r in server.requests)


def test_a_server_that_refuses_tools_gets_the_plain_request(loopback: Any, service: CodeRag) -> None:
    def respond(h: Handler, n: int) -> None:
        if "tools" in json.loads(h.server.loopback.requests[n]["body"]):
            h.send_json(400, {"error": {"message": "this model does not support tools"}})
        else:
            openai_sse(h, ["plain answer"])

    server = loopback(respond)
    provider = create(ProviderSettings(provider="openai", base_url=server.url, model="m", timeout_s=10), FAST)
    events = ask_with_tools(provider, service)
    assert "".join(e.text for e in events if e.kind == "token") == "plain answer"
    assert ["tools" in b for b in bodies(server)] == [True, False]


# --------------------------------------------------------------------------- Anthropic shape


def anthropic_events(h: Handler, events: list[dict[str, Any]]) -> None:
    h.start_sse()
    for doc in [{"type": "message_start", "message": {"id": "m"}}, *events, {"type": "message_stop"}]:
        h.chunk(f"event: {doc['type']}\ndata: {json.dumps(doc)}\n\n")
    h.end_chunks()


def anthropic_tool_use(h: Handler, tool_id: str, name: str, args: dict[str, Any]) -> None:
    text = json.dumps(args)
    anthropic_events(h, [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking. "}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": text[:7]}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": text[7:]}},
        {"type": "content_block_stop", "index": 1},
    ])


def test_anthropic_tool_use_round_trips(loopback: Any, service: CodeRag) -> None:
    def respond(h: Handler, n: int) -> None:
        if n == 0:
            anthropic_tool_use(h, "toolu_1", "read_lines", {"path": "shop/tax.py", "start": 4, "end": 6})
        else:
            anthropic_events(h, [
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "See shop/tax.py:5."}},
            ])

    server = loopback(respond)
    settings = ProviderSettings(provider="anthropic", base_url=server.url, model="claude-x", timeout_s=10)
    events = ask_with_tools(create(settings, FAST), service)
    assert [e.tool.name for e in events if e.tool] == ["read_lines"]
    first, second = bodies(server)
    assert first["tools"][4] == {"name": "read_lines", "description": first["tools"][4]["description"],
                                 "input_schema": first["tools"][4]["input_schema"]}
    assert first["tool_choice"] == {"type": "auto"}
    assistant, user = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": [
        {"type": "text", "text": "Looking. "},
        {"type": "tool_use", "id": "toolu_1", "name": "read_lines",
         "input": {"path": "shop/tax.py", "start": 4, "end": 6}}]}
    [result] = user["content"]
    assert user["role"] == "user" and result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert result["content"].startswith("shop/tax.py:4-6\n")
    [sources] = [e for e in events if e.kind == "sources"]
    assert [s.citation for s in sources.sources if s.cited] == ["shop/tax.py:4-6"]
    assert sources.invalid_citations == ()


# --------------------------------------------------------------------------- through the service


def test_the_service_gives_tools_to_remote_models_and_not_to_local_ones(
    loopback: Any, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]
) -> None:
    server = loopback(openai_script)
    llm = LLMSettings(provider="openai", base_url=server.url, model="m", timeout_s=10, retries=0)
    service = open_service(make_repo(FILES), replace(Settings(), llm=llm))
    events = list(service.ask("How is tax computed?"))
    assert [e.tool.name for e in events if e.tool] == ["search_codebase", "read_lines"]
    assert events[-1].kind == "done" and len(server.requests) == 3

    plain = loopback(lambda h, n: openai_sse(h, ["plain"]))
    off = replace(llm, base_url=plain.url, tools="off")
    service_off = open_service(make_repo(FILES, name="r2"), replace(Settings(), llm=off))
    events = list(service_off.ask("How is tax computed?"))
    assert not [e for e in events if e.kind == "tool"] and events[-1].kind == "done"
    [body] = bodies(plain)
    assert "tools" not in body and "tool_choice" not in body


def test_a_fallback_chain_passes_the_tools_to_the_model_that_answers(
    loopback: Any, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]
) -> None:
    down = loopback(lambda h, n: h.send_json(503, {"error": "overloaded"}))
    scripted = loopback(openai_script)
    llm = LLMSettings(provider="openai", base_url=down.url, model="m", timeout_s=10, retries=0,
                      fallback=(ProviderSettings(provider="openai", base_url=scripted.url, model="m2",
                                                 timeout_s=10, retries=0),))
    service = open_service(make_repo(FILES), replace(Settings(), llm=llm))
    events = list(service.ask("How is tax computed?"))
    assert [e.text for e in events if e.kind == "error"] == []
    assert [e.tool.name for e in events if e.tool] == ["search_codebase", "read_lines"]
    assert events[-1].kind == "done"
    assert len(down.requests) == 1 and "tools" in bodies(down)[0]  # tried once, with the tools
    sent = bodies(scripted)
    assert len(sent) == 3 and all(b["model"] == "m2" and "tools" in b for b in sent[:2])
    assert sent[1]["messages"][-1]["role"] == "tool"  # the rounds stay with the model that answered
    [sources] = [e for e in events if e.kind == "sources"]
    assert "shop/tax.py:4-6" in [s.citation for s in sources.sources if s.cited]

    class Local:  # a chain of models without a tool protocol gets no tools
        name = "llama:x"

    chain = FallbackProvider([Local(), Local()])  # type: ignore[list-item]
    assert not tools_wanted(LLMSettings(provider="llama", tools="on"), chain)
    assert tools_wanted(llm, create_llm(llm, FAST))


def test_tools_setting() -> None:
    openai = create(ProviderSettings(provider="openai", base_url="http://127.0.0.1:9"), FAST)
    assert tools_wanted(LLMSettings(provider="openai"), openai)
    assert not tools_wanted(LLMSettings(provider="openai", tools="off"), openai)
    assert not tools_wanted(LLMSettings(provider="openai", tool_steps=0), openai)

    class Local:  # a provider without a tool protocol (the local llama.cpp default)
        name = "llama:x"

    assert not tools_wanted(LLMSettings(provider="llama"), Local())  # type: ignore[arg-type]
    assert not tools_wanted(LLMSettings(provider="llama", tools="on"), Local())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="llm.tools must be auto, on or off"):
        tools_wanted(LLMSettings(provider="openai", tools="sometimes"), openai)


def test_pieces_from_a_result_are_the_ranges_it_cites() -> None:
    pieces = pieces_from_result("2 results:\n1. a/b.py:3-9  function f\n2. c.go:10-12  func g", "search_codebase")
    assert [p.citation for p in pieces] == ["a/b.py:3-9", "c.go:10-12"]
    assert {p.role for p in pieces} == {"tool"}


def test_cli_prints_each_tool_call(loopback: Any, make_repo: Callable[..., Path], tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = make_repo(FILES)
    base: list[str] = []
    for n in range(2):
        server = loopback(openai_script)
        cfg = tmp_path / f"cfg{n}.toml"
        cfg.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}"\nmodel = "m"\nretries = 0\n')
        base = [sys.executable, "-m", "coderag_tui", "ask", "How is tax computed?", "--repo", str(repo),
                "--db", str(tmp_path / f"i{n}.db"), "--config", str(cfg)]
        index = [sys.executable, "-m", "coderag_tui", "index", str(repo), "--db", str(tmp_path / f"i{n}.db"),
                 "--no-embed"]
        assert subprocess.run(index, capture_output=True, text=True, timeout=300).returncode == 0
        if n == 0:
            out = subprocess.run(base, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
            assert out.returncode == 0, out.stderr
            assert 'tool search_codebase({"query": "tax owed"}): ' in out.stderr
            assert 'tool read_lines({"path": "shop/tax.py", "start": 4, "end": 6}): shop/tax.py:4-6' in out.stderr
            assert ANSWER in out.stdout and "tool " not in out.stdout
    out = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [c["name"] for c in data["tool_calls"]] == ["search_codebase", "read_lines"]
    assert data["tool_calls"][1]["summary"] == "shop/tax.py:4-6" and data["answer"] == ANSWER
