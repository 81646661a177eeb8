"""Reciprocal Rank Fusion: score(d) = sum over lists of weight / (k + rank), rank from 1."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Fused(Generic[K]):
    key: K
    score: float
    reasons: tuple[str, ...]  # "<list>#<rank>" for every list the key appears in


def rrf(
    lists: Mapping[str, Sequence[K]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
    labels: Mapping[str, str] | None = None,
    spread: Mapping[str, float] | None = None,
) -> list[Fused[K]]:
    """Fuse ranked lists (best first; duplicates within a list count once, at their best rank).

    Ties are broken by the best single rank, then by first appearance, so the result is stable.
    `labels` names a list in the reasons (e.g. symbol matches shown as "symbol" without a rank).
    `spread` stretches a list's ranks before they are scored (rank x spread, above 1): a list
    that ranked a sample of the candidates (the vectors of a partly embedded index) scores its
    i-th item as about where it would rank among them all.
    """
    scores: dict[K, float] = {}
    reasons: dict[K, list[str]] = {}
    best: dict[K, int] = {}
    order: dict[K, int] = {}
    for name, items in lists.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        if weight <= 0:
            continue
        stretch = 1.0 if spread is None else max(spread.get(name, 1.0), 1.0)
        seen: set[K] = set()
        rank = 0
        for key in items:
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            # (a list not stretched is scored on its integer rank, exactly as without `spread`)
            scores[key] = scores.get(key, 0.0) + weight / (k + (rank if stretch == 1.0 else rank * stretch))
            label = (labels or {}).get(name)
            reasons.setdefault(key, []).append(label if label is not None else f"{name}#{rank}")
            best[key] = min(best.get(key, rank), rank)
            order.setdefault(key, len(order))
    ranked = sorted(scores, key=lambda key: (-scores[key], best[key], order[key]))
    return [Fused(key, scores[key], tuple(reasons[key])) for key in ranked]
