"""Chat model providers: local GGUF (llama), OpenAI-compatible servers, Anthropic."""

from coderag_tui.answering.providers.base import (
    Provider,
    ProviderFactory,
    ProviderOptions,
    create,
    estimate_tokens,
    kinds,
    register,
)

__all__ = [
    "Provider",
    "ProviderFactory",
    "ProviderOptions",
    "create",
    "estimate_tokens",
    "kinds",
    "register",
]
