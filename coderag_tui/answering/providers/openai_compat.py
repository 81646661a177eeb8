"""Any OpenAI-compatible chat endpoint (kind "openai"): OpenAI, Ollama, vLLM, LM Studio,
llama.cpp's server, llama-cpp-python's server, ...

`base_url` is the server (with or without the trailing `/v1`); the key is read from the
environment variable named by `api_key_env` (leave it empty for local servers).

The context window: `[llm] n_ctx` when set, else what the server says (llama.cpp's `/props`,
the `/v1/models` fields of llama.cpp, vLLM, LM Studio), else the model's known window. A server
that still refuses the prompt as too long raises ContextWindowError with its real window
(llama-cpp-python's server, streaming, just closes an empty stream: a non-streamed request of
one token then gets the error out of it), and `learn_window` adopts it for the next try.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from coderag_tui.answering.providers._http import error_text, redact
from coderag_tui.answering.providers.base import (
    ContextWindowError,
    Provider,
    ProviderOptions,
    register,
    remote_context_window,
    sse_client,
    window_from_error,
)
from coderag_tui.config import ProviderSettings
from coderag_tui.errors import ProviderError
from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.tokens import estimate_tokens

if TYPE_CHECKING:
    from coderag_tui.answering.tools import ToolSession, ToolSpec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROBE_TIMEOUT_S = 3.0
_WINDOW_KEYS = ("n_ctx", "max_model_len", "max_context_length", "context_length", "context_window")


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
        self._window = 0  # learned from the server
        self._probed = False
        self._scale = 1.0  # learned ratio of the server's token count to our estimate
        self.finish_reason = ""  # of the last answer: "stop", "length", ...
        self.http = sse_client("openai", self.url, headers, settings, options, settings.api_key_env, key)

    def context_window(self) -> int:
        if self.window:  # known by the caller (a model served on loopback)
            return self.window
        if self._window:
            return self._window
        default = remote_context_window(self.settings)
        explicit = self.settings.n_ctx > 0 and self.settings.n_ctx != type(self.settings)().n_ctx
        if not explicit and not self._probed:
            self._probed = True
            found = self._probe_window()
            if found:
                self._window = found
                return found
        return default

    def learn_window(self, window: int, server_tokens: int = 0, estimated: int = 0) -> None:
        """Adopt the window the server reported; when it also said how many tokens our prompt
        took, scale the token estimate to match (its tokenizer may be denser than ours)."""
        self._window = window
        if server_tokens > 0 and estimated > 0 and server_tokens > estimated:
            self._scale = max(self._scale, server_tokens / estimated * 1.05)

    def count_tokens(self, text: str) -> int:
        return math.ceil(estimate_tokens(text) * self._scale)

    def _probe_window(self) -> int:
        """The window the server announces, or 0 (it says nothing, or cannot be reached)."""
        base = self.url[: -len("/chat/completions")]
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        headers = {k: v for k, v in self.http.headers.items() if k.lower() != "accept"}
        for url in (f"{root}/props", f"{base}/models"):
            try:
                resp = httpx.get(url, headers=headers, timeout=min(PROBE_TIMEOUT_S, self.settings.timeout_s))
                doc = resp.json() if resp.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            found = _find_window(doc, self.model)
            if found:
                return found
        return 0

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
        self.finish_reason = ""
        produced = False
        done = False
        try:
            for event in self.http.stream(body):
                data = event.data.strip()
                if not data:
                    continue
                if data == "[DONE]":
                    done = True
                    break
                try:
                    doc = json.loads(data)
                except ValueError:
                    continue
                if isinstance(doc, dict) and doc.get("error"):
                    err = doc["error"]
                    message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                    line = " ".join(str(message).split())[:200]
                    raise self._window_error(line) or ProviderError(
                        redact(f"{self.name} failed: {line}", self.http.secret)
                    )
                for choice in doc.get("choices") or []:
                    if choice.get("finish_reason"):
                        self.finish_reason = str(choice["finish_reason"])
                        done = True
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        produced = True
                        yield text
        except ContextWindowError:
            raise
        except ProviderError as exc:
            raise self._window_error(exc.message) or exc from None
        if not produced and not done:
            self._diagnose_empty(body)

    def _window_error(self, message: str) -> ContextWindowError | None:
        found = window_from_error(message)
        if found is None:
            return None
        window, tokens = found
        return ContextWindowError(
            redact(f"{self.name}: the prompt exceeds the context window of {window} tokens", self.http.secret),
            window,
            tokens,
        )

    def _diagnose_empty(self, body: dict[str, Any]) -> None:
        """The stream closed without an answer or an end: ask once more without streaming, for
        one token, to get the server's error (a prompt too long for its window, typically)."""
        probe = {**body, "stream": False, "max_tokens": 1}
        headers = {k: v for k, v in self.http.headers.items() if k.lower() != "accept"}
        message = ""
        try:
            # a new connection: the server may have dropped the one the stream used
            resp = httpx.post(self.url, json=probe, headers=headers, timeout=self.settings.timeout_s)
            if resp.status_code >= 400:
                message = error_text(resp.content)
        except httpx.HTTPError:
            pass
        error = self._window_error(message)
        if error is not None:
            raise error
        why = f": {message}" if message else ""
        raise ProviderError(
            redact(f"{self.name} closed the stream without an answer{why}", self.http.secret)
        )

    def tool_session(self, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> ToolSession:
        """A conversation in which the model may call tools (see providers/tool_wire.py)."""
        from coderag_tui.answering.providers.tool_wire import OpenAIToolSession

        return OpenAIToolSession(self, messages, specs)


def _find_window(doc: object, model: str) -> int:
    """A context window announced in a /props or /v1/models answer (0 when none)."""
    if isinstance(doc, dict):
        settings = doc.get("default_generation_settings")
        if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
            return int(settings["n_ctx"])
        for key in _WINDOW_KEYS:
            if isinstance(doc.get(key), int) and doc[key] > 0:
                return int(doc[key])
        items = doc.get("data") or doc.get("models")
        if isinstance(items, list):
            chosen = [i for i in items if isinstance(i, dict) and i.get("id") == model] or items[:1]
            for item in chosen:
                if isinstance(item, dict):
                    meta = item.get("meta")
                    found = _find_window(meta, model) if isinstance(meta, dict) else 0
                    found = found or _find_window({k: item.get(k) for k in _WINDOW_KEYS}, model)
                    if found:
                        return found
    return 0


def _factory(settings: ProviderSettings, options: ProviderOptions) -> Provider:
    return OpenAICompatProvider(settings, options)


register("openai", _factory)
