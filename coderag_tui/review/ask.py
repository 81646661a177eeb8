"""`coderag review --ask`: the review context and a review prompt to the configured model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from coderag_tui.config import Settings
from coderag_tui.models import AnswerEvent

REVIEW_QUESTION = """\
Review this code change as a careful senior engineer. The context starts with an overview of \
what changed (with call sites that no longer match a new signature and callers left orphaned \
by deleted or renamed functions), then the changed code and its diffs, its callers, callees, \
tests and related code.
1. For each changed function or class: what changed, and is the change correct?
2. What can break: callers whose calls no longer fit, orphaned callers, behaviour the callers \
or tests rely on.
3. Which tests need to change or be added.
Cite the code behind each point as path:start-end. End with a short list of concrete fixes."""


def provider_for(settings: Settings) -> Any:
    """The model that writes the review: [llm] of these settings, on this machine (the review's
    context is built here, whichever service built it)."""
    from coderag_tui.answering import ProviderOptions, create_llm
    from coderag_tui.paths import models_dir

    return create_llm(settings.llm, ProviderOptions(models_dir=models_dir()))


def ask_review(settings: Settings, review: Any, provider: Any | None = None) -> Iterator[AnswerEvent]:
    """Stream the model's review (status, token, sources, done or error events)."""
    from coderag_tui.answering import Answerer

    provider = provider if provider is not None else provider_for(settings)
    llm = settings.llm
    answerer = Answerer(provider, store=None, max_tokens=llm.max_tokens, temperature=llm.temperature)
    question = f"{REVIEW_QUESTION}\n\nOverview of the change ({review.label}):\n{review.overview}"
    yield from answerer.ask(question, review.composed())


def context_room(provider: Any, answer_tokens: int) -> int:
    """Tokens of review context a provider's window leaves beside the rules, the question and
    the answer (the list of citable sources and the chat template take the margin)."""
    from coderag_tui.answering.prompts import SYSTEM_RULES

    try:
        window = int(provider.context_window())
        fixed = int(provider.count_tokens(SYSTEM_RULES + "\n" + REVIEW_QUESTION))
    except Exception:
        return 0
    return max(256, window - answer_tokens - fixed - 200)
