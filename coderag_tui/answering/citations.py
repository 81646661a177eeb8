"""Citations in an answer: find them, check them against the index, number the sources.

Accepted forms: `path:12-30`, `path:12`, `` `path:12-30` ``, `[path:12-30]`, `path:L12-L30`,
`path#L12-L30` and en/em dashes. A "path" must contain a `/` or a `.` (so `10:30` is not a
citation) unless it is exactly a path given as context (`Makefile:3`).

Validity (`exists(path, start, end)`): 1 <= start <= end, and the range overlaps a context
piece of the same file, or lies within the line count of a file in the index. A citation whose
path is only a suffix of exactly one context path (`models.py:3` for `pkg/models.py`) is
resolved to that path.

Sources: every context piece given to the model is a source (so the code is always one key
away, even when the model cites nothing); those the answer cited are flagged `cited=True` and
listed first, in the order they were first cited. A valid citation outside every piece becomes
a source of its own. Invalid citations (invented paths or ranges) are returned apart, never
as sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coderag_tui.models import ContextPiece, Source

ExistsFn = Callable[[str, int, int], bool]

_CITE = re.compile(
    r"(?<![\w/.@+\-])"
    r"(?P<path>(?:\.{1,2}/)?[\w@+\-][\w@+.\-]*(?:/[\w@+.\-]+)*)"
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
    invalid: tuple[str, ...]  # citations as written, e.g. "src/nope.py:1-9"
    citations: tuple[Citation, ...]  # every valid citation, in order


def resolve_path(path: str, known: Iterable[str]) -> str:
    """`path` as one of the known paths when it is a unique suffix of one, else cleaned up."""
    clean = path
    while clean.startswith("./"):
        clean = clean[2:]
    clean = clean.lstrip("/")
    known_set = set(known)
    if clean in known_set:
        return clean
    matches = [k for k in known_set if k.endswith("/" + clean)]
    return matches[0] if len(matches) == 1 else clean


def parse_citations(text: str, known_paths: Iterable[str] = ()) -> list[Citation]:
    """Citations in `text`, in order of appearance (duplicates kept)."""
    known = set(known_paths)
    out: list[Citation] = []
    for m in _CITE.finditer(text):
        raw_path = m.group("path").rstrip(".")
        if not raw_path:
            continue
        resolved = resolve_path(raw_path, known)
        if "/" not in raw_path and "." not in raw_path and resolved not in known:
            continue
        start = int(m.group("start"))
        end = int(m.group("end")) if m.group("end") else start
        if end < start:
            start, end = end, start
        out.append(Citation(m.group(0), resolved, start, end, m.start()))
    return out


def _overlaps(piece: ContextPiece, path: str, start: int, end: int) -> bool:
    return piece.path == path and start <= piece.end_line and end >= piece.start_line


def _no_lines(path: str) -> int | None:
    return None


def make_exists(
    pieces: Sequence[ContextPiece],
    file_lines: Callable[[str], int | None] | Mapping[str, int] | None = None,
) -> ExistsFn:
    """The validity rule above: overlap with a context piece, or within an indexed file."""
    lookup: Callable[[str], int | None]
    if isinstance(file_lines, Mapping):
        lookup = file_lines.get
    elif file_lines is None:
        lookup = _no_lines
    else:
        lookup = file_lines

    def exists(path: str, start: int, end: int) -> bool:
        if start < 1 or end < start:
            return False
        if any(_overlaps(p, path, start, end) for p in pieces):
            return True
        lines = lookup(path)
        return lines is not None and end <= lines

    return exists


def index_file_lines(db: Any) -> Callable[[str], int | None]:
    """Line counts from the index's `files` table (a `coderag_tui.store.Database`)."""

    def lookup(path: str) -> int | None:
        value = db.scalar("SELECT lines FROM files WHERE path=?", (path,))
        return None if value is None else int(value)

    return lookup


def check_citations(
    answer: str,
    pieces: Sequence[ContextPiece],
    exists: ExistsFn | None = None,
) -> CheckedSources:
    """The numbered sources of an answer and its invalid citations (see module doc)."""
    exists = exists or make_exists(pieces)
    known = {p.path for p in pieces}
    cited_keys: list[tuple[str, int, int]] = []  # source ranges in order of first citation
    extra: dict[tuple[str, int, int], Citation] = {}
    invalid: list[str] = []
    valid: list[Citation] = []
    for c in parse_citations(answer, known):
        if not exists(c.path, c.start, c.end):
            if c.text not in invalid:
                invalid.append(c.text)
            continue
        valid.append(c)
        hit = [p for p in pieces if _overlaps(p, c.path, c.start, c.end)]
        keys = [(p.path, p.start_line, p.end_line) for p in hit] or [(c.path, c.start, c.end)]
        if not hit:
            extra.setdefault(keys[0], c)
        for key in keys:
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
    return CheckedSources(tuple(sources), tuple(invalid), tuple(valid))
