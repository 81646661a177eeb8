"""Any OpenAI-compatible chat endpoint (kind "openai"): OpenAI, Ollama, vLLM, LM Studio,
llama.cpp's server, llama-cpp-python's server, ...

`base_url` is the server (with or without the trailing `/v1`); the key is read from the
environment variable named by `api_key_env` (leave it empty for local servers).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
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

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def chat_url(base_url: str) -> str:
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


class OpenAICompatProvider:
    def __init__(self, settings: ProviderSettings, options: ProviderOptions | None = None) -> None:
        options = options or ProviderOptions()
        self.settings = settings
        self.model = options.model_override or settings.model
        self.window = options.context_window
        self.url = chat_url(settings.base_url)
        self.name = f"openai:{self.model or 'default'}"
        key = os.environ.get(settings.api_key_env, "") if settings.api_key_env else ""
        headers = {"Accept": "text/event-stream"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.http = sse_client("openai", self.url, headers, settings, options, settings.api_key_env, key)

    def context_window(self) -> int:
        return self.window or remote_context_window(self.settings)

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def info(self) -> ModelInfo:
        note = f"API key from ${self.settings.api_key_env}" if self.settings.api_key_env else ""
        return ModelInfo(
            name=self.model or "default",
            provider="openai",
            path_or_url=self.url,
            context_window=self.context_window(),
            note=note,
        )

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
    ) -> Iterator[str]:
        body: dict[str, object] = {
            "model": self.model or "default",
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = stop
        for event in self.http.stream(body):
            data = event.data.strip()
            if not data:
                continue
            if data == "[DONE]":
                return
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("error"):
                err = doc["error"]
                message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                line = " ".join(str(message).split())[:200]
                raise ProviderError(redact(f"{self.name} failed: {line}", self.http.secret))
            for choice in doc.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield text

    def tool_session(self, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> ToolSession:
        """A conversation in which the model may call tools (see providers/tool_wire.py)."""
        from coderag_tui.answering.providers.tool_wire import OpenAIToolSession

        return OpenAIToolSession(self, messages, specs)


def _factory(settings: ProviderSettings, options: ProviderOptions) -> Provider:
    return OpenAICompatProvider(settings, options)


register("openai", _factory)
