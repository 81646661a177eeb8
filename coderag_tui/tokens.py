"""Token counts, one way for the whole project: the loaded model's own tokenizer where there is
one (`counter_for(provider)`), else `estimate_tokens`, a fast character-based estimate."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

TokenCounter = Callable[[str], int]

# Code runs ~3.5-4 characters per token with common tokenizers; the low end keeps budgets safe.
CHARS_PER_TOKEN = 3.5


class CountsTokens(Protocol):
    """Anything that counts tokens with a model's tokenizer (every answering provider)."""

    def count_tokens(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    """A fast, conservative token estimate, for when no tokenizer is at hand."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def counter_for(model: CountsTokens | None) -> TokenCounter:
    """The model's own token counter when a model is given, else `estimate_tokens`."""
    return model.count_tokens if model is not None else estimate_tokens
