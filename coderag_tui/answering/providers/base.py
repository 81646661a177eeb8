"""The Provider protocol and the registry that builds providers from settings.

A provider turns chat messages into streamed text. Each kind (`llama`, `openai`,
`anthropic`, ...) registers a factory; `create(settings)` looks the kind up, so adding a
provider never means editing a chain of if/elif.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from coderag_tui.answering.providers._http import SSEClient
from coderag_tui.config import ProviderSettings
from coderag_tui.errors import ConfigError, ProviderError
from coderag_tui.models import ChatMessage, ModelInfo


@runtime_checkable
class Provider(Protocol):
    """A chat model that streams text."""

    name: str

    def context_window(self) -> int:
        """Tokens the model accepts (prompt + answer)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes for this model (exact when a tokenizer is at hand, else estimated)."""
        ...

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
    ) -> Iterator[str]:
        """Yield the answer as text pieces. Raises ModelError/ProviderError (one line)."""
        ...

    def info(self) -> ModelInfo:
        ...


@dataclass(frozen=True)
class ProviderOptions:
    """What the caller (CLI, TUI, tests) adds to the settings when building a provider."""

    models_dir: Path | None = None  # the project's models/ folder, searched for *.gguf
    model_override: str | None = None  # `--model PATH_OR_NAME`
    backoff_s: float = 0.5  # first retry delay of remote providers (doubles each retry)
    max_retry_after_s: float = 30.0  # a server's Retry-After is honoured up to this
    context_window: int = 0  # the window a discovered server reported (0: from the settings)


ProviderFactory = Callable[[ProviderSettings, ProviderOptions], Provider]


def sse_client(provider: str, url: str, headers: dict[str, str], settings: ProviderSettings,
               options: ProviderOptions, key_env: str, key: str) -> SSEClient:
    """The HTTP client of a remote provider: the settings' timeout and retries, the caller's
    backoff; `key` is masked in every message and `key_env` named instead."""
    return SSEClient(provider=provider, url=url, headers=headers, timeout_s=settings.timeout_s,
                     retries=settings.retries, backoff_s=options.backoff_s,
                     max_retry_after_s=options.max_retry_after_s, key_env=key_env, secret=key)

_REGISTRY: dict[str, ProviderFactory] = {}


def register(kind: str, factory: ProviderFactory) -> None:
    """Make `kind` (the `provider` setting) build its providers with `factory`."""
    _REGISTRY[kind] = factory


def kinds() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def create(settings: ProviderSettings, options: ProviderOptions | None = None) -> Provider:
    """The provider for `settings.provider` (a ConfigError names the known kinds otherwise)."""
    _load_builtins()
    factory = _REGISTRY.get(settings.provider)
    if factory is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigError(f"config: unknown [llm] provider {settings.provider!r} (known: {known})")
    return factory(settings, options or ProviderOptions())


def _load_builtins() -> None:
    # Importing the modules registers them; llama_cpp itself is imported only when a local
    # model is first used, so a remote-only setup never pays for it.
    from coderag_tui.answering.providers import anthropic, local, openai_compat  # noqa: F401


def accepts_keyword(function: Callable[..., object], name: str) -> bool:
    """Whether a provider's method takes a keyword (`stream`'s `should_stop` is optional:
    a provider without it is stopped between the pieces it yields)."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class ContextWindowError(ProviderError):
    """The server refused the prompt as larger than its context window (`window` tokens);
    `prompt_tokens` is what it counted for the prompt, when it said (else 0)."""

    def __init__(self, message: str, window: int, prompt_tokens: int = 0) -> None:
        super().__init__(message, retryable=False)
        self.window = window
        self.prompt_tokens = prompt_tokens


# How servers word a prompt larger than their window (llama.cpp, llama-cpp-python, OpenAI, vLLM).
_WINDOW_ERRORS = (
    re.compile(r"maximum context length is (?P<w>\d+) tokens.*?\((?P<p>\d+) in the messages", re.S),
    re.compile(r"maximum context length is (?P<w>\d+)"),
    re.compile(r"Requested tokens \((?P<p>\d+)\) exceed context window of (?P<w>\d+)"),
    re.compile(r"exceeds the available context size \((?P<w>\d+) tokens\)"),
    re.compile(r"context (?:window|length|size) (?:is |of )?(?P<w>\d+)\b.*exceed", re.I | re.S),
)


def window_from_error(message: str) -> tuple[int, int] | None:
    """(window, prompt tokens or 0) when `message` says the prompt exceeds the context window."""
    for pattern in _WINDOW_ERRORS:
        m = pattern.search(message)
        if m:
            groups = m.groupdict()
            return int(groups["w"]), int(groups.get("p") or 0)
    return None


# Context windows of well-known remote models, by name prefix (longest prefix wins).
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_000_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
    "llama3": 8_192,
    "llama3.1": 128_000,
    "llama3.2": 128_000,
    "qwen2.5-coder": 32_768,
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "mistral": 32_768,
    "codestral": 32_768,
    "deepseek-coder": 16_384,
    "gemma2": 8_192,
    "gemma3": 128_000,
    "phi3": 4_096,
}


def remote_context_window(settings: ProviderSettings) -> int:
    """`n_ctx` when the user set it, else the known window of the model, else `n_ctx`'s default.

    The default of `n_ctx` (4096) is meant for local models; for a remote model that is still at
    the default we prefer the model's known window.
    """
    default = ProviderSettings().n_ctx
    if settings.n_ctx > 0 and settings.n_ctx != default:
        return settings.n_ctx
    model = settings.model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in KNOWN_CONTEXT_WINDOWS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    if best:
        return KNOWN_CONTEXT_WINDOWS[best]
    return settings.n_ctx if settings.n_ctx > 0 else default
