"""Context expansion around the top hits, nearest code first, in levels:

1. the unit itself (primary) and its direct callers and callees (neighbours);
2. the parent class/module outline, the unit's tests, similar code (extended);
3. metadata only: imports, constants, "called by 15 functions: a, b, ..." (metadata).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from coderag_tui.config import ContextSettings
from coderag_tui.models import EdgeRef, SearchHit, UnitRef, by_tiny_model
from coderag_tui.retrieval.packing import Candidate
from coderag_tui.retrieval.prose import is_prose_unit
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.retrieval_reads import context_reads

SimilarFn = Callable[[int, int], list[SearchHit]]
NEIGHBOURS = 4  # callers and callees each, per primary
BRIEF_LINES = 25
TEST_LINES = 30
OUTLINE_LINES = 40
FILE_HIT_LINES = 80  # a hit on module-level code shows its chunk, not the whole file
ABOUT_FULL = 400  # characters of a primary's summary (the full format: the summary above the code)
ABOUT_BRIEF = 200  # of a caller's or callee's (the brief format: its first sentence)


class MemoReads:
    """A store's context reads, each edge list read once per composition: the metadata of a
    primary asks again for the callers and callees its neighbours were read from (one query
    each on SQLite, a round trip each to a PostgreSQL server)."""

    def __init__(self, reads: ContextReads) -> None:
        self.reads = reads
        self._edges: dict[tuple[bool, tuple[int, ...], tuple[str, ...]], list[EdgeRef]] = {}

    def _memo(self, inbound: bool, unit_ids: Sequence[int], kinds: Sequence[str]) -> list[EdgeRef]:
        key = (inbound, tuple(unit_ids), tuple(kinds))
        found = self._edges.get(key)
        if found is None:
            found = self._edges[key] = (self.reads.callers if inbound else self.reads.callees)(unit_ids, kinds)
        return list(found)

    def callers(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return self._memo(True, unit_ids, kinds)

    def callees(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return self._memo(False, unit_ids, kinds)

    def get_unit(self, unit_id: int) -> UnitRef | None:
        return self.reads.get_unit(unit_id)

    def file_outline(self, path: str) -> list[UnitRef]:
        return self.reads.file_outline(path)

    def children(self, unit_id: int) -> list[UnitRef]:
        return self.reads.children(unit_id)

    def file_imports(self, path: str) -> list[str]:
        return self.reads.file_imports(path)

    def file_constants(self, path: str, limit: int = 20) -> list[str]:
        return self.reads.file_constants(path, limit)

    def unit_bases(self, unit_id: int) -> list[str]:
        return self.reads.unit_bases(unit_id)

    def summary_texts(self, units: Sequence[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
        return self.reads.summary_texts(units)

    def file_chunk_texts(self, path: str) -> list[tuple[int, str]]:
        return self.reads.file_chunk_texts(path)

    def file_hash(self, path: str) -> str | None:
        return self.reads.file_hash(path)


def head_lines(lines: Sequence[tuple[int, str]]) -> int:
    """How many leading lines make up the signature (decorators and multi-line parameters)."""
    for i, (_, text) in enumerate(lines[:12]):
        s = text.rstrip()
        if s.endswith((":", "{", "=>", ";")) and not s.lstrip().startswith("@"):
            return i + 1
    return 1


def _span(hit: SearchHit) -> tuple[int, int]:
    u = hit.unit
    if u.kind == "file" or is_prose_unit(u.path, u.language):  # a long page or section: its chunk
        if hit.chunk_start:
            return hit.chunk_start, hit.chunk_end
        return u.start_line, min(u.end_line, u.start_line + FILE_HIT_LINES - 1)
    return u.start_line, u.end_line


def _code(reader: CodeReader, tier: str, role: str, unit: UnitRef, rel: float, title: str,
          span: tuple[int, int] | None = None, focus: tuple[int, int] = (0, 0), max_lines: int = 0,
          terms: frozenset[str] = frozenset()) -> Candidate:
    start, end = span or (unit.start_line, unit.end_line)
    lines = reader.lines(unit.path, start, end)
    return Candidate(tier, role, unit.path, start, end, title, rel, unit.language, lines,
                     head=head_lines(lines), focus=focus, max_lines=max_lines, terms=terms)


def _unsure(e: EdgeRef) -> str:
    """A call resolved by name alone says so: the reader weighs it."""
    return f" [{e.how}, confidence {e.confidence:.1f}]" if e.how and e.confidence < 0.9 else ""


def outline(source: StoreBackend | ContextReads, unit: UnitRef) -> str:
    """A class or module outline: its signature and its members' signatures, indented."""
    reads = context_reads(source)
    kids = reads.children(unit.id) if unit.kind != "file" else [
        u for u in reads.file_outline(unit.path) if u.parent_id == unit.id]
    head = unit.signature or f"{unit.kind} {unit.qualname}"
    out = [head] if unit.kind != "file" else []
    indent = "    " if unit.kind != "file" else ""
    for k in kids[:OUTLINE_LINES]:
        out.append(f"{indent}{k.signature or (k.kind + ' ' + k.name)}  # line {k.start_line}")
    if len(kids) > OUTLINE_LINES:
        out.append(f"{indent}... and {len(kids) - OUTLINE_LINES} more")
    return "\n".join(out)


