"""Anthropic's Messages API, streamed (kind "anthropic").

`base_url` defaults to https://api.anthropic.com; the key is read from the environment
variable named by `api_key_env` (ANTHROPIC_API_KEY when empty).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from coderag_tui.answering.providers._http import redact
from coderag_tui.answering.providers.base import (
    Provider,
    ProviderOptions,
    register,
    remote_context_window,
    sse_client,
)
from coderag_tui.config import ProviderSettings
from coderag_tui.errors import ProviderError
from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.tokens import estimate_tokens

if TYPE_CHECKING:
    from coderag_tui.answering.tools import ToolSession, ToolSpec

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MODEL = "claude-sonnet-4-5"
RETRYABLE_ERRORS = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}


def messages_url(base_url: str) -> str:
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/messages"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/messages"


def to_anthropic(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """(system text, user/assistant turns): turns alternate and start with the user."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": turns[-1]["content"] + "\n\n" + m.content}
        else:
            turns.append({"role": role, "content": m.content})
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(conversation continues)"})
    return system, turns


class AnthropicProvider:
    def __init__(self, settings: ProviderSettings, options: ProviderOptions | None = None) -> None:
        options = options or ProviderOptions()
        self.settings = settings
        self.model = options.model_override or settings.model or DEFAULT_MODEL
        self.key_env = settings.api_key_env or DEFAULT_KEY_ENV
        self.url = messages_url(settings.base_url)
        self.name = f"anthropic:{self.model}"
        key = os.environ.get(self.key_env, "")
        headers = {
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        if key:
            headers["x-api-key"] = key
        self.finish_reason = ""  # of the last answer: "stop", "length"
        self.http = sse_client("anthropic", self.url, headers, settings, options, self.key_env, key)

    def context_window(self) -> int:
        settings = self.settings
        if not settings.model:
            settings = replace(settings, model=self.model)
        return remote_context_window(settings)

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def info(self) -> ModelInfo:
        return ModelInfo(
            name=self.model,
            provider="anthropic",
            path_or_url=self.url,
            context_window=self.context_window(),
            note=f"API key from ${self.key_env}",
        )

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
    ) -> Iterator[str]:
        system, turns = to_anthropic(messages)
        body: dict[str, object] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": turns,
            "stream": True,
        }
        if system:
            body["system"] = system
        if stop:
            body["stop_sequences"] = stop
        produced = False
        self.finish_reason = ""
        for event in self.http.stream(body):
            if not event.data.strip():
                continue
            try:
                doc = json.loads(event.data)
            except ValueError:
                continue
            kind = doc.get("type", event.event) if isinstance(doc, dict) else event.event
            if kind == "content_block_delta":
                delta = doc.get("delta") or {}
                text = delta.get("text") if delta.get("type", "text_delta") == "text_delta" else None
                if text:
                    produced = True
                    yield text
            elif kind == "message_delta":
                reason = (doc.get("delta") or {}).get("stop_reason")
                if reason:
                    self.finish_reason = "length" if reason == "max_tokens" else "stop"
            elif kind == "message_stop":
                return
            elif kind == "error":
                err = doc.get("error") or {}
                etype = err.get("type", "error") if isinstance(err, dict) else "error"
                message = err.get("message", "") if isinstance(err, dict) else str(err)
                text = " ".join(str(message).split())[:200]
                raise ProviderError(
                    redact(f"{self.name} failed: {etype}: {text}", self.http.secret),
                    retryable=etype in RETRYABLE_ERRORS and not produced,
                )

    def tool_session(self, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> ToolSession:
        """A conversation in which the model may call tools (see providers/tool_wire.py)."""
        from coderag_tui.answering.providers.tool_wire import AnthropicToolSession

        return AnthropicToolSession(self, messages, specs)


def _factory(settings: ProviderSettings, options: ProviderOptions) -> Provider:
    return AnthropicProvider(settings, options)


register("anthropic", _factory)
