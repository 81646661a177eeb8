"""Texts longer than the model's window, embedded whole: split into windows and pooled.

all-MiniLM-L6-v2 reads 256 word pieces (~700 characters of code); a longer chunk used to lose its
tail. A long text is cut into windows that fit (at line ends where possible), each window keeps
the chunk's header (path, scope, language), and the window vectors are averaged, weighted by
the word pieces each holds, then normalised.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np


class Windows:
    """Splits texts into windows a model reads whole; `tokenizer` is a `tokenizers.Tokenizer`."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer.to_str())  # a copy: the model's own truncates
        self._tok.no_truncation()
        self._tok.no_padding()
        specials = len(self._tok.encode("", add_special_tokens=True).ids)
        self.size = max(max_length - specials, 16)  # word pieces of text per window

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def split(self, head: str, body: str) -> list[tuple[str, int]]:
        """(window text, weight) pairs covering `head + body`; one pair when it fits."""
        enc = self._tok.encode(body, add_special_tokens=False)
        head_n = self.count(head) if head else 0
        if head_n + len(enc.ids) <= self.size:
            return [(head + body, max(len(enc.ids), 1))]
        if head_n > self.size // 2:  # a header that would crowd out the code: windows without it
            return self.split("", head + body)
        budget = self.size - head_n
        starts = [a for a, _ in enc.offsets]
        out: list[tuple[str, int]] = []
        tok = c0 = 0
        n = len(starts)
        while tok < n:
            end = min(tok + budget, n)
            if end >= n:
                c1 = len(body)
            else:
                c1 = starts[end]
                nl = body.rfind("\n", c0, c1)
                if nl > c0 + (c1 - c0) // 2:  # cut at a line end in the window's second half
                    c1 = nl + 1
                    end = max(bisect.bisect_left(starts, c1, tok + 1), tok + 1)
            out.append((head + body[c0:c1], end - tok))
            tok, c0 = end, c1
        return out


def pool(vectors: np.ndarray, weights: Sequence[int]) -> np.ndarray:
    """The weighted mean of window vectors, normalised."""
    w = np.asarray(weights, dtype=np.float32)[:, None]
    mean = (vectors * w).sum(axis=0) / max(float(w.sum()), 1e-6)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)
