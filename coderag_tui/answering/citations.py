"""Citations in an answer: find them, check them against the context given, number the sources.

Accepted forms: `path:12-30`, `repo:path:12-30` (several repositories), `path:12`, `` `path:12-30` ``, `[path:12-30]`, `path:L12-L30`,
`path#L12-L30` and en/em dashes. A "path" must contain a `/` or a `.` (so `10:30` is not a
citation) unless it is exactly a path given as context (`Makefile:3`).

Verified (`exists(path, start, end)`): the citation is exactly one of the pieces' citations, or
its range lies inside one piece of the same file and both its first and last line are lines
the model was shown (a packed piece leaves lines out behind `⋯` markers; an outline shows only
its members' first lines; metadata shows no code). A range that merely exists in the file is
NOT verified: a small model invents plausible ranges inside invented code. Unverified citations
are told apart: lines the repository has (the model was not shown them all) and lines it does
not have (`absent`: no such file, or past its end). A citation whose
path is only a suffix of exactly one context path (`models.py:3` for `pkg/models.py`) is
resolved to that path.

Sources: every context piece given to the model is a source (so the code is always one key
away, even when the model cites nothing); those the answer cited are flagged `cited=True` and
listed first, in the order they were first cited. Unverified citations are returned apart,
never as sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from coderag_tui.models import ContextPiece, Source

ExistsFn = Callable[[str, int, int], bool]

_CITE = re.compile(
    r"(?<![\w/.@+\-])"
    r"(?P<path>(?:[\w.\-]+:(?!\d+\b))?(?:\.{1,2}/)?[\w@+\-][\w@+.\-]*(?:/[\w@+.\-]+)*)"
    r"(?::L?|#L)(?P<start>\d+)"
    r"(?:\s?[-\u2013\u2014]\s?L?(?P<end>\d+))?"
    r"(?![\w.]*/)"
)


@dataclass(frozen=True)
class Citation:
    text: str  # as written in the answer (without backticks/brackets)
    path: str  # as resolved against the context paths
    start: int
    end: int
    offset: int  # where it starts in the answer

    @property
    def range(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True)
class CheckedSources:
    sources: tuple[Source, ...]
    invalid: tuple[str, ...]  # citations as written, e.g. "src/nope.py:1-9": not verified
    citations: tuple[Citation, ...]  # every valid citation, in order
    absent: tuple[str, ...] = ()  # of `invalid`: lines the repository does not have


def resolve_path(path: str, known: Iterable[str]) -> str:
    """`path` as one of the known paths when it is a unique suffix of one, else cleaned up."""
    clean = path
    while clean.startswith("./"):
        clean = clean[2:]
    clean = clean.lstrip("/")
    known_set = set(known)
    if clean in known_set:
        return clean
    # (":" + clean: a path of one repository among several, `backend:app/main.py`)
    matches = [k for k in known_set if k.endswith("/" + clean) or k.endswith(":" + clean)]
    return matches[0] if len(matches) == 1 else clean


def parse_citations(text: str, known_paths: Iterable[str] = ()) -> list[Citation]:
    """Citations in `text`, in order of appearance (duplicates kept)."""
    known = set(known_paths)
    repos = {k.split(":", 1)[0] for k in known if ":" in k}  # where pieces name their repository
    out: list[Citation] = []
    for m in _CITE.finditer(text):
        raw_path = m.group("path").rstrip(".")
        if not raw_path:
            continue
        if ":" in raw_path and not repos:  # a word before a colon, where no piece names a repository
            raw_path = raw_path.split(":", 1)[1]
        resolved = resolve_path(raw_path, known)
        if "/" not in raw_path and "." not in raw_path and resolved not in known:
            continue
        start = int(m.group("start"))
        end = int(m.group("end")) if m.group("end") else start
        if end < start:
            start, end = end, start
        out.append(Citation(m.group(0), resolved, start, end, m.start()))
    return out


def _contains(piece: ContextPiece, path: str, start: int, end: int) -> bool:
    return piece.path == path and piece.start_line <= start and end <= piece.end_line


# a packed piece's gap marker: `⋯ a-b`, `⋯ a`, `⋯ a-b above` (and the longer form older
# contexts used, `⋯ (lines a-b left out)`)
_GAP = re.compile(r"^\s*\u22ef (?:\((?:lines (?P<a>\d+)-(?P<b>\d+)|line (?P<one>\d+)) (?:shown above|left out)\)"
                  r"|(?P<a2>\d+)-(?P<b2>\d+)(?: above)?|(?P<one2>\d+)(?: above)?)$")
_OUTLINE_LINE = re.compile(r"#\s*line (\d+)\s*$")


def given_lines(piece: ContextPiece) -> set[int]:
    """The line numbers of `piece.path` whose text the model was shown in `piece`."""
    if piece.role == "metadata":
        return set()
    if piece.role == "parent":  # an outline: the member signatures, each tagged "# line N"
        found = {int(m.group(1)) for m in map(_OUTLINE_LINE.search, piece.text.splitlines()) if m}
        return found | {piece.start_line}
    shown: set[int] = set()
    n = piece.start_line
    for text in piece.text.splitlines():
        gap = _GAP.match(text)
        if gap:
            n = int(gap.group("b") or gap.group("one") or gap.group("b2") or gap.group("one2")) + 1
            continue
        shown.add(n)
        n += 1
    if not shown or max(shown) > piece.end_line:
        # text that does not follow the packing layout: trust the piece's range
        return set(range(piece.start_line, piece.end_line + 1))
    return shown


def make_exists(pieces: Sequence[ContextPiece]) -> ExistsFn:
    """The verification rule above, for the pieces the model was given."""
    exact = {(p.path, p.start_line, p.end_line) for p in pieces}
    shown: dict[str, set[int]] = {}
    for p in pieces:
        shown.setdefault(p.path, set()).update(given_lines(p))

    def exists(path: str, start: int, end: int) -> bool:
        if start < 1 or end < start:
            return False
        if (path, start, end) in exact:
            return True
        lines = shown.get(path, set())
        inside = any(p.role != "metadata" and _contains(p, path, start, end) for p in pieces)
        return inside and start in lines and end in lines

    return exists


def check_citations(
    answer: str,
    pieces: Sequence[ContextPiece],
    exists: ExistsFn | None = None,
    in_repository: ExistsFn | None = None,
) -> CheckedSources:
    """The numbered sources of an answer and its unverified citations (see module doc);
    `in_repository(path, start, end)`, when given, sorts out of these the ones whose lines
    the repository does not have at all (`absent`)."""
    exists = exists or make_exists(pieces)
    known = {p.path for p in pieces}
    cited_keys: list[tuple[str, int, int]] = []  # source ranges in order of first citation
    invalid: list[str] = []
    absent: list[str] = []
    valid: list[Citation] = []
    for c in parse_citations(answer, known):
        hit = [p for p in pieces if _contains(p, c.path, c.start, c.end)]
        if not hit or not exists(c.path, c.start, c.end):
            if c.text not in invalid:
                invalid.append(c.text)
                if in_repository is not None and not in_repository(c.path, c.start, c.end):
                    absent.append(c.text)
            continue
        valid.append(c)
        for key in ((p.path, p.start_line, p.end_line) for p in hit):
            if key not in cited_keys:
                cited_keys.append(key)

    titles: dict[tuple[str, int, int], str] = {}
    order: list[tuple[str, int, int]] = []
    for p in pieces:
        key = (p.path, p.start_line, p.end_line)
        if key not in titles:
            titles[key] = p.title
            order.append(key)
    sources: list[Source] = []
    for key in cited_keys:
        sources.append(Source(len(sources) + 1, key[0], key[1], key[2], titles.get(key, ""), True))
    for key in order:
        if key not in cited_keys:
            sources.append(Source(len(sources) + 1, key[0], key[1], key[2], titles[key], False))
    return CheckedSources(tuple(sources), tuple(invalid), tuple(valid), tuple(absent))
