"""Why a SWE-QA context misses a piece of evidence (bench/eval_sweqa.py --why).

Each missed item gets one cause, checked from the nearest to the farthest:

- `cut:<role>`: a candidate the expansion made (a primary, a caller, a callee, a test, a parent
  outline, metadata) holds it, but the packing left it out (the first role that holds it);
- `ranked:<n>`: not among the candidates, but the search's hits hold it by rank n (<= DEEP): the
  evidence was retrieved and ranked out of the primaries;
- `unretrieved`: the checkout holds it, the first DEEP hits do not;
- `absent`: the checkout does not hold it (a released version without it, a file not indexed).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from bench.harness.evidence import found
from coderag_tui.retrieval.expansion import MemoReads, expand
from coderag_tui.retrieval.focus import question_stems
from coderag_tui.retrieval.packing import Candidate
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.retrieval.strategies import select
from coderag_tui.service import CodeRag
from coderag_tui.store.retrieval_reads import context_reads

DEEP = 200
_WORD = re.compile(r"\w+")


def _text(c: Candidate) -> str:
    return c.title + "\n" + ("\n".join(t for _, t in c.lines) if c.lines else c.text)


class Why:
    """The causes of one index's misses; `corpus` is the checkout's indexed text, read once."""

    def __init__(self, service: CodeRag) -> None:
        self.service = service
        self.paths = [str(r[0]) for r in service.db.rows("SELECT path FROM files")]
        self._words: set[str] | None = None
        self.causes: Counter[str] = Counter()

    def words(self) -> set[str]:
        """Every word of the indexed files (read once)."""
        if self._words is None:
            self._words = set()
            for p in self.paths:
                try:
                    self._words.update(_WORD.findall((Path(self.service.root) / p).read_text("utf-8", "replace")))
                except OSError:
                    continue
        return self._words

    def in_repo(self, item: str) -> bool:
        if "/" in item or re.search(r"\.(py|md|rst|txt|cfg|toml|ini)$", item):
            return found(item, "", self.paths)
        parts = [p for p in item.replace("::", ".").split(".") if p]
        words = self.words()
        return all(set(_WORD.findall(p)) <= words for p in parts)

    def explain(self, question: str, missed: list[str]) -> list[str]:
        if not missed:
            return []
        service = self.service
        settings = service.settings.context
        searcher = service.searcher()
        result = searcher.search(question, k=DEEP)
        hits = select(searcher.db, result.hits, "relevance", settings.primary_results)
        reads = MemoReads(context_reads(searcher.db))
        reader = CodeReader(reads, service.root)
        candidates = expand(reads, reader, hits[: settings.primary_results], settings, None,
                            question_stems(question))
        texts = [(c.tier if c.role == "primary" else c.role, c.path, _text(c)) for c in candidates]
        unit_texts: list[tuple[str, str]] = []
        out = []
        for item in missed:
            cause = ""
            for role, path, text in texts:
                if found(item, text, [path]):
                    cause = f"cut:{role}"
                    break
            if not cause:
                for role in ("primary", "caller", "callee", "test", "parent", "metadata", "similar"):
                    group = [t for t in texts if t[0] == role]
                    if group and found(item, "\n".join(t[2] for t in group), [t[1] for t in group]):
                        cause = f"cut:{role}"
                        break
            if not cause:
                if not unit_texts:
                    for h in hits:
                        u = h.unit
                        lines = reader.lines(u.path, u.start_line, u.end_line)
                        unit_texts.append((u.path, "\n".join(t for _, t in lines)))
                # the rank by which the hits so far hold it (`A.b`: each part in some hit)
                parts = {p for p in item.replace("::", ".").split(".") if p}
                for rank, (path, text) in enumerate(unit_texts, 1):
                    if "/" in item or re.search(r"\.(py|md|rst|txt|cfg|toml|ini)$", item):
                        hit = found(item, "", [path])
                    else:
                        parts = {p for p in parts if not re.search(r"\b" + re.escape(p) + r"\b", text)}
                        hit = not parts
                    if hit:
                        cause = f"ranked:{rank}"
                        break
            if not cause:
                cause = "unretrieved" if self.in_repo(item) else "absent"
            self.causes[_bucket(cause)] += 1
            out.append(cause)
        return out


def _bucket(cause: str) -> str:
    if cause.startswith("ranked:"):
        n = int(cause.split(":")[1])
        return "ranked:1-20" if n <= 20 else "ranked:21-50" if n <= 50 else "ranked:51-200"
    return cause


def summary(causes: Counter[str]) -> str:
    total = sum(causes.values())
    return ", ".join(f"{k} {v}" for k, v in causes.most_common()) + f" (of {total} missed)"
