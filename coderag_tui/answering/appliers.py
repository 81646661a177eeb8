"""For a question about how something is limited, configured or done: the code that applies a
setting, not only the class that holds it.

"How is the connection pool limited?" finds `Limits` (a class among the question's hits whose
name is a word of the question, the setting's own word first); its fields (`self.max_connections = ...`, class-level
`name: type = ...`) are looked up where other code reads them (`limits.max_connections`), and
the units that read the most of them lead the opening, each with the first line that does (of
the three best candidates, the first whose fields other code reads).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from coderag_tui.models import AnswerUnit, UnitRef
from coderag_tui.store import known, read
from coderag_tui.store.backend import StoreBackend

MAX_APPLIERS = 2
MAX_HOLDERS = 3  # candidate holders tried, best first
MAX_HOLDER_RANK = 20  # of the question's hits, those a holder is looked for in
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_test\.\w+$")
_SETTING = re.compile(
    r"\bhow\s+(?:is|are|was|were|does|do|did|can|could|should|would|will)\s+"
    r"(?:[\w.`'()/-]+\s+){0,8}?"
    r"(?:limit|configur|set|control|cap|bound|restrict|enforc|appl(?:y|ie)|tun|customi[sz]|throttl|determin"
    r"|decid|chos|select|enabl|disabl|overrid|specif|adjust|done|implement|achiev|capp|measur|constrain)\w*\b",
    re.I | re.S,
)
_FIELD = re.compile(r"\b(?:self|cls)\.([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)|^    ([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)",
                    re.M)
_EXCEPTION = re.compile(r"(Error|Exception|Warning|Exit)$")
_WORD = re.compile(r"[a-z]+")
_STOP = {"how", "does", "what", "when", "with", "from", "into", "that", "this", "there", "their", "they",
         "which", "where", "have", "been", "being", "used", "uses", "using"}


def is_setting_question(question: str) -> bool:
    return bool(_SETTING.search(" ".join(question.split())))


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _STOP}


def _name_words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)]


def _matches(word: str, wanted: set[str]) -> bool:
    """A word of a name is one of the question's, endings aside (`limits` ~ `limited`,
    `timeout` ~ `timeouts`): they share their first five letters, or all of the shorter one."""
    return len(word) >= 4 and any(len(os.path.commonprefix([word, w])) >= min(5, len(word), len(w))
                                  for w in wanted)


def holders(db: StoreBackend, question: str, hits: Sequence[UnitRef]) -> list[UnitRef]:
    """The classes among the hits that may hold what the question asks about, best first: most
    of a name's words are the question's, a name with the setting's own word first (`Limits`
    for "limited"); never an exception class."""
    wanted = _words(question)
    verb = _SETTING.search(" ".join(question.split()))
    setting = {_WORD.findall(verb.group(0).lower())[-1]} if verb else set()
    scored: list[tuple[bool, float, int, UnitRef]] = []
    # the setting's own word names a class the search may have missed ("limited" -> `Limits`)
    named = [u for w in setting for u in known.classes_starting(db, w[:5])] if setting else []
    seen: set[int] = set()
    for rank, unit in enumerate([*hits[:MAX_HOLDER_RANK], *named]):
        if unit.id in seen:
            continue
        seen.add(unit.id)
        if unit.kind not in ("class", "struct") or _TEST_PATH.search(unit.path) or _EXCEPTION.search(unit.name):
            continue
        words = _name_words(unit.name)
        share = sum(1 for w in words if _matches(w, wanted)) / max(len(words), 1)
        bases = " ".join(known.StoreNames(db).unit_bases(unit.id))
        if share < 0.5 or re.search(r"(Error|Exception|Warning)\b", bases):
            continue
        scored.append((any(_matches(w, setting) for w in words), share, -rank, unit))
    return [unit for *_, unit in sorted(scored, key=lambda s: s[:3], reverse=True)]


def fields(db: StoreBackend, unit: UnitRef) -> list[str]:
    """The attributes a class sets (`self.x = ...` in its methods, `x: int = 0` in its body)."""
    text = known.unit_text(db, unit)
    found = [a or b for a, b in _FIELD.findall(text)]
    return [f for f in dict.fromkeys(found) if f and not f.startswith("__")]


def appliers(db: StoreBackend, question: str, hits: Sequence[UnitRef]) -> tuple[UnitRef | None, list[AnswerUnit]]:
    """The holder of the setting and the units that read most of its fields (see the module doc),
    these as opening lines; (None, []) when the question is not about a setting or none is found."""
    if not is_setting_question(question):
        return None, []
    for owner in holders(db, question, hits)[:MAX_HOLDERS]:
        applied = _readers(db, owner)
        if applied:
            return owner, applied
    return None, []


def _readers(db: StoreBackend, owner: UnitRef) -> list[AnswerUnit]:
    names = fields(db, owner)
    if not names:
        return []
    need = 2 if len(names) > 1 else 1
    used: dict[int, set[str]] = {}
    first: dict[int, int] = {}
    units: dict[int, UnitRef] = {}
    for path, line, name in known.attribute_reads(db, names):
        inner = [u for u in read.units_at(db, path, line) if u.kind != "file"]
        if not inner:
            continue
        unit = min(inner, key=lambda u: u.end_line - u.start_line)
        units[unit.id] = unit
        used.setdefault(unit.id, set()).add(name)
        first[unit.id] = min(first.get(unit.id, line), line)
    ranked = sorted((uid for uid in used if len(used[uid]) >= need), key=lambda uid: (-len(used[uid]), first[uid]))
    out: list[AnswerUnit] = []
    for uid in ranked:
        unit, line = units[uid], first[uid]
        if (unit.kind == "class" or _TEST_PATH.search(unit.path)
                or (unit.path == owner.path and owner.start_line <= unit.start_line <= owner.end_line)):
            continue
        read_fields = ", ".join(f".{n}" for n in names if n in used[uid])
        out.append(AnswerUnit(unit.kind, unit.qualname or unit.name, unit.path, unit.start_line, unit.end_line,
                              f"reads {read_fields} (fields of {owner.name}) from line {line}"))
        if len(out) >= MAX_APPLIERS:
            break
    return out
