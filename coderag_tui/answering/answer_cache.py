"""A semantic answer cache: a question asked again (or nearly: the cosine of the query
embeddings at least `threshold`; the same words when the index has no vectors) gets the stored
answer at once, unless a range it cited has changed in the index since.

Entries are per model (another model's answer is not this model's) and per index. Follow-ups in
a conversation and questions with attached text are never cached: their answers depend on more
than the question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from coderag_tui.answering.checked import Checks, checks_from_json, checks_to_json
from coderag_tui.models import Source
from coderag_tui.store import answer_cache as rows
from coderag_tui.store.backend import StoreBackend

Embed = Callable[[str], "np.ndarray | None"]


@dataclass(frozen=True)
class CachedAnswer:
    question: str  # as it was first asked
    answer: str
    sources: tuple[Source, ...]
    invalid: tuple[str, ...]
    similarity: float
    created: float
    absent: tuple[str, ...] = ()  # of `invalid`: lines the repository does not have
    unknown_names: tuple[str, ...] = ()  # code names in the answer the index does not have
    model: str = ""  # the model that wrote it (the provider's answering model, behind a fallback chain)


def normalize(question: str) -> str:
    return " ".join(re.findall(r"\w+", question.lower()))


def _sources(text: str) -> tuple[Source, ...]:
    try:
        items = json.loads(text)
        return tuple(Source(**item) for item in items)
    except (ValueError, TypeError):
        return ()


def _cosine(a: np.ndarray, blob: bytes | None) -> float:
    if not blob:
        return 0.0
    b = np.frombuffer(blob, dtype=np.float32)
    if b.shape != a.shape:
        return 0.0
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denom) if denom else 0.0


class AnswerCache:
    def __init__(self, db: StoreBackend, model: str, threshold: float, embed: Embed | None = None,
                 embed_model: str = "") -> None:
        self.db = db
        self.model = model
        self.threshold = threshold
        self.embed = embed
        self.embed_model = embed_model if embed is not None else ""
        self._vectors: dict[str, np.ndarray | None] = {}

    def _vector(self, question: str) -> np.ndarray | None:
        if self.embed is None:
            return None
        if question not in self._vectors:
            vec = self.embed(question)
            self._vectors[question] = None if vec is None else np.asarray(vec, dtype=np.float32).ravel()
        return self._vectors[question]

    def lookup(self, question: str) -> CachedAnswer | None:
        """The stored answer for this question, or None. Stale entries found on the way are
        dropped."""
        if self.threshold <= 0:
            return None
        norm = normalize(question)
        vec = self._vector(question)
        scored: list[tuple[float, rows.CacheRow]] = []
        for row in rows.candidates(self.db, self.model):
            if row.norm == norm:
                sim = 1.0
            elif vec is not None and row.embed_model == self.embed_model:
                sim = _cosine(vec, row.vector)
            else:
                continue
            if sim >= self.threshold:
                scored.append((sim, row))
        for sim, row in sorted(scored, key=lambda item: -item[0]):
            if all(rows.range_fingerprint(self.db, p, s, e) == f for p, s, e, f in row.cited):
                checks = checks_from_json(row.invalid)
                return CachedAnswer(row.question, row.answer, _sources(row.sources), checks.invalid,
                                    round(sim, 4), row.created, checks.absent, checks.unknown_names, checks.model)
            rows.delete(self.db, row.id)  # the code it cited changed: it is never right again
        return None

    def remember(self, question: str, answer: str, sources: tuple[Source, ...], invalid: tuple[str, ...],
                 checks: Checks | None = None) -> None:
        """Keep an answer; `checks`: what was checked in it (default: the unverified citations)."""
        if self.threshold <= 0 or not answer.strip():
            return
        cited = [s for s in sources if s.cited] or list(sources)  # uncited: everything it was shown
        vec = self._vector(question)
        rows.put(self.db, self.model, question, normalize(question), self.embed_model,
                 vec.tobytes() if vec is not None else None, answer,
                 [asdict(s) for s in sources], checks_to_json(checks or Checks(invalid)),
                 [(s.path, s.start_line, s.end_line) for s in cited])
