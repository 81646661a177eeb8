"""A provider that tries an ordered list of providers: `[llm]` first, then `[[llm.fallback]]`.

It moves on when a provider fails with a retryable error (rate limit, server error, timeout,
connection refused: it already retried those itself) BEFORE it produced any text; once text
is streaming, a failure is reported as is. `answered_by` names the provider that answered,
`failures` keeps one line per provider that was skipped during the last answer.

With tools, the chain is walked the same way on the model's first turn; the provider that
answers it keeps the conversation (its tool protocol), and one without tools answers plainly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from coderag_tui.answering.providers.base import Provider, ProviderOptions, accepts_keyword, create
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import CoderagError, ProviderError
from coderag_tui.models import ChatMessage, ModelInfo

if TYPE_CHECKING:
    from coderag_tui.answering.tools import ToolCall, ToolSession, ToolSpec


def _moves_on(exc: CoderagError) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable


class FallbackProvider:
    def __init__(self, providers: Sequence[Provider]) -> None:
        if not providers:
            raise ValueError("FallbackProvider needs at least one provider")
        self.providers = list(providers)
        self.name = " -> ".join(p.name for p in self.providers)
        self.answered_by = ""
        self.failures: list[str] = []  # providers skipped during the last answer
        self.skipped: list[str] = []  # configured providers that could not be built
        self.finish_reason = ""
        self._current: Provider | None = None

    @property
    def tiny_note(self) -> str:
        return str(getattr(self.providers[0], "tiny_note", "") or "")

    def learn_window(self, window: int, server_tokens: int = 0, estimated: int = 0) -> None:
        learn = getattr(self._current, "learn_window", None)
        if learn is not None:
            learn(window, server_tokens, estimated)

    def _narrowest(self) -> Provider:
        return min(self.providers, key=lambda p: p.context_window())

    def context_window(self) -> int:
        # The prompt is built before we know who answers: it must fit every provider.
        return self._narrowest().context_window()

    def count_tokens(self, text: str) -> int:
        return self._narrowest().count_tokens(text)

    def info(self) -> ModelInfo:
        for p in self.providers:
            if p.name == self.answered_by:
                return p.info()
        return self.providers[0].info()

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        self.answered_by = ""
        self.failures = []
        last: CoderagError | None = None
        self.finish_reason = ""
        for provider in self.providers:
            produced = False
            self._current = provider
            try:
                options = {"should_stop": should_stop} if should_stop is not None and accepts_keyword(
                    provider.stream, "should_stop") else {}
                for text in provider.stream(
                    messages, max_tokens=max_tokens, temperature=temperature, stop=stop, **options
                ):
                    if not produced:
                        produced = True
                        self.answered_by = provider.name
                    yield text
            except CoderagError as exc:
                if produced or not _moves_on(exc):
                    raise
                self.failures.append(f"{provider.name}: {exc.one_line()}")
                last = exc
                continue
            if not produced:
                self.answered_by = provider.name  # an empty answer is still an answer
            self.finish_reason = str(getattr(provider, "finish_reason", "") or "")
            return
        assert last is not None
        raise ProviderError(
            "every model failed: " + "; ".join(self.failures), retryable=True
        ) from last


    def tool_session(self, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> ToolSession:
        """A conversation with tools, held by the first provider of the chain that answers."""
        return _FallbackSession(self, messages, specs)

    def tools_supported(self) -> bool:
        return any(hasattr(p, "tool_session") for p in self.providers)


class _PlainSession:
    """The tool session of a provider without tools: it answers, and never asks for a call."""

    def __init__(self, provider: Provider, messages: list[ChatMessage]) -> None:
        self.provider, self.messages = provider, messages

    def turn(self, *, max_tokens: int, temperature: float, allow_tools: bool) -> Iterator[str | ToolCall]:
        yield from self.provider.stream(self.messages, max_tokens=max_tokens, temperature=temperature)

    def add_results(self, text: str, calls: list[ToolCall], results: list[str]) -> None:
        raise AssertionError("a plain session never asks for tool calls")


class _FallbackSession:
    def __init__(self, owner: FallbackProvider, messages: list[ChatMessage], specs: Sequence[ToolSpec]) -> None:
        self.owner, self.messages, self.specs = owner, messages, list(specs)
        self.session: Any = None  # of the provider that answered the first turn
        self.provider: Provider | None = None

    def _open(self, provider: Provider) -> Any:
        if hasattr(provider, "tool_session"):
            return provider.tool_session(self.messages, self.specs)
        return _PlainSession(provider, self.messages)

    def turn(self, *, max_tokens: int, temperature: float, allow_tools: bool) -> Iterator[str | ToolCall]:
        owner = self.owner
        if self.session is not None and self.provider is not None:
            yield from self.session.turn(max_tokens=max_tokens, temperature=temperature, allow_tools=allow_tools)
            owner.finish_reason = str(getattr(self.provider, "finish_reason", "") or "")
            return
        owner.answered_by, owner.failures, owner.finish_reason = "", [], ""
        last: CoderagError | None = None
        for provider in owner.providers:
            owner._current = provider
            session = self._open(provider)
            produced = False
            try:
                for item in session.turn(max_tokens=max_tokens, temperature=temperature, allow_tools=allow_tools):
                    if not produced:
                        produced = True
                        self.session, self.provider, owner.answered_by = session, provider, provider.name
                    yield item
            except CoderagError as exc:
                if produced or not _moves_on(exc):
                    raise
                owner.failures.append(f"{provider.name}: {exc.one_line()}")
                last = exc
                continue
            if not produced:  # an empty turn is still an answer
                self.session, self.provider, owner.answered_by = session, provider, provider.name
            owner.finish_reason = str(getattr(provider, "finish_reason", "") or "")
            return
        assert last is not None
        raise ProviderError("every model failed: " + "; ".join(owner.failures), retryable=True) from last

    def add_results(self, text: str, calls: list[ToolCall], results: list[str]) -> None:
        if self.session is None:
            raise AssertionError("results before the model's first turn")
        self.session.add_results(text, calls, results)


def create_llm(settings: LLMSettings | ProviderSettings, options: ProviderOptions | None = None) -> Provider:
    """The provider for `[llm]`, wrapped in a FallbackProvider when fallbacks are configured.

    A fallback whose settings cannot even build a provider (e.g. a missing GGUF) is skipped
    with the reason kept in `failures`, as long as at least one provider can be built.
    """
    fallbacks: tuple[ProviderSettings, ...] = getattr(settings, "fallback", ())
    if not fallbacks:
        return create(settings, options)
    providers: list[Provider] = []
    problems: list[str] = []
    first_error: CoderagError | None = None
    for item in (settings, *fallbacks):
        try:
            providers.append(create(item, options))
        except CoderagError as exc:
            problems.append(f"{item.provider}: {exc.one_line()}")
            first_error = first_error or exc
    if not providers:
        assert first_error is not None
        raise first_error
    result = FallbackProvider(providers)
    result.skipped = problems
    return result
