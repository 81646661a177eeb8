"""Error types. Every error a user can cause carries one clear line that says what to do."""

from __future__ import annotations


class CoderagError(Exception):
    """Base error: its message is shown to the user as one line, never a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message if not self.hint else f"{self.message} ({self.hint})"
        return " ".join(text.split())


class ConfigError(CoderagError):
    """config.toml is invalid or names something that does not exist."""


class RepoError(CoderagError):
    """The repository could not be found, cloned or read."""


class IndexError_(CoderagError):
    """The index is missing, corrupt or from an incompatible version."""


class CorruptIndexError(IndexError_):
    """The index file is damaged or is not an index: `coderag index --rebuild` replaces it."""


class StoreError(CoderagError):
    """SQLite or sqlite-vec could not be opened or loaded."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached right now (restarting, down, the network): worth
    trying again shortly; a server answers 503 meanwhile."""


class NotFoundError(RepoError):
    """Something named by a request (a conversation) does not exist for whoever asked."""


class ModelError(CoderagError):
    """A model (embedding or LLM) is missing, unreadable or unreachable."""


class NoSummariesError(ModelError):
    """The model writes no summaries (the tiny default model: measured, they were wrong)."""


class ProviderError(ModelError):
    """A remote model failed; `retryable` tells the fallback logic whether to try again."""

    def __init__(self, message: str, hint: str = "", retryable: bool = False) -> None:
        super().__init__(message, hint)
        self.retryable = retryable
