"""What coderag checked in a model's text, kept with the answer: the model that wrote it, the
citations it could not verify (and of those, the ones the repository does not have) and the
code names the index does not have. Stored as JSON in the `invalid` column of a conversation's message and of an
answer-cache entry: a plain list (the unverified citations) when nothing else was found, as
before, else an object; both read back.

Also the sources an answer lists beyond the code the model was given: every unit of the
opening (its matches and its call path), so each can be opened (`1`-`9`) like the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from coderag_tui.models import AnswerOpening, Source

OPENING_TITLE = "from the opening (not given to the model)"


@dataclass(frozen=True)
class Checks:
    invalid: tuple[str, ...] = ()  # citations not among the lines the model was shown
    absent: tuple[str, ...] = ()  # of those, lines the repository does not have
    unknown_names: tuple[str, ...] = ()  # code names and paths the index does not have
    model: str = ""  # the model that wrote the text


def checks_to_json(checks: Checks) -> str:
    if not checks.absent and not checks.unknown_names and not checks.model:
        return json.dumps(list(checks.invalid))
    return json.dumps({"invalid": list(checks.invalid), "absent": list(checks.absent),
                       "unknown_names": list(checks.unknown_names), "model": checks.model})


def _strings(items: object) -> tuple[str, ...]:
    return tuple(str(i) for i in items) if isinstance(items, list) else ()


def checks_from_json(text: str) -> Checks:
    try:
        data = json.loads(text or "[]")
    except ValueError:
        return Checks()
    if isinstance(data, dict):
        return Checks(_strings(data.get("invalid")), _strings(data.get("absent")),
                      _strings(data.get("unknown_names")), str(data.get("model") or ""))
    return Checks(_strings(data))


def with_opening_sources(sources: tuple[Source, ...], opening: AnswerOpening | None) -> tuple[Source, ...]:
    """`sources`, then each unit of the opening that no source covers, numbered on."""
    if opening is None:
        return sources
    out = list(sources)
    for unit in (*opening.units, *opening.call_path):
        covered = any(s.path == unit.path and s.start_line <= unit.start_line and unit.end_line <= s.end_line
                      for s in out)
        if not covered:
            out.append(Source(len(out) + 1, unit.path, unit.start_line, unit.end_line,
                              f"{unit.qualname} ({OPENING_TITLE})", False))
    return tuple(out)


ABSENT_LABEL = "not in the repository (no such lines)"
UNSEEN_LABEL = "not verified (the lines exist, but the model was not shown them all)"
UNKNOWN_LABEL = "not in the index (the model may have invented them)"


def check_lines(invalid: tuple[str, ...], absent: tuple[str, ...], unknown_names: tuple[str, ...]) -> list[
        tuple[str, str]]:
    """(label, the items, comma-separated) for each kind of finding there is: the same words in
    every interface."""
    unseen = tuple(c for c in invalid if c not in absent)
    return [(label, ", ".join(items)) for label, items in
            ((ABSENT_LABEL, absent), (UNSEEN_LABEL, unseen), (UNKNOWN_LABEL, unknown_names)) if items]
