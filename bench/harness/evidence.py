"""SWE-QA evidence recall: the share of a question's evidence (identifiers and paths the
reference answer names) that a context shows. Used by bench/eval_sweqa.py and
bench/eval_file_questions.py.

A path counts as found when the context cites a file ending with it (`### path:a-b` headers);
an identifier when it occurs in the context (`A.b`: both parts occur)."""

from __future__ import annotations

import re

CITE = re.compile(r"^### (\S+?):\d+-\d+", re.M)


def found(item: str, text: str, cited: list[str]) -> bool:
    if "/" in item or re.search(r"\.(py|md|rst|txt|cfg|toml|ini)$", item):
        return any(p == item or p.endswith("/" + item) or item.endswith("/" + p) for p in cited)
    parts = [p for p in item.replace("::", ".").split(".") if p]
    return all(re.search(r"\b" + re.escape(p) + r"\b", text) for p in parts)


def recall(evidence: list[str], text: str) -> float:
    cited = CITE.findall(text)
    return sum(found(e, text, cited) for e in evidence) / len(evidence)
