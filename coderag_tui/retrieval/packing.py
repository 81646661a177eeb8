"""Packing context pieces into a token budget.

Candidates come in tiers (primary, neighbours, extended, metadata), each with a share of the
budget; what a tier leaves unused flows to the next, and a last pass spends what is left on
pieces that did not fit their tier. Code pieces shrink to fit (the signature stays, then the
best-matching lines, then the rest in order, with `⋯ a-b` markers for the lines a-b left out,
`⋯ a-b above` for those an earlier piece shows); lines already shown are not shown again. The chosen pieces are ordered with the
most relevant first AND last (lost in the middle). The total never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from coderag_tui.config import ContextSettings
from coderag_tui.models import ContextPiece, summary_label
from coderag_tui.retrieval.focus import matching_lines
from coderag_tui.tokens import TokenCounter, estimate_tokens

TIERS = ("primary", "neighbours", "extended", "metadata")
MIN_PIECE_TOKENS = 24
SKIP_COVERED = 0.8  # a code piece whose lines are mostly shown already is skipped


# The budget follows the question: the share of each tier by question kind (see
# router.question_kind). Applied as factors on the configured shares, so a user's own
# shares keep their proportions.
# The default (and a general question's) split: on the SWE-QA questions (one-line "how/why does
# X ...") a fifth for callers and callees and 15% for outlines and tests found more of the
# evidence than 70% for the primaries (0.729 -> 0.736), and an architecture question gives its
# primaries as much (0.38 left them too little: 0.736 -> 0.741).
DEFAULT_SHARES = (0.6, 0.2, 0.15, 0.05)
KIND_SHARES: dict[str, tuple[float, float, float, float]] = {
    "lookup": (0.76, 0.12, 0.1, 0.05),  # the one thing asked about, little around it
    "architecture": (0.6, 0.2, 0.15, 0.05),  # breadth: neighbours, outlines, what calls what
    "debugging": (0.64, 0.24, 0.05, 0.03),  # depth: the code and what it calls and is called by
}


def shares_for(kind: str, settings: ContextSettings) -> ContextSettings:
    """`settings` with its tier shares weighted for a question of `kind`."""
    target = KIND_SHARES.get(kind)
    if target is None:
        return settings
    f = [t / d for t, d in zip(target, DEFAULT_SHARES, strict=True)]
    return replace(
        settings,
        share_primary=settings.share_primary * f[0],
        share_neighbours=settings.share_neighbours * f[1],
        share_extended=settings.share_extended * f[2],
        share_metadata=settings.share_metadata * f[3],
    )


@dataclass
class Candidate:
    """A piece before packing: code lines (numbered) or a ready text (outline, metadata)."""

    tier: str
    role: str
    path: str
    start_line: int
    end_line: int
    title: str
    relevance: float
    language: str = ""
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, text)
    text: str = ""  # used when `lines` is empty
    head: int = 1  # lines always kept when shrinking (the signature)
    focus: tuple[int, int] = (0, 0)  # lines to keep next (the best-matching chunk)
    max_lines: int = 0  # a cap for brief pieces (neighbours); 0 = none
    terms: frozenset[str] = frozenset()  # the question's words: lines holding them are kept first
    about: str = ""  # the unit's summary, above its code
    about_by: str = ""  # the model that wrote it


def render_piece(p: ContextPiece) -> str:
    """Exactly what ComposedContext.render() writes for a piece (without the separator)."""
    if p.role == "metadata":
        return f"### {p.title} ({p.citation})\n{p.text}"
    about = f"Summary ({summary_label(p.about_by)}): {p.about}\n" if p.about else ""
    return f"### {p.citation} [{p.role}] {p.title}\n{about}```{p.language or ''}\n{p.text}\n```"


def _piece(c: Candidate, text: str, count: TokenCounter) -> ContextPiece:
    p = ContextPiece(c.path, c.start_line, c.end_line, c.role, c.title, text, 0, c.language, c.about, c.about_by)
    return replace(p, tokens=count(render_piece(p) + "\n\n"))


def _lines_text(lines: Sequence[tuple[int, str]], keep: set[int], shown: set[int]) -> str:
    out: list[str] = []
    gap: list[int] = []

    def close() -> None:
        if gap:
            a, b = gap[0], gap[-1]
            # short: a shrunk piece has a marker per gap, and a long one ("(lines a-b left
            # out)") took up to half of a small piece's tokens
            span = f"{a}-{b}" if a != b else f"{a}"
            out.append(f"⋯ {span} above" if all(n in shown for n in gap) else f"⋯ {span}")
            gap.clear()

    for n, text in lines:
        if n in keep:
            close()
            out.append(text)
        else:
            gap.append(n)
    close()
    return "\n".join(out)


def _line_order(c: Candidate, lines: Sequence[tuple[int, str]]) -> list[int]:
    """Line numbers in the order they are kept when shrinking."""
    nums = [n for n, _ in lines]
    head = [n for n in nums if n < c.start_line + max(c.head, 1)]
    focus = [n for n in nums if c.focus[0] and c.focus[0] <= n <= c.focus[1] and n not in head]
    if c.terms:  # the lines the question is about come before the rest of the best chunk
        matching = [n for n in matching_lines(lines, c.terms) if n not in head]
        focus = matching + [n for n in focus if n not in set(matching)]
    chosen = set(head) | set(focus)
    rest = [n for n in nums if n not in chosen]
    return head + focus + rest


def fit(c: Candidate, allowance: int, count: TokenCounter,
        shown: set[int]) -> tuple[ContextPiece, set[int]] | None:
    """The candidate as a piece of at most `allowance` tokens (shrunk if needed) and the line
    numbers it shows, or None when nothing useful fits (its code goes before its summary)."""
    fitted = _fit(c, allowance, count, shown)
    if fitted is None and c.about:
        return _fit(replace(c, about="", about_by=""), allowance, count, shown)
    return fitted


def _fit(c: Candidate, allowance: int, count: TokenCounter,
         shown: set[int]) -> tuple[ContextPiece, set[int]] | None:
    if allowance < MIN_PIECE_TOKENS:
        return None
    if not c.lines:
        piece = _piece(c, c.text, count)
        if piece.tokens <= allowance:
            return piece, set()
        # a text piece (outline, metadata) keeps whole lines from its start
        text_lines = c.text.splitlines()
        lo, hi = 0, len(text_lines) - 1
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            p = _piece(c, "\n".join(text_lines[: mid + 1] + ["⋯"]), count)
            if p.tokens <= allowance:
                best, lo = p, mid + 1
            else:
                hi = mid - 1
        return (best, set()) if best is not None else None
    lines = [(n, t) for n, t in c.lines if n not in shown]
    if not lines or not any(t.strip() for _, t in lines):
        return None
    order = _line_order(c, lines)
    limit = len(order) if not c.max_lines else min(len(order), c.max_lines)
    keep = set(order[:limit])
    full = _piece(c, _lines_text(c.lines, keep, shown), count)
    if full.tokens <= allowance:
        return full, keep
    lo, hi, found = 1, limit - 1, None
    while lo <= hi:  # the most lines that fit
        mid = (lo + hi) // 2
        keep = set(order[:mid])
        p = _piece(c, _lines_text(c.lines, keep, shown), count)
        if p.tokens <= allowance:
            found, lo = (p, keep), mid + 1
        else:
            hi = mid - 1
    return found


def _covered(c: Candidate, shown: dict[str, set[int]]) -> float:
    if not c.lines:
        return 0.0
    seen = shown.get(c.path, set())
    nonblank = [n for n, t in c.lines if t.strip()] or [n for n, _ in c.lines]
    return sum(1 for n in nonblank if n in seen) / len(nonblank)


def pack(
    candidates: Sequence[Candidate],
    budget: int,
    settings: ContextSettings,
    count: TokenCounter = estimate_tokens,
) -> list[ContextPiece]:
    """Choose and shrink pieces to fit the budget; return them in lost-in-the-middle order."""
    shares = {
        "primary": settings.share_primary,
        "neighbours": settings.share_neighbours,
        "extended": settings.share_extended,
        "metadata": settings.share_metadata,
    }
    total_share = sum(shares.values()) or 1.0
    chosen: list[tuple[float, ContextPiece]] = []
    shown: dict[str, set[int]] = {}
    used = 0
    left_over: list[Candidate] = []
    seen_keys: set[tuple[str, int, int, str]] = set()
    carry = 0.0

    def take(c: Candidate, allowance: int) -> bool:
        nonlocal used
        key = (c.path, c.start_line, c.end_line, c.role)
        if key in seen_keys:
            return True
        if _covered(c, shown) >= SKIP_COVERED:
            seen_keys.add(key)
            return True
        allowance = min(allowance, budget - used)
        fitted = fit(c, allowance, count, shown.get(c.path, set()))
        if fitted is None:
            return False
        piece, lines = fitted
        seen_keys.add(key)
        used += piece.tokens
        chosen.append((c.relevance, piece))
        shown.setdefault(c.path, set()).update(lines)
        return True

    for tier in TIERS:
        group = [c for c in candidates if c.tier == tier]
        tier_budget = budget * shares[tier] / total_share + carry
        tier_used_before = used
        n = len(group)
        for c in group:
            remaining = int(tier_budget - (used - tier_used_before))
            cap = remaining if tier != "primary" or n <= 1 else max(remaining // 2, int(tier_budget / n))
            if not take(c, cap):
                left_over.append(c)
        carry = max(tier_budget - (used - tier_used_before), 0.0)
    for c in sorted(left_over, key=lambda c: (TIERS.index(c.tier), -c.relevance)):
        if budget - used < MIN_PIECE_TOKENS:
            break
        take(c, budget - used)
    return lost_in_the_middle([p for _, p in sorted(chosen, key=lambda rp: -rp[0])])


def lost_in_the_middle(pieces: Sequence[ContextPiece]) -> list[ContextPiece]:
    """Pieces sorted by relevance (best first) -> best at the start, second best at the end,
    and so on inwards, so the least relevant sit in the middle."""
    front: list[ContextPiece] = []
    back: list[ContextPiece] = []
    for i, p in enumerate(pieces):
        (front if i % 2 == 0 else back).append(p)
    return front + back[::-1]
