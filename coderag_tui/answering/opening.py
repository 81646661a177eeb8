"""The opening of an answer: what the index found (its best matches, ranked, and for a flow
question a call path in the call graph), rendered by coderag, not by the model.

The units are the top search hits (kind, qualified name, `path:start-end`, one line: the
docstring's first sentence, else the signature). For a question about a flow the call path
is found in the graph's CALLS edges: breadth-first from those units toward their callers,
until an entry point, which is another hit of the question when one is reachable (the
question named both ends), else a unit nobody calls (a true entry point), else the farthest
caller found. Test code never is a step.

A flow question asks how control or data gets somewhere: "how does X <verb> Y" with a verb of
motion or processing (dispatch, reach, handle, call...), "what happens when", "walk me through",
"the path from A to B", "lifecycle", "flow of". A plain lookup ("where is X defined", "what
does X return", "how do I install") is not one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict

from coderag_tui.answering.appliers import appliers
from coderag_tui.models import AnswerOpening, AnswerUnit, ComposedContext, UnitRef
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.retrieval_reads import context_reads

MAX_UNITS = 5
MAX_DEPTH = 6
MAX_FRONTIER = 200
LINE_CHARS = 140
_TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.(spec|test)\.\w+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s|\n\s*\n")
_WORD = re.compile(r"[a-z]+")
_STOP = {"the", "and", "how", "does", "what", "when", "where", "which", "with", "from", "into", "that",
         "this", "for", "are", "its", "was", "were", "who", "why", "can", "get", "gets", "through"}

# verbs that move or process something along a path (any inflection: dispatch, dispatches...)
_FLOW_VERB = (
    r"(?:dispatch|rout|handl|process|reach|get(?:s|ting)?\s+(?:to|from|into)|go(?:es)?\s+(?:to|through)|end\s+up"
    r"|call|invok|execut|run|trigger|fire|propagat|pass|forward|flow|travel|mov|deliver|send|sent|receiv|load"
    r"|resolv|transform|convert|turn(?:s|ed)?\s+into|becom|render|serializ|pars|build|built|construct|creat"
    r"|initiali[sz]|start|boot|register|wire|connect|hand(?:s|ed)?\s+(?:off|over)|map|match|emit|publish"
    r"|bubbl|raise|throw|catch|caught|commit|flush|redirect|authenticat|validat|sign|verif|encod|decod)"
)
# a verb's own endings only: "connected", "mapping", not the noun "connection" or "parser"
_INFLECTION = r"(?:e|es|s|ed|d|ing|y|ies|ied|ying|[bdgklmnprt](?:ed|ing))?\b"
_FLOW = re.compile(
    r"\bhow\s+(?:does|do|did|is|are|was|were|will|would|can|should)\s+(?!(?:i|we|you|one)\b)"
    rf"(?:[\w.`'()/-]+\s+){{0,7}}?{_FLOW_VERB}{_INFLECTION}"
    r"|\bwhat\s+happens\s+(?:when|if|after|before|during|once|on|to|with|in)\b"
    r"|\bwalk\s+(?:me|us)\s+through\b|\bwalkthrough\b|\btrace\s+(?:the|a|an|how|what|where|it)\b|\bstep[\s-]+by[\s-]+step\b"
    r"|\b(?:path|paths|way|route|journey|chain)\s+(?:\w+\s+){0,3}?from\s+.+?\s+to\b"
    r"|\bfrom\s+.+?\s+(?:all\s+the\s+way\s+)?to\s+.+?\b(?:flow|path|travel|go|get|reach)\w*"
    r"|\bcall\s+(?:path|chain|graph|stack|flow|sequence|order|hierarchy)\b|\bcode\s+path\b"
    r"|\b(?:control|data|request|execution|event|message)\s+flow\b|\bflow\s+of\b"
    r"|\blife\s*-?\s*cycle\b|\bend[\s-]+to[\s-]+end\b|\bsequence\s+of\s+(?:calls|steps|events)\b"
    r"|\border\s+in\s+which\b|\bgoes\s+through\b|\bleads?\s+to\b|\bunder\s+the\s+hood\b",
    re.I | re.S,
)


def is_flow_question(question: str) -> bool:
    """A question about how control or data gets somewhere: its answer is a call path."""
    return bool(_FLOW.search(" ".join(question.split())))


def is_test(unit: UnitRef) -> bool:
    return bool(_TEST_PATH.search(unit.path))


def one_line(unit: UnitRef) -> str:
    """The docstring's first sentence, else the signature, on one line."""
    doc = unit.docstring.strip().strip("\"'` ").strip()
    text = _SENTENCE.split(doc, maxsplit=1)[0] if doc else ""
    text = " ".join(text.split()) or " ".join(unit.signature.split())
    if text in (f"{unit.kind} {unit.name}", f"{unit.kind} {unit.qualname}", unit.name):
        return ""  # says nothing the kind and name do not
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "\u2026"


def answer_unit(unit: UnitRef, call_line: int = 0) -> AnswerUnit:
    return AnswerUnit(unit.kind, unit.qualname or unit.name, unit.path, unit.start_line, unit.end_line,
                      one_line(unit), call_line)


