"""Where the user is, and back/forward like a browser. Plain data: no textual import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place to return to: the chat, or a file line (with an optional highlighted range)."""

    kind: str  # "chat" or "file"
    path: str = ""
    line: int = 1
    start: int = 0  # highlighted range, 1-based inclusive; 0 = none
    end: int = 0

    @classmethod
    def chat(cls) -> Location:
        return cls("chat")

    @classmethod
    def file(cls, path: str, line: int = 1, start: int = 0, end: int = 0) -> Location:
        return cls("file", path, max(1, line), start, end)

    @property
    def label(self) -> str:
        return "chat" if self.kind == "chat" else f"{self.path}:{self.line}"


class History:
    """Back and forward stacks. `visit` records where the user was before moving."""

    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._back: list[Location] = []
        self._forward: list[Location] = []

    def visit(self, current: Location | None) -> None:
        if current is not None and (not self._back or self._back[-1] != current):
            self._back.append(current)
            del self._back[: -self.limit]
        self._forward.clear()

    def back(self, current: Location) -> Location | None:
        if not self._back:
            return None
        self._forward.append(current)
        return self._back.pop()

    def forward(self, current: Location) -> Location | None:
        if not self._forward:
            return None
        self._back.append(current)
        return self._forward.pop()

    @property
    def can_forward(self) -> bool:
        return bool(self._forward)
