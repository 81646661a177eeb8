"""Which lines of a long unit to keep: those that match the question, code before comments.

A unit shortened from its top keeps its docstring and drops the code the question is about
(`wsgi_app` cut just before `ctx.push()`); the lines holding the question's words (or their
stems: "pushed" finds `ctx.push()`) are what the reader needs after the signature.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.retrieval.names import forms

MIN_STEM = 4
_QUOTES = ('"""', "'''")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;|%)")


def question_stems(query: str) -> frozenset[str]:
    """The question's search words and their stems (words of 3+ letters)."""
    out: set[str] = set()
    for t in query_terms(query):
        if len(t) >= 3 and not t.isdigit():
            out.update(f for f in forms(t) if len(f) >= min(len(t), MIN_STEM))
    return frozenset(out)


def comment_lines(lines: Sequence[tuple[int, str]]) -> set[int]:
    """Lines of docstrings (Python triple quotes) and comments, by a cheap scan."""
    out: set[int] = set()
    inside: str | None = None
    for n, text in lines:
        s = text.strip()
        if inside is not None:
            out.add(n)
            if inside in s:
                inside = None
            continue
        q = next((q for q in _QUOTES if s.startswith(q) or s.startswith(("r" + q, "b" + q, "f" + q))), None)
        if q is not None:
            out.add(n)
            if s.count(q) == 1:
                inside = q
        elif _COMMENT.match(text):
            out.add(n)
    return out


def matching_lines(lines: Sequence[tuple[int, str]], stems: Iterable[str], context: int = 1) -> list[int]:
    """Line numbers holding the question's words, code before comments, most words first; each
    with up to `context` code lines either side (right after it)."""
    wanted = [s for s in stems if s]
    if not wanted:
        return []
    notes = comment_lines(lines)
    scored: list[tuple[int, int, int]] = []
    for i, (n, text) in enumerate(lines):
        low = text.lower()
        hits = sum(1 for w in wanted if w in low)
        if hits:
            scored.append((n in notes, -hits, i))
    scored.sort()
    out: dict[int, None] = {}
    for _, _, i in scored:
        out.setdefault(lines[i][0], None)
        for j in range(max(i - context, 0), min(i + context, len(lines) - 1) + 1):
            if lines[j][0] not in notes:
                out.setdefault(lines[j][0], None)
    return list(out)
