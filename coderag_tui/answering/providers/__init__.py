"""Chat model providers: local GGUF (llama), OpenAI-compatible servers, Anthropic."""

from coderag_tui.answering.providers.base import (
    Provider,
    ProviderFactory,
    ProviderOptions,
    create,
    kinds,
    register,
)
from coderag_tui.tokens import estimate_tokens

__all__ = [
    "Provider",
    "ProviderFactory",
    "ProviderOptions",
    "create",
    "estimate_tokens",
    "kinds",
    "register",
]
