"""Answers from a local GGUF (the offline default) or a remote model, every claim cited.

    provider = create_llm(settings.llm, ProviderOptions(models_dir=...))
    answerer = Answerer(provider, store=db, max_tokens=settings.llm.max_tokens)
    for event in answerer.ask(question, composed_context, repo_map, conversation_id):
        ...  # status / token / sources / done / error
"""

from coderag_tui.answering.answerer import Answerer, Conversation, StoredMessage
from coderag_tui.answering.citations import (
    CheckedSources,
    Citation,
    check_citations,
    make_exists,
    parse_citations,
)
from coderag_tui.answering.fallback import FallbackProvider, create_llm
from coderag_tui.answering.models_cmd import list_models, pull_model
from coderag_tui.answering.prompts import FittedPrompt, build_messages, fit_prompt
from coderag_tui.answering.providers.base import Provider, ProviderOptions, create, register

__all__ = [
    "Answerer",
    "CheckedSources",
    "Citation",
    "Conversation",
    "FallbackProvider",
    "FittedPrompt",
    "Provider",
    "ProviderOptions",
    "StoredMessage",
    "build_messages",
    "check_citations",
    "create",
    "create_llm",
    "fit_prompt",
    "list_models",
    "make_exists",
    "parse_citations",
    "pull_model",
    "register",
]