def _names(units: Sequence[UnitRef], limit: int = 12) -> str:
    names = list(dict.fromkeys(u.qualname or u.name for u in units))
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def metadata(reads: ContextReads, unit: UnitRef) -> str:
    lines: list[str] = []
    imports = reads.file_imports(unit.path)
    if imports:
        lines.append(f"- {unit.path} imports: {', '.join(dict.fromkeys(imports))}")
    consts = reads.file_constants(unit.path, 20)
    if consts:
        lines.append(f"- constants in the file: {', '.join(consts)}")
    callers = [e.unit for e in reads.callers([unit.id]) if e.unit is not None]
    if callers:
        lines.append(f"- called by {len({u.id for u in callers})} units: {_names(callers)}")
    callees = reads.callees([unit.id])
    if callees:
        inside = [e.unit for e in callees if e.unit is not None]
        outside = list(dict.fromkeys(e.name for e in callees if e.unit is None))
        if inside:
            lines.append(f"- calls in this repository: {_names(inside)}")
        if outside:
            lines.append(f"- calls elsewhere: {', '.join(outside[:12])}")
    bases = reads.unit_bases(unit.id)
    if bases:
        lines.append(f"- bases: {', '.join(bases)}")
    subs = [e.unit for e in reads.callers([unit.id], kinds=("INHERITS", "IMPLEMENTS")) if e.unit]
    if subs:
        lines.append(f"- subclasses: {_names(subs)}")
    return "\n".join(lines)


def _clip(text: str, limit: int, brief: bool) -> str:
    text = " ".join(text.split())
    if brief:
        end = text.find(". ")
        text = text[: end + 1] if end > 0 else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(reads: ContextReads, described: Sequence[tuple[Candidate, UnitRef]]) -> None:
    """Put the units' summaries above their code, each with the model that wrote it: in full on
    primaries, the first sentence on the others (a file's summary is among the notes at the end
    of the context instead). The tiny default model's are left out: a guess is no context."""
    units = [(u.id, u.path, u.kind, u.qualname) for _, u in described if u.kind != "file"]
    texts = reads.summary_texts(units) if units else {}
    for c, u in described:
        text, model = texts.get(u.id, ("", ""))
        if text and not by_tiny_model(model):
            brief = c.role != "primary"
            c.about = _clip(text, ABOUT_BRIEF if brief else ABOUT_FULL, brief)
            c.about_by = model


