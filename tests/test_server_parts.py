"""The server's parts without a server: tokens, the dataclasses' JSON both ways, the client's
event-stream reading and its errors."""

from __future__ import annotations

import json
import socket

import pytest

from coderag_tui.client import RemoteCodeRag, ServerError, _sse
from coderag_tui.config import ServerSettings
from coderag_tui.errors import ConfigError, RepoError
from coderag_tui.models import (
    AnswerEvent,
    AnswerOpening,
    AnswerUnit,
    ComposedContext,
    ContextPiece,
    EdgeRef,
    Excluded,
    IndexStatus,
    LanguageCount,
    SearchHit,
    Source,
    ToolCallInfo,
    UnitRef,
)
from coderag_tui.server.auth import Tokens, is_loopback
from coderag_tui.wire import WireError, decode, encode

ADMIN, READ = "A" * 20, "R" * 20
UNIT = UnitRef(3, "a.py", "function", "f", "C.f", "def f()", 1, 9, "python", "Doc.", 2, "repo-a")


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("example.org", False), ("", False)])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_tokens_from_settings_and_environment() -> None:
    tokens = Tokens.load(ServerSettings(read_tokens=(READ,)), {"CODERAG_ADMIN_TOKENS": f" {ADMIN} , "})
    assert (tokens.read, tokens.admin, tokens.required) == ((READ,), (ADMIN,), True)
    assert (tokens.scope(ADMIN), tokens.scope(READ), tokens.scope(READ[:-1]), tokens.scope("")) == (
        "admin", "read", None, None)
    assert ADMIN not in repr(tokens) and READ not in str(tokens)
    tokens.check_host("0.0.0.0")  # tokens: any host


def test_no_tokens_only_on_loopback_and_short_ones_refused() -> None:
    none = Tokens.load(ServerSettings(), {})
    assert not none.required and none.scope("anything") is None
    none.check_host("127.0.0.1")
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0 without tokens"):
        none.check_host("0.0.0.0")
    with pytest.raises(ConfigError) as caught:
        Tokens.load(ServerSettings(), {"CODERAG_READ_TOKENS": "secret1"})
    assert "secret1" not in caught.value.one_line()


def test_the_dataclasses_cross_the_wire_unchanged() -> None:
    edge = EdgeRef("CALLS", UNIT, "g", 4, source=None, how="scope", confidence=0.5)
    status = IndexStatus("/r", "/r.db", 11, 1, 2, 3, 4, 0, "m", (LanguageCount("python", 1, 2, 3),),
                         {"binary": 2}, 0, 100, 1.5, "abc", (edge,), (("x.py", "error: bad"),),
                         (Excluded("dist", "dist", 3, 2, True),))
    event = AnswerEvent("sources", "t", (Source(1, "a.py", 1, 9, "f", True),), ("b.py:1-2",), 7, {"total_s": 1.0},
                        ToolCallInfo("search", "{}", "3 hits", False), True,
                        AnswerOpening((AnswerUnit("function", "f", "a.py", 1, 9, "Doc.", 3),), (), True, "note"))
    context = ComposedContext("q", "semantic", (ContextPiece("a.py", 1, 9, "primary", "f", "code", 5, "python"),),
                              5, 100, (SearchHit(UNIT, 0.25, ("bm25#1",), 2, 4),), "lookup")
    for value in (status, event, context, edge):
        assert decode(type(value), json.loads(json.dumps(encode(value)))) == value
    assert status.skipped == 2  # properties come back with the fields


def test_a_shape_the_client_cannot_read_is_one_line() -> None:
    with pytest.raises(WireError, match="the server sent a UnitRef this client cannot read"):
        decode(UnitRef, {"id": "three"})
    with pytest.raises(WireError):
        decode(SearchHit, ["not", "an", "object"])


def test_event_stream_reading() -> None:
    lines = [": ping", "event: token", "data: {\"a\": 1}", "", "", "id: 4", "event: done", "data: x", "data: y", ""]
    assert list(_sse(iter(lines))) == [("token", '{"a": 1}'), ("done", "x\ny")]


def test_a_server_that_is_not_there_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RemoteCodeRag(f"http://127.0.0.1:{port}", token=READ)
    with pytest.raises(ServerError) as caught:
        client.search("x")
    assert caught.value.one_line() == (f"cannot reach the server at http://127.0.0.1:{port}: connection refused "
                                       "(is `coderag serve` running there?)")
    events = list(client.ask("why?"))
    assert [e.kind for e in events] == ["error"] and "connection refused" in events[0].text
    with pytest.raises(ServerError, match="not a server URL"):
        RemoteCodeRag("ftp://x")


def test_repository_names_are_short_and_unique() -> None:
    from types import SimpleNamespace

    from coderag_tui.workspace import Workspace, repo_name

    def named(display: str) -> SimpleNamespace:
        return SimpleNamespace(display_name=display)

    assert repo_name(named("https://github.com/owner/shared-lib.git")) == "shared-lib"  # type: ignore[arg-type]
    assert repo_name(named("/home/me/src/my app/")) == "my-app"  # type: ignore[arg-type]
    assert repo_name(named("/")) == "repo"  # type: ignore[arg-type]
    ws = Workspace([named("/a/app"), named("/b/app"), named("/c/lib")])  # type: ignore[list-item]
    assert list(ws.services) == ["app", "app-2", "lib"]
    with pytest.raises(RepoError) as caught:
        ws.get("ap")
    assert caught.value.one_line() == "no repository named 'ap' here (did you mean 'app'?)"
