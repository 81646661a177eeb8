"""The opening of an answer: what retrieval and the graph know for certain, rendered by coderag.

The units are the top search hits (kind, qualified name, `path:start-end`, one line: the
docstring's first sentence, else the signature). For a question about a flow the call path
is found in the graph's CALLS edges: breadth-first from the top hits toward their callers,
until an entry point, which is another hit of the question when one is reachable (the
question named both ends), else a unit nobody calls (a true entry point), else the farthest
caller found. Test code never is a step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from coderag_tui.models import AnswerOpening, AnswerUnit, ComposedContext, UnitRef
from coderag_tui.retrieval.router import is_flow_question
from coderag_tui.store import read
from coderag_tui.store.db import Database

MAX_UNITS = 5
MAX_DEPTH = 6
MAX_FRONTIER = 200
LINE_CHARS = 140
_TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.(spec|test)\.\w+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s|\n\s*\n")


def is_test(unit: UnitRef) -> bool:
    return bool(_TEST_PATH.search(unit.path))


def one_line(unit: UnitRef) -> str:
    """The docstring's first sentence, else the signature, on one line."""
    doc = unit.docstring.strip().strip("\"'` ").strip()
    text = _SENTENCE.split(doc, maxsplit=1)[0] if doc else ""
    text = " ".join(text.split()) or " ".join(unit.signature.split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "\u2026"


def answer_unit(unit: UnitRef, call_line: int = 0) -> AnswerUnit:
    return AnswerUnit(unit.kind, unit.qualname or unit.name, unit.path, unit.start_line, unit.end_line,
                      one_line(unit), call_line)


def answer_units(context: ComposedContext, limit: int = MAX_UNITS) -> list[UnitRef]:
    """The units that answer the question: the top hits, code before whole files."""
    unique = list({h.unit.id: h.unit for h in context.hits}.values())
    code = [u for u in unique if u.kind != "file"]
    files = [u for u in unique if u.kind == "file"]
    return (code + files)[:limit]


def call_path(db: Database, targets: Sequence[UnitRef], hits: Sequence[UnitRef]) -> list[AnswerUnit]:
    """Entry point -> ... -> one of `targets`, each step calling the next (see module doc)."""
    targets = [t for t in targets if t.kind != "file" and not is_test(t)]
    if not targets:
        return []
    target_ids = {t.id for t in targets}
    hit_ids = {h.id for h in hits} - target_ids
    units: dict[int, UnitRef] = {t.id: t for t in targets}
    nxt: dict[int, tuple[int, int]] = {}  # caller id -> (the unit it calls on the path, line)
    depth = {t.id: 0 for t in targets}
    roots: list[int] = []
    frontier = [t.id for t in targets]
    found_hit: int | None = None
    for level in range(1, MAX_DEPTH + 1):
        if not frontier or found_hit is not None:
            break
        frontier = frontier[:MAX_FRONTIER]
        callers_of: dict[int, bool] = {uid: False for uid in frontier}
        new: list[int] = []
        for edge in read.callers(db, frontier):
            caller, called = edge.unit, edge.source
            if caller is None or called is None or is_test(caller) or caller.id == called.id:
                continue
            callers_of[called.id] = True
            if caller.id in depth:
                continue
            depth[caller.id] = level
            units[caller.id] = caller
            nxt[caller.id] = (called.id, edge.line)
            new.append(caller.id)
            if caller.id in hit_ids and found_hit is None:
                found_hit = caller.id
        roots.extend(uid for uid, called in callers_of.items() if not called and uid not in target_ids)
        frontier = new
    if found_hit is not None:
        start = found_hit
    elif roots:
        start = max(roots, key=lambda uid: depth[uid])
    elif len(depth) > len(target_ids):
        start = max(depth, key=lambda uid: depth[uid])
    else:
        return []
    path: list[AnswerUnit] = []
    current = start
    while current in nxt:
        callee, line = nxt[current]
        path.append(answer_unit(units[current], line))
        current = callee
    path.append(answer_unit(units[current]))
    return path


def build_opening(db: Database, question: str, context: ComposedContext) -> AnswerOpening:
    """The opening for `question` from the context's hits and the index's call graph."""
    units = answer_units(context)
    flow = is_flow_question(question)
    path = call_path(db, units[:2], [h.unit for h in context.hits]) if flow else []
    return AnswerOpening(units=tuple(answer_unit(u) for u in units), call_path=tuple(path), flow=flow)
