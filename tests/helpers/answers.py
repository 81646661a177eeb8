"""A scripted provider for answer-quality tests: replies chosen by the test, prompts recorded."""

from __future__ import annotations

import math
from collections.abc import Iterator

from coderag_tui.answering.providers.local import TINY_NOTE
from coderag_tui.models import (
    ChatMessage,
    ModelInfo,
)


class Scripted:
    """A provider replaying text pieces (isolation only); counts what the answerer pulled."""

    def __init__(self, pieces: list[str], finish: str = "stop", tiny: bool = False) -> None:
        self.pieces = pieces
        self.pulled = 0
        self.closed = False
        self.name = "scripted"
        self.finish_reason = ""
        self._finish = finish
        self.tiny_note = TINY_NOTE if tiny else ""
        self.calls: list[tuple[int, float]] = []

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def info(self) -> ModelInfo:
        return ModelInfo(self.name, "scripted", "", 4096)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None) -> Iterator[str]:
        self.calls.append((max_tokens, temperature))
        self.sent = "\n".join(m.content for m in messages)
        try:
            for piece in self.pieces:
                self.pulled += 1
                yield piece
            self.finish_reason = self._finish
        finally:
            self.closed = True
