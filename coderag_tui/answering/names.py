"""Check the code names and paths a model wrote against the index: what it does not know is
listed apart, so that no invented name is shown as if it were the repository's.

What counts as a code name: anything in backticks (each identifier, `a.b` chain, path or import
statement in it), and in the prose the words that only code looks like: `snake_case`,
`CamelCase` with an inner capital, `name(`, `a.b` chains, `from x import y` (`import x` only in
code), and paths (`a/b.py`, `app.py`). Inside a fenced code block the same, except the names the block itself defines (the
model's own example code claims nothing about the repository). Citations (`path:12-30`) are
checked by `citations.py`.

A name is known when the index has it (deterministic lookups only, `NameReads`):

- an identifier: a definition of that name, the word written in some indexed chunk, or the
  name of an indexed file without its extension (a module: `test_legacypath`);
- `A.B`: written so somewhere; else a class named A with a member B (a method or nested unit,
  `self.B =` in its body, or a member of a base class in the index); else a package A
  (`A/__init__.py`) or a module path A (`a.b`: a/b.py or a/b/__init__.py) that defines or imports B at its top level, or has a submodule B;
  when A is neither a class nor a package or dotted module path of the repository (a variable:
  `app.route`, even beside a module app.py), A's first word and B known as identifiers;
- `from M import N`: M a module of the repository that defines N (as above), or a module the
  repository imports and N imported from it or written in its code (`from typing import Any`
  beside `t.Any`; `from unittest import TestCase` when the tests write it, beside a file
  _pytest/unittest.py); `import M`: a module of the repository, or one it imports; either also when
  the statement is written so in the code (`from __future__ import annotations`, which the
  index records as no import);
- a path: an indexed file or folder, or the end of one.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable
from typing import Protocol

from coderag_tui.answering.citations import _CITE
from coderag_tui.models import UnitRef

MAX_NAMES = 60  # names checked per text
CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "impl", "type", "object", "module"})
SKIP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self", "cls", "args", "kwargs", "true", "false",
                                                                "null", "nil", "this", "void", "var", "let"}

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_SPAN = re.compile(r"`([^`\n]{1,200})`")
_STRING = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
_IMPORT = re.compile(r"\bfrom\s+(?P<module>\.*[A-Za-z_][\w.]*)\s+import\s+\(?\s*"
                     r"(?P<names>[A-Za-z_]\w*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_]\w*(?:\s+as\s+\w+)?)*)"
                     r"|(?<![\w.])import\s+(?P<plain>[A-Za-z_][\w.]*)")
_EXTENSIONS = ("py|pyi|pyx|js|jsx|mjs|ts|tsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sh|md|rst|"
               "toml|yaml|yml|json|cfg|ini|txt|html|css|sql|proto")
_PATH = re.compile(rf"(?<![\w/.@-])(?:[\w.@-]+/)+[\w.@-]*\w(?![\w/])|(?<![\w/.@-])[\w-]+\.(?:{_EXTENSIONS})(?![\w/])")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w])")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?![\w.])")
_CODE_WORD = re.compile(r"(?<![\w.])(?:\w*[a-z0-9]_\w*|_\w+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+[A-Z]\w*)(?![\w.])"
                        r"|(?<![\w.])[A-Za-z_]\w*(?=\()")
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|func|fn|struct|interface|type)\s+([A-Za-z_]\w*)"
                      r"|^\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", re.M)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "a.k.a"})


class NameReads(Protocol):
    """The index lookups the check makes (`store/known.py` answers them over any store)."""

    def units_named(self, name: str) -> list[UnitRef]: ...

    def children(self, unit_id: int) -> list[UnitRef]: ...

    def unit_bases(self, unit_id: int) -> list[str]: ...

    def unit_text(self, unit: UnitRef) -> str: ...

    def files_ending(self, suffix: str) -> list[str]: ...

    def file_stem_exists(self, stem: str) -> bool: ...

    def folder_exists(self, folder: str) -> bool: ...

    def imported_modules(self, modules: Iterable[str]) -> set[str]: ...

    def imported_names(self, module: str) -> set[str]: ...

    def in_code(self, texts: Iterable[str]) -> set[str]: ...

    def file_text(self, path: str) -> str: ...


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def candidates(text: str) -> list[tuple[str, str]]:
    """(kind, name as written) of the code names in a model's text, in order, without
    duplicates; kind: ident, dotted, import, path."""
    out: dict[tuple[str, str], None] = {}

    def add(kind: str, name: str) -> None:
        name = name.strip().rstrip(".,:;")
        if name and len(out) < MAX_NAMES:
            out.setdefault((kind, name), None)

    def code(part: str, every_word: bool, defined: frozenset[str] = frozenset(), prose: bool = False) -> None:
        part = _blank(part, _STRING)
        for m in _IMPORT.finditer(part):
            if prose and m.group("plain"):
                continue  # "you can import and use it": only `from x import y` is code in prose
            add("import", " ".join(m.group(0).split()))
        part = _blank(part, _IMPORT)
        for m in _PATH.finditer(part):
            found = m.group(0)
            if "/" in found and not re.search(r"[A-Za-z]", found):
                continue
            if "/" in found and not every_word and not re.search(r"\.\w+$", found):
                continue  # prose: "SSL/TLS", "and/or"; a path in prose names its file
            if "/" in found or every_word or not _DOTTED.fullmatch(found):
                add("path", found)
        part = _blank(part, _PATH)
        for m in _DOTTED.finditer(part):
            name = m.group(0)
            if name.lower() in _ABBREVIATIONS or name.split(".")[0] in defined:
                continue
            add("dotted", name)
        part = _blank(part, _DOTTED)
        for m in (_IDENT if every_word else _CODE_WORD).finditer(part):
            name = m.group(0)
            if name not in SKIP and name not in defined and not name.isdigit() and len(name) > 1:
                add("ident", name)

    text = _blank(text, _CITE)
    for block in _FENCE.finditer(text):
        body = block.group(1)
        defined = frozenset(n for m in _DEFINED.finditer(body) for n in m.groups() if n)
        code(body, False, defined)
    text = _blank(text, _FENCE)
    for span in _SPAN.finditer(text):
        code(span.group(1), True)
    code(_blank(text, _SPAN), False, prose=True)
    return list(out)


def unknown_names(text: str, reads: NameReads) -> tuple[str, ...]:
    """The code names and paths in `text` that the index does not know, as written, in order."""
    found = candidates(text)
    if not found:
        return ()
    check = _Check(reads, found)
    return tuple(name for kind, name in found if not check.known(kind, name))


def _import_names(statement: str) -> list[str]:
    """The names `from M import a, b as c` imports (a, b); none for `import M`."""
    m = _IMPORT.match(statement)
    if m is None or not m.group("names"):
        return []
    return [n.split()[0] for n in m.group("names").split(",") if n.strip()]


class _Check:
    def __init__(self, reads: NameReads, found: list[tuple[str, str]]) -> None:
        self.reads = reads
        words = {n for k, n in found if k in ("ident", "dotted")}
        words |= {p for k, n in found if k in ("dotted", "path") for p in (n.split(".")[0], n.split(".")[-1])}
        # an import statement as written (`from __future__ import ...` is no import the index
        # records), and the names it imports (`Any`, written as `t.Any`)
        words |= {n for k, n in found if k == "import"} | {w for k, n in found if k == "import"
                                                          for w in _import_names(n)}
        self.written = reads.in_code(words)
        self._units: dict[str, list[UnitRef]] = {}

    def units(self, name: str) -> list[UnitRef]:
        if name not in self._units:
            self._units[name] = self.reads.units_named(name)
        return self._units[name]

    def known(self, kind: str, name: str) -> bool:
        if kind == "path":  # `flask.json` is a module as much as a file name
            return self.path(name) or ("/" not in name and bool(_DOTTED.fullmatch(name))
                                       and self.dotted(name.split(".")))
        if kind == "import":
            return self.import_(name)
        if kind == "dotted":
            return self.dotted(name.split("."))
        return self.ident(name)

    def ident(self, name: str) -> bool:
        return name in self.written or bool(self.units(name)) or self.reads.file_stem_exists(name)

    def path(self, path: str) -> bool:
        clean = path.strip().lstrip("./").rstrip("/")
        return bool(clean) and (bool(self.reads.files_ending(clean)) or self.reads.folder_exists(clean)
                                or self.reads.file_stem_exists(clean))  # a module's path: requests/sessions

    def modules(self, dotted: str) -> list[str]:
        """The files of a module of the repository (`a.b` -> a/b.py, a/b/__init__.py)."""
        base = dotted.strip(".").replace(".", "/")
        if not base:
            return []
        return self.reads.files_ending(base + ".py") + self.reads.files_ending(base + "/__init__.py")

    def top_level(self, files: list[str], module: str, name: str) -> bool:
        """`name` is defined or imported at the top of one of a module's files, or is a submodule."""
        if self.modules(f"{module}.{name}"):
            return True
        pattern = re.compile(rf"^(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
                             rf"|^(?:from\s+\S+\s+)?import\s[^\n]*\b{re.escape(name)}\b"
                             rf"|^\s+{re.escape(name)},?\s*$", re.M)  # (a name in a parenthesised import)
        for path in files:
            text = self.reads.file_text(path)
            if pattern.search(text):
                return True
            if re.search(r"__all__\s*=\s*[\[(][^\])]*['\"]" + re.escape(name) + "['\"]", text):
                return True
        return False

    def member(self, owner: UnitRef, name: str, depth: int = 0) -> bool | None:
        """Whether a class has `name` (itself or a base in the index); None when a base lies
        outside the index (it might come from there)."""
        if any(c.name == name for c in self.reads.children(owner.id)):
            return True
        body = self.reads.unit_text(owner)
        if re.search(rf"\b(?:self|cls|this)\s*\.\s*{re.escape(name)}\b|^\s+{re.escape(name)}\s*[:=]", body, re.M):
            return True
        outside = False
        for base in self.reads.unit_bases(owner.id):
            short = base.split("[")[0].split(".")[-1].strip()
            classes = [u for u in self.units(short) if u.kind in CLASS_KINDS] if short else []
            if not classes:
                outside = outside or short not in ("object", "")
                continue
            if depth < 4:
                for cls in classes:
                    got = self.member(cls, name, depth + 1)
                    if got:
                        return True
                    outside = outside or got is None
        return None if outside else False

    def dotted(self, parts: list[str]) -> bool:
        full = ".".join(parts)
        if full in self.written:
            return True
        head, last = parts[:-1], parts[-1]
        classes = [u for u in self.units(head[-1]) if u.kind in CLASS_KINDS]
        if classes:
            answers = [self.member(c, last) for c in classes]
            if any(answers):
                return True
            if all(a is False for a in answers):
                return False
            return self.ident(last)  # a base outside the index may have it
        files = self.modules(".".join(head))
        # `app.route`: `app` is as often a variable as the module app.py; a package (`flask.x`)
        # or a dotted module path (`flask.app.x`) is read as a module
        if files and (len(head) > 1 or any(f.endswith("/__init__.py") for f in files)):
            return self.top_level(files, ".".join(head), last)
        return self.ident(head[0]) and self.ident(last)  # a variable: both words are the code's

    def import_(self, statement: str) -> bool:
        m = _IMPORT.match(statement)
        if m is None:
            return True
        if m.group("plain"):
            module = m.group("plain")
            return (bool(self.modules(module)) or bool(self.reads.imported_modules([module]))
                    or statement in self.written)
        module = m.group("module")
        names = _import_names(statement)
        files = self.modules(module)
        if files and all(self.top_level(files, module.strip("."), n) for n in names):
            return True
        if not self.reads.imported_modules([module.lstrip(".")]):
            return statement in self.written
        imported = self.reads.imported_names(module)
        if files:  # a file of the same name elsewhere (`unittest` beside _pytest/unittest.py): what is imported
            return all(n in imported for n in names) or statement in self.written
        return all(n in imported or self.ident(n) for n in names)
