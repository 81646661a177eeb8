"""Tool use while answering: the model may call the index's tools before it answers.

The tool definitions (name, description, JSON schema) are data shared with the MCP server.
`tool_loop` runs the rounds: each round streams the model's turn; text is yielded as it comes,
requested calls run through `CodeRagTools` and are yielded as `ToolCallInfo`, and their results
go back to the model in its protocol's shape (a `ToolSession` per provider). At most
`steps` rounds offer the tools; then (or when the context window is full) the model must answer.

Every `path:start-end` a tool result cites becomes a ContextPiece of the given set, so the
answer's citations of what the tools returned are verified like those of the composed context.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from coderag_tui.answering.citations import parse_citations
from coderag_tui.answering.providers.base import Provider
from coderag_tui.config import LLMSettings
from coderag_tui.errors import ConfigError, ProviderError
from coderag_tui.models import ChatMessage, ContextPiece, ToolCallInfo

TOOL_PROVIDERS = ("openai", "anthropic")  # kinds whose `tools = "auto"` means on
MAX_RESULT_TOKENS = 2000  # one tool result, at most (the rest is cut with a note)
SUMMARY_CHARS = 120


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments


def _schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_STR = {"type": "string"}
_INT = {"type": "integer"}

SPECS: dict[str, ToolSpec] = {
    s.name: s
    for s in (
        ToolSpec(
            "search_codebase",
            "Search the codebase for code relevant to a natural-language query or a name (hybrid: "
            "keywords + vectors + symbols + call graph). Optional filters: language (python, go, ...), "
            "path_prefix (a folder), kind (function, method, class, ...). Returns ranked units with "
            "path:start-end citations and a snippet.",
            _schema(["query"], query=_STR, limit=_INT, language=_STR, path_prefix=_STR, kind=_STR),
        ),
        ToolSpec(
            "lookup_symbol",
            "Look up a function, method, class or constant by name (exact, qualified like "
            "Class.method, or fuzzy): its definitions with path:start-end and the code of the best.",
            _schema(["name"], name=_STR),
        ),
        ToolSpec(
            "find_callers",
            "Every call site of a function or method (who calls it), as path:line with the "
            "calling unit's path:start-end.",
            _schema(["name"], name=_STR),
        ),
        ToolSpec(
            "find_callees",
            "What a function or method calls: definitions in the repository (path:start-end) and "
            "names outside it.",
            _schema(["name"], name=_STR),
        ),
        ToolSpec(
            "read_lines",
            "Read lines of an indexed file (1-based, inclusive; at most 200 at a time), numbered, "
            "headed by their path:start-end citation.",
            _schema(["path", "start", "end"], path=_STR, start=_INT, end=_INT),
        ),
    )
}
ANSWER_TOOLS = tuple(SPECS)  # what a model may call while answering


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""  # as the model sent them (kept when they are not valid JSON)


class ToolSession(Protocol):
    """One conversation with tools, in one provider's wire protocol."""

    def turn(self, *, max_tokens: int, temperature: float, allow_tools: bool) -> Iterator[str | ToolCall]:
        """Stream the model's next turn: text pieces and the calls it asks for."""
        ...

    def add_results(self, text: str, calls: list[ToolCall], results: list[str]) -> None:
        """Append the model's turn (its text and calls) and the results, in protocol shape."""
        ...


def tools_wanted(settings: LLMSettings, provider: Provider) -> bool:
    """Whether the model gets tools: `[llm] tools` (auto = on for remote providers that speak a
    tool protocol) and the provider can do it at all."""
    mode = settings.tools.strip().lower()
    if mode not in ("auto", "on", "off"):
        raise ConfigError(f"config: llm.tools must be auto, on or off, got {settings.tools!r}")
    if mode == "off" or settings.tool_steps <= 0 or not hasattr(provider, "tool_session"):
        return False
    supported = getattr(provider, "tools_supported", None)  # a fallback chain: any of its models
    if supported is not None and not supported():
        return False
    kinds = (settings.provider, *(f.provider for f in getattr(settings, "fallback", ())))
    return mode == "on" or any(kind in TOOL_PROVIDERS for kind in kinds)


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        doc = json.loads(raw or "{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def pieces_from_result(text: str, tool: str, known_paths: Iterable[str] = ()) -> list[ContextPiece]:
    """The `path:start-end` ranges a tool result cites, as context pieces of that text.
    `known_paths`: the paths already given (`repo:path` ones keep a result's repositories)."""
    out: dict[tuple[str, int, int], ContextPiece] = {}
    for c in parse_citations(text, known_paths):
        key = (c.path, c.start, c.end)
        if key not in out:
            out[key] = ContextPiece(c.path, c.start, c.end, "tool", f"from {tool}", text, 0)
    return list(out.values())


def _summary(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1] + "\u2026"


def run_call(tools: Any, call: ToolCall) -> tuple[str, bool]:
    """(result text, ok). Unknown tools, bad arguments and failures answer one line to the model."""
    from coderag_tui.answering.toolbox import ToolFailure, one_line

    if call.name not in SPECS:
        return f"error: no tool {call.name!r} (tools: {', '.join(ANSWER_TOOLS)})", False
    allowed = set(SPECS[call.name].parameters["properties"])
    args = {k: v for k, v in call.arguments.items() if k in allowed}
    missing = [k for k in SPECS[call.name].parameters["required"] if k not in args]
    if missing:
        return f"error: {call.name} needs {', '.join(missing)}", False
    try:
        return str(getattr(tools, call.name)(**args)), True
    except ToolFailure as exc:
        return f"error: {exc}", False
    except Exception as exc:  # a tool failing must not end the answer
        return f"error: {one_line(exc)[:300]}", False


def _fit(text: str, provider: Provider, limit: int) -> str:
    if provider.count_tokens(text) <= limit:
        return text
    keep = max(0, limit) * 3
    return text[:keep] + "\n... (the rest of this result was cut to fit the context window)"


def tool_loop(
    provider: Provider,
    messages: list[ChatMessage],
    tools: Any,
    given: list[ContextPiece],
    *,
    steps: int,
    prompt_tokens: int,
    max_tokens: int,
    temperature: float,
) -> Iterator[str | ToolCallInfo]:
    """Stream an answer that may use tools. Appends what the tools returned to `given`."""
    session: ToolSession = provider.tool_session(messages, [SPECS[n] for n in ANSWER_TOOLS])  # type: ignore[attr-defined]
    room = provider.context_window() - max_tokens - prompt_tokens
    for step in range(steps + 1):
        allow = step < steps and room > 0
        parts: list[str] = []
        calls: list[ToolCall] = []
        try:
            for item in session.turn(max_tokens=max_tokens, temperature=temperature, allow_tools=allow):
                if isinstance(item, ToolCall):
                    calls.append(item)
                else:
                    parts.append(item)
                    yield item
        except ProviderError as exc:
            if step > 0 or parts or exc.retryable:
                raise
            # a server (or a model behind it) that refuses `tools`: answer without them
            yield from provider.stream(messages, max_tokens=max_tokens, temperature=temperature)
            return
        if not calls or not allow:
            return
        results: list[str] = []
        for call in calls:
            text, ok = run_call(tools, call)
            text = _fit(text, provider, min(MAX_RESULT_TOKENS, max(room, 0)))
            room -= provider.count_tokens(text) + 16
            if ok:
                given.extend(pieces_from_result(text, call.name, {p.path for p in given}))
            args = call.raw_arguments or json.dumps(call.arguments, sort_keys=True)
            yield ToolCallInfo(call.name, args, _summary(text), ok)
            results.append(text)
        session.add_results("".join(parts), calls, results)