def expand(
    source: StoreBackend | ContextReads,
    reader: CodeReader,
    hits: Sequence[SearchHit],
    settings: ContextSettings,
    similar: SimilarFn | None = None,
    terms: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Candidates for the context of the top hits, in priority order within each tier; a
    primary that must shrink keeps the lines holding `terms` (the question's words) first.
    `source`: any store's context reads (or a SQLite index's connection)."""
    reads = source if isinstance(source, MemoReads) else MemoReads(context_reads(source))
    primaries = list(hits[: settings.primary_results])
    primary_ids = {h.unit.id for h in primaries}
    primary_spans = {(h.unit.path, h.unit.start_line, h.unit.end_line) for h in primaries}
    out: list[Candidate] = []
    neighbours: list[Candidate] = []
    extended: list[Candidate] = []
    meta: list[Candidate] = []
    used: set[tuple[str, int]] = set()
    described: list[tuple[Candidate, UnitRef]] = []
    for i, hit in enumerate(primaries):
        u = hit.unit
        rel = 1.0 / (1 + i)
        title = f"{u.kind} {u.qualname or u.name}" + (f" ({', '.join(hit.reasons[:3])})" if hit.reasons else "")
        out.append(_code(reader, "primary", "primary", u, rel, title, _span(hit),
                         (hit.chunk_start, hit.chunk_end), terms=terms))
        described.append((out[-1], u))
        # level 1: callers (focused on the call) and callees
        j = 0
        for e in reads.callers([u.id]):
            c = e.unit
            if c is None or c.id in primary_ids or ("caller", c.id) in used or j >= NEIGHBOURS:
                continue
            used.add(("caller", c.id))
            neighbours.append(_code(reader, "neighbours", "caller", c, rel * 0.5 - 0.01 * j,
                                    f"{c.qualname} calls {u.name} (line {e.line}){_unsure(e)}",
                                    focus=(max(e.line - 2, c.start_line), e.line + 2), max_lines=BRIEF_LINES))
            described.append((neighbours[-1], c))
            j += 1
        j = 0
        for e in reads.callees([u.id]):
            c = e.unit
            if c is None or c.id in primary_ids or ("callee", c.id) in used or j >= NEIGHBOURS:
                continue
            if c.kind == "file":
                continue
            used.add(("callee", c.id))
            neighbours.append(_code(reader, "neighbours", "callee", c, rel * 0.45 - 0.01 * j,
                                    f"{c.qualname} (called by {u.name}){_unsure(e)}", max_lines=BRIEF_LINES))
            described.append((neighbours[-1], c))
            j += 1
        # level 2: parent outline, tests, similar code
        # (a parent that is itself a primary is shown whole: its outline would repeat it)
        if u.parent_id is not None and u.parent_id not in primary_ids and ("parent", u.parent_id) not in used:
            parent = reads.get_unit(u.parent_id)
            if parent is not None and (parent.path, parent.start_line, parent.end_line) not in primary_spans:
                used.add(("parent", parent.id))
                text = outline(reads, parent)
                if text.strip():
                    extended.append(Candidate("extended", "parent", parent.path, parent.start_line,
                                              parent.end_line, f"outline of {parent.qualname}", rel * 0.3,
                                              parent.language, text=text))
        for e in reads.callers([u.id], kinds=("TESTS",))[:2]:
            t = e.unit
            if t is None or ("test", t.id) in used:
                continue
            used.add(("test", t.id))
            extended.append(_code(reader, "extended", "test", t, rel * 0.28, f"{t.qualname} tests {u.name}",
                                  focus=(max(e.line - 2, t.start_line), e.line + 2), max_lines=TEST_LINES))
        if similar is not None:
            for s in similar(u.id, 2):
                if s.unit.id in primary_ids or ("similar", s.unit.id) in used:
                    continue
                used.add(("similar", s.unit.id))
                extended.append(_code(reader, "extended", "similar", s.unit, rel * 0.2,
                                      f"{s.unit.qualname} (similar to {u.name})", _span(s),
                                      max_lines=BRIEF_LINES))
        # level 3: metadata only
        text = metadata(reads, u)
        if text:
            meta.append(Candidate("metadata", "metadata", u.path, u.start_line, u.end_line,
                                  f"about {u.qualname or u.name}", rel * 0.1, text=text))
    describe(reads, described)
    return out + neighbours + extended + meta
