"""A provider that tries an ordered list of providers: `[llm]` first, then `[[llm.fallback]]`.

It moves on when a provider fails with a retryable error (rate limit, server error, timeout,
connection refused: it already retried those itself) BEFORE it produced any text; once text
is streaming, a failure is reported as is. `answered_by` names the provider that answered,
`failures` keeps one line per provider that was skipped during the last answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from coderag_tui.answering.providers.base import Provider, ProviderOptions, accepts_keyword, create
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import CoderagError, ProviderError
from coderag_tui.models import ChatMessage, ModelInfo


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
