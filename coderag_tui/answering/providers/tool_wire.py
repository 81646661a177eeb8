"""Tool calls on the wire: OpenAI's `tools` / `tool_calls` and Anthropic's `tools` / `tool_use`.

A session keeps the conversation in its protocol's shape: each `turn` streams one answer of
the model (text as it comes, then the calls it asked for, their arguments assembled from the
streamed fragments); `add_results` appends the model's turn and the tool results as that
protocol wants them (OpenAI: an assistant message with `tool_calls`, then one `tool` message
per call; Anthropic: an assistant turn with `tool_use` blocks, then a user turn of
`tool_result` blocks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from coderag_tui.answering.providers._http import SSEClient, redact
from coderag_tui.answering.tools import ToolCall, ToolSpec, parse_arguments
from coderag_tui.errors import ProviderError
from coderag_tui.models import ChatMessage


def _events(http: SSEClient, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for event in http.stream(body):
        data = event.data.strip()
        if not data or data == "[DONE]":
            continue
        try:
            doc = json.loads(data)
        except ValueError:
            continue
        if isinstance(doc, dict):
            yield doc


def _failure(name: str, err: Any, secret: str) -> ProviderError:
    message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    line = " ".join(str(message).split())[:200]
    return ProviderError(redact(f"{name} failed: {line}", secret))


class OpenAIToolSession:
    def __init__(self, provider: Any, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> None:
        self.provider = provider
        self.wire: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        self.tools = [
            {"type": "function",
             "function": {"name": s.name, "description": s.description, "parameters": s.parameters}}
            for s in specs
        ]

    def turn(self, *, max_tokens: int, temperature: float, allow_tools: bool) -> Iterator[str | ToolCall]:
        p = self.provider
        body: dict[str, Any] = {
            "model": p.model or "default",
            "messages": self.wire,
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "tools": self.tools,
            "tool_choice": "auto" if allow_tools else "none",
        }
        pending: dict[int, dict[str, str]] = {}
        for doc in _events(p.http, body):
            if doc.get("error"):
                raise _failure(p.name, doc["error"], p.http.secret)
            for choice in doc.get("choices") or []:
                delta = choice.get("delta") or choice.get("message") or {}
                text = delta.get("content")
                if text:
                    yield text
                for n, tc in enumerate(delta.get("tool_calls") or []):
                    slot = pending.setdefault(int(tc.get("index", n)), {"id": "", "name": "", "args": ""})
                    fn = tc.get("function") or {}
                    slot["id"] = tc.get("id") or slot["id"]
                    slot["name"] = fn.get("name") or slot["name"]
                    slot["args"] += fn.get("arguments") or ""
        for i in sorted(pending):
            s = pending[i]
            yield ToolCall(s["id"] or f"call_{i}", s["name"], parse_arguments(s["args"]), s["args"])

    def add_results(self, text: str, calls: list[ToolCall], results: list[str]) -> None:
        self.wire.append({
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.raw_arguments or json.dumps(c.arguments)}}
                for c in calls
            ],
        })
        for call, result in zip(calls, results, strict=True):
            self.wire.append({"role": "tool", "tool_call_id": call.id, "content": result})


class AnthropicToolSession:
    def __init__(self, provider: Any, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> None:
        from coderag_tui.answering.providers.anthropic import to_anthropic

        self.provider = provider
        self.system, turns = to_anthropic(messages)
        self.turns: list[dict[str, Any]] = list(turns)
        self.tools = [{"name": s.name, "description": s.description, "input_schema": s.parameters}
                      for s in specs]

    def turn(self, *, max_tokens: int, temperature: float, allow_tools: bool) -> Iterator[str | ToolCall]:
        p = self.provider
        body: dict[str, Any] = {
            "model": p.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": self.turns,
            "stream": True,
            "tools": self.tools,
            "tool_choice": {"type": "auto" if allow_tools else "none"},
        }
        if self.system:
            body["system"] = self.system
        blocks: dict[int, dict[str, str]] = {}
        for doc in _events(p.http, body):
            kind = doc.get("type")
            index = int(doc.get("index", 0) or 0)
            if kind == "content_block_start":
                block = doc.get("content_block") or {}
                if block.get("type") == "tool_use":
                    first = block.get("input")
                    blocks[index] = {"id": str(block.get("id", "")), "name": str(block.get("name", "")),
                                     "args": json.dumps(first) if first else ""}
            elif kind == "content_block_delta":
                delta = doc.get("delta") or {}
                if delta.get("type") == "input_json_delta" and index in blocks:
                    blocks[index]["args"] += delta.get("partial_json") or ""
                elif delta.get("type", "text_delta") == "text_delta" and delta.get("text"):
                    yield str(delta["text"])
            elif kind == "message_stop":
                break
            elif kind == "error":
                raise _failure(p.name, doc.get("error") or {}, p.http.secret)
        for i in sorted(blocks):
            b = blocks[i]
            yield ToolCall(b["id"] or f"toolu_{i}", b["name"], parse_arguments(b["args"]), b["args"])

    def add_results(self, text: str, calls: list[ToolCall], results: list[str]) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
        self.turns.append({"role": "assistant", "content": content})
        self.turns.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": r} for c, r in zip(calls, results, strict=True)
        ]})