def answer_units(context: ComposedContext, limit: int = MAX_UNITS) -> list[UnitRef]:
    """The units that answer the question: the top hits, code before whole files and tests."""
    unique = list({h.unit.id: h.unit for h in context.hits}.values())
    return sorted(unique, key=lambda u: (is_test(u), u.kind == "file"))[:limit]


def _mentions(unit: UnitRef, question: str) -> int:
    """How often the question's words occur in a unit's name and docstring."""
    words = {w for w in _WORD.findall(question.lower()) if len(w) > 2 and w not in _STOP}
    text = _WORD.findall(f"{unit.qualname.replace('_', ' ')} {unit.docstring}".lower())
    return sum(1 for w in text if w in words)


def call_path(source: StoreBackend | ContextReads, targets: Sequence[UnitRef], hits: Sequence[UnitRef],
              question: str = "") -> list[AnswerUnit]:
    """Entry point -> ... -> one of `targets`, each step calling the next (see module doc).

    Each target gets its own search (callers shared by several targets would otherwise lead
    to whichever was found first); the path kept passes through most of the question's hits,
    from a true entry point, the longest, to the target the question's words name most, the
    best ranked."""
    reads = context_reads(source)
    targets = [t for t in targets if t.kind != "file" and not is_test(t)]
    hit_ids = {h.id for h in hits} | {t.id for t in targets}
    best: tuple[tuple[int, bool, int, int, int], list[AnswerUnit]] | None = None
    for rank, target in enumerate(targets):
        found = _path_to(reads, target, hit_ids)
        if found is not None:
            key = (*found[0], _mentions(target, question), -rank)
            if best is None or key > best[0]:
                best = (key, found[1])
    return best[1] if best is not None else []


def _path_to(reads: ContextReads, target: UnitRef, hit_ids: set[int]) -> tuple[tuple[int, bool, int], list[AnswerUnit]] | None:
    """The best path to `target` and its score: (question hits on it, from a true entry point, length)."""
    units: dict[int, UnitRef] = {target.id: target}
    nxt: dict[int, tuple[int, int]] = {}  # caller id -> (the unit it calls on the path, line)
    depth = {target.id: 0}
    roots: set[int] = set()
    frontier = [target.id]
    for level in range(1, MAX_DEPTH + 1):
        if not frontier:
            break
        frontier = frontier[:MAX_FRONTIER]
        called: set[int] = set()
        new: list[int] = []
        for edge in reads.callers(frontier):
            caller, callee = edge.unit, edge.source
            if caller is None or callee is None or is_test(caller) or caller.id == callee.id:
                continue
            called.add(callee.id)
            if caller.id in depth:
                continue
            depth[caller.id] = level
            units[caller.id] = caller
            nxt[caller.id] = (callee.id, edge.line)
            new.append(caller.id)
        roots.update(uid for uid in frontier if uid not in called and uid != target.id)
        frontier = new

    def steps(start: int) -> list[int]:
        out = [start]
        while out[-1] in nxt:
            out.append(nxt[out[-1]][0])
        return out

    reached = set(depth) - {target.id}
    candidates = (roots | (hit_ids & reached)) or reached
    if not candidates:
        return None

    def score(uid: int) -> tuple[int, bool, int]:
        return (sum(1 for u in steps(uid) if u in hit_ids), uid in roots, depth[uid])

    start = max(candidates, key=lambda uid: (*score(uid), -uid))
    return score(start), [answer_unit(units[uid], nxt[uid][1] if uid in nxt else 0) for uid in steps(start)]


def build_opening(source: StoreBackend, question: str, context: ComposedContext) -> AnswerOpening:
    """The opening for `question` from the context's hits and the index's call graph; for a
    question about how something is limited, configured or done, the code that applies the
    setting leads (answering/appliers.py)."""
    units = answer_units(context)
    flow = is_flow_question(question)
    path = call_path(source, units, [h.unit for h in context.hits], question) if flow else []
    listed = [answer_unit(u) for u in units]
    owner, applied = appliers(source, question, [h.unit for h in context.hits])
    if applied and owner is not None:
        lead = [*applied, answer_unit(owner)]
        keys = {(u.path, u.start_line, u.end_line) for u in lead}
        listed = (lead + [u for u in listed if (u.path, u.start_line, u.end_line) not in keys])[:MAX_UNITS]
    return AnswerOpening(units=tuple(listed), call_path=tuple(path), flow=flow)


def opening_to_json(opening: AnswerOpening | None) -> str:
    return json.dumps(asdict(opening)) if opening is not None else ""


def opening_from_json(text: str) -> AnswerOpening | None:
    """The stored opening, or None (none stored, or a form this version cannot read)."""
    try:
        data = json.loads(text) if text else None
        if not isinstance(data, dict):
            return None
        return AnswerOpening(
            units=tuple(AnswerUnit(**u) for u in data.get("units", ())),
            call_path=tuple(AnswerUnit(**u) for u in data.get("call_path", ())),
            flow=bool(data.get("flow", False)), model_note=str(data.get("model_note", "")))
    except (ValueError, TypeError):
        return None
