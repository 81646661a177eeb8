"""Bug reports and tracebacks: what in a pasted report points at code, and what is template.

Frames (`File "pkg/x.py", line 12, in f`, `at pkg.Cls.m(X.java:12)`, `x.go:12`), paths and error
types are strong signals: the reporter's stack names the code that breaks. An issue template's
headings ("Describe the bug", "To Reproduce", "Expected behavior", "Environment") are not: they
match the repository's own templates and docs, not its code, so they leave the search text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coderag_tui.models import UnitRef
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend

_BOILERPLATE = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:describe\s+the\s+bug|bug\s+description|description|to\s+reproduce|"
    r"steps\s+to\s+reproduce(?:\s+the\s+(?:problem|issue|behaviou?r))?|reproduction|minimal\s+(?:reproducible\s+)?example|"
    r"code\s+for\s+reproduction|expected\s+(?:behaviou?r|results?|outcome)|actual\s+(?:behaviou?r|results?|outcome)|"
    r"current\s+behaviou?r|environment(?:\s+info(?:rmation)?)?|your\s+environment|system\s+info(?:rmation)?|"
    r"versions?|additional\s+(?:context|information|notes)|screenshots?|desktop|smartphone|"
    r"(?:operating\s+system|os|python\s+version|platform)(?:\s+version)?|"
    r"is\s+your\s+feature\s+request\s+related\s+to\s+a\s+problem\??|describe\s+the\s+solution\s+you'?d\s+like|"
    r"describe\s+alternatives\s+you'?ve\s+considered|checklist|summary|problem|solution)"
    r"\s*(?:\*\*)?\s*:?\s*(?:\*\*)?\s*$",
    re.I,
)
_CHECKBOX = re.compile(r"^\s*[-*]\s*\[[ xX]\]\s*(?:i\s+(?:have|am)|searched|read|this\s+is|the\s+bug)\b.*$", re.I)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_AT_FRAME = re.compile(r"\bat\s+((?:[\w$]+\.)+[\w$<>]+)\(([\w.-]+):(\d+)\)")  # Java/Kotlin/C#
_PATH_LINE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|go|rs|ts|tsx|js|jsx|rb|java|kt|c|cc|cpp|h|hpp|cs|php|swift|scala)):(\d+)")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:py|go|rs|ts|tsx|js|jsx|rb|java|kt|c|cc|cpp|h|hpp|cs|php|swift|scala))\b")
# a dotted module path (`astropy.io.ascii.rst`, `format="ascii.rst"`, `requests.adapters.HTTPAdapter`):
# its leading parts, joined by `/`, may name a file of the repository
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])")
_ERROR = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Panic))\b")
# the standard library and generated code are not the repository (an installed copy of the
# project itself, under site-packages, is: its frames resolve by their path's tail)
MAX_MODULES = 20
_SKIP_FILES = re.compile(r"(?:^|/)lib/python[\d.]+/(?!site-packages|dist-packages)|<[^>]*>|(?:^|/)node_modules/")


@dataclass(frozen=True)
class Frame:
    path: str  # as written (absolute, relative or a bare file name)
    line: int
    function: str = ""


@dataclass(frozen=True)
class ReportSignals:
    text: str  # the query without template boilerplate
    frames: tuple[Frame, ...]  # innermost last, as Python prints them
    paths: tuple[str, ...]  # source paths mentioned (frames' included)
    errors: tuple[str, ...]  # error types named
    modules: tuple[str, ...] = ()  # dotted names that may be module paths (`ascii.rst`), as written


def strip_boilerplate(text: str) -> str:
    """The report without HTML comments, template headings and checklist lines."""
    text = _COMMENT.sub(" ", text)
    kept = [ln for ln in text.splitlines() if not _BOILERPLATE.match(ln) and not _CHECKBOX.match(ln)]
    return "\n".join(kept)


def signals(query: str) -> ReportSignals:
    """What a question or pasted report says about where the code is."""
    text = strip_boilerplate(query) if "\n" in query else query
    frames: list[Frame] = []
    for m in _PY_FRAME.finditer(text):
        if not _SKIP_FILES.search(m.group(1)):
            frames.append(Frame(m.group(1), int(m.group(2)), m.group(3) or ""))
    for m in _AT_FRAME.finditer(text):
        qual = m.group(1)
        frames.append(Frame(m.group(2), int(m.group(3)), qual.rsplit(".", 1)[-1]))
    paths: dict[str, None] = {}
    for f in frames:
        paths.setdefault(f.path, None)
    for rx in (_PATH_LINE, _PATH):
        for m in rx.finditer(text):
            if not _SKIP_FILES.search(m.group(1)):
                paths.setdefault(m.group(1), None)
    errors = tuple(dict.fromkeys(m.group(1) for m in _ERROR.finditer(text)))
    modules = tuple(dict.fromkeys(m.group(1) for m in _DOTTED.finditer(text)))[:MAX_MODULES]
    return ReportSignals(text, tuple(frames), tuple(paths), errors, modules)


def module_paths(dotted: str) -> list[str]:
    """File-path tails a dotted name may stand for, longest first: `a.b.c` -> `a/b/c.py`,
    `a/b/c/__init__.py`, `a/b.py` (`c` may be a name inside `a/b`); never a single part."""
    parts = dotted.split(".")
    out: list[str] = []
    for n in range(len(parts), 1, -1):
        stem = "/".join(parts[:n])
        out.extend((stem + ".py", stem + "/__init__.py"))
    return out


def path_suffixes(path: str) -> list[str]:
    """Repository-relative candidates for a path from a traceback, longest first:
    `/home/u/proj/src/pkg/x.py` -> `home/u/proj/src/pkg/x.py`, ..., `pkg/x.py`, `x.py`."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def frame_units(db: StoreBackend, sig: ReportSignals, limit: int = 40) -> list[UnitRef]:
    """Units a report points at, strongest first: the functions of its frames (innermost frame
    first; found by name in the frame's file, else by line), then the files it names."""
    out: dict[int, UnitRef] = {}
    resolved: dict[str, str | None] = {}

    def resolve(path: str) -> str | None:
        if path not in resolved:
            resolved[path] = None
            for suffix in path_suffixes(path):
                found = read.paths_ending(db, suffix, limit=3)
                if len(found) == 1 or (found and suffix.count("/") >= 1):
                    resolved[path] = found[0]
                    break
                if len(found) > 1:  # a bare `utils.py` that many folders have says little
                    break
        return resolved[path]

    for f in reversed(sig.frames):
        path = resolve(f.path)
        if path is None:
            continue
        units = [u for u in read.file_outline(db, path) if u.kind != "file"]
        named = [u for u in units if f.function and u.name == f.function]
        if not named:
            named = [u for u in read.units_at(db, path, f.line) if u.kind != "file"][:1]
        for u in named[:2]:
            out.setdefault(u.id, u)
    for p in sig.paths:
        path = resolve(p)
        fu = read.file_unit(db, path) if path else None
        if fu is not None:
            out.setdefault(fu.id, fu)
    for dotted in sig.modules:
        for tail in module_paths(dotted):
            found = read.paths_ending(db, tail, limit=2)
            if len(found) == 1:  # one file only: `utils.py`-like tails that many folders have say little
                fu = read.file_unit(db, found[0])
                if fu is not None:
                    out.setdefault(fu.id, fu)
                break
            if found:
                break
    return list(out.values())[:limit]
