"""The review's context pieces and their packing into a token budget, changed code first.

Priorities: the changed code always (shrunk only when it alone exceeds the budget); callers
while the context is under 40% of the budget; callees under 60%; the class/module outline and
tests under 80%; similar code under 90%; metadata (level 3) in what is left. Within a tier the
changes take turns, so the first change cannot starve the others. A piece that does not fit
is shrunk to the lines around its call (or its head) before it is left out. The total, as
counted on the rendered Markdown, never exceeds the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from coderag_tui.models import ContextPiece
from coderag_tui.tokens import TokenCounter

TIER_LIMITS = {0: 1.0, 1: 0.4, 2: 0.6, 3: 0.8, 4: 0.9, 5: 1.0}
TIER_NAMES = {0: "change", 1: "callers", 2: "callees", 3: "outline and tests", 4: "similar code",
              5: "metadata"}
TEXT_ROLES = frozenset({"metadata", "overview"})
SHRINK_STEPS = (40, 24, 12, 6)  # lines kept when a code piece is shrunk


@dataclass(frozen=True)
class Candidate:
    change: int  # index of the change it belongs to
    tier: int
    role: str  # diff, change, caller, orphaned-caller, call-site, callee, outline, test, similar, metadata
    path: str
    start_line: int
    end_line: int
    title: str
    text: str
    language: str = ""
    focus: int = 0  # the line to keep when shrinking (a call); 0 = keep the head
    seq: int = 0  # the order it was proposed in (kept through shrinking)

    def piece(self, count: TokenCounter) -> ContextPiece:
        p = ContextPiece(self.path, self.start_line, self.end_line, self.role, self.title, self.text, 0,
                         self.language)
        return replace(p, tokens=count(render_piece(p) + "\n\n"))


def render_piece(p: ContextPiece) -> str:
    if p.role in TEXT_ROLES:
        return f"### {p.title} ({p.citation})\n{p.text}"
    fence = "diff" if p.role == "diff" else p.language or ""
    return f"### {p.citation} [{p.role}] {p.title}\n```{fence}\n{p.text}\n```"


def shrink(c: Candidate, keep: int) -> Candidate | None:
    """The candidate cut to `keep` lines: around its focus line, else its first lines."""
    lines = c.text.split("\n")
    if len(lines) <= keep or keep < 1:
        return None
    if c.role in TEXT_ROLES or c.role == "diff":
        cut = lines[: keep - 1] + [f"… ({len(lines) - keep + 1} more lines)"]
        return replace(c, text="\n".join(cut))
    first = c.start_line
    if c.focus and c.start_line <= c.focus <= c.end_line:
        lo = max(0, min(c.focus - first - keep // 2, len(lines) - keep))
    else:
        lo = 0
    part = lines[lo : lo + keep]
    return replace(c, text="\n".join(part), start_line=first + lo, end_line=first + lo + len(part) - 1,
                   title=c.title + " (excerpt)" if "(excerpt)" not in c.title else c.title)


@dataclass
class Packed:
    pieces: list[tuple[Candidate, ContextPiece]]
    tokens: int
    dropped: dict[str, int]  # tier name -> pieces left out


def pack(candidates: list[Candidate], budget: int, reserved: int, count: TokenCounter) -> Packed:
    """Choose pieces for a budget of which `reserved` tokens are already spent (the overview)."""
    used = reserved
    chosen: list[tuple[Candidate, ContextPiece]] = []
    dropped: dict[str, int] = {}

    def fits(c: Candidate, limit: float) -> tuple[Candidate, ContextPiece] | None:
        p = c.piece(count)
        if used + p.tokens <= limit:
            return c, p
        for keep in SHRINK_STEPS:
            s = shrink(c, keep)
            if s is None:
                continue
            p = s.piece(count)
            if used + p.tokens <= limit:
                return s, p
        return None

    # tier 0: the changes themselves, always (full code dropped for its diff, then cut, if need be)
    must = [c for c in candidates if c.tier == 0]
    must_pieces = [c.piece(count) for c in must]
    if used + sum(p.tokens for p in must_pieces) > budget:
        keep_changes = {c.change for c in must if c.role == "diff"}
        must = [c for c in must if not (c.role == "change" and c.change in keep_changes)]
        dropped["change"] = len(must_pieces) - len(must)
        must_pieces = [c.piece(count) for c in must]
    if used + sum(p.tokens for p in must_pieces) > budget and must:
        room = max(0, budget - used)
        share = room // len(must)
        cut: list[Candidate] = []
        for c, p in zip(must, must_pieces, strict=True):
            if p.tokens <= share:
                cut.append(c)
                continue
            for keep in (*SHRINK_STEPS, 3, 2):
                s = shrink(c, keep)
                if s is not None and s.piece(count).tokens <= share:
                    cut.append(s)
                    break
            else:
                cut.append(c)
        must = cut
    for c in must:
        p = c.piece(count)
        if used + p.tokens <= budget:
            chosen.append((c, p))
            used += p.tokens
        else:
            dropped["change"] = dropped.get("change", 0) + 1

    # tiers 1-5, the changes taking turns
    for tier in range(1, 6):
        limit = math.floor(budget * TIER_LIMITS[tier])
        queues: dict[int, list[Candidate]] = {}
        for c in candidates:
            if c.tier == tier:
                queues.setdefault(c.change, []).append(c)
        while any(queues.values()):
            for change in sorted(queues):
                q = queues[change]
                if not q:
                    continue
                c = q.pop(0)
                got = fits(c, limit)
                if got is None:
                    dropped[TIER_NAMES[tier]] = dropped.get(TIER_NAMES[tier], 0) + 1
                    continue
                chosen.append(got)
                used += got[1].tokens
    chosen.sort(key=lambda cp: (cp[0].change, cp[0].tier, cp[0].seq))
    return Packed(chosen, used, dropped)
