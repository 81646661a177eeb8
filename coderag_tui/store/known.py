"""What the index knows by name: the lookups that check the code names and paths in a model's
text (`answering/names.py`). Each answers a set of names at once and reads only what it needs:
exact unit names (an index), keyword rows (the backend's `word_chunks`) whose chunk text is then
matched exactly. Written once over `StoreBackend`: SQLite and PostgreSQL answer alike."""

from __future__ import annotations

import re
from collections.abc import Iterable

from coderag_tui.models import UnitRef
from coderag_tui.store import read, retrieval_reads
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.read import UNIT_SELECT, unit_from_row
from coderag_tui.store.sql import like_escape

PAGE = 400  # keyword rows read at a time to confirm a word
MAX_ROWS = 4000  # a word in more rows than this is common: known


def units_named(db: StoreBackend, name: str, limit: int = 50) -> list[UnitRef]:
    """Units (not files) whose name is exactly `name`."""
    return [unit_from_row(r) for r in db.rows(
        UNIT_SELECT + " WHERE u.name = ? AND u.kind <> 'file' ORDER BY u.id LIMIT ?", (name, limit))]


def files_ending(db: StoreBackend, suffix: str, limit: int = 20) -> list[str]:
    """Indexed paths equal to `suffix` or ending with `/suffix`."""
    like = like_escape(suffix)
    return [str(r[0]) for r in db.rows(
        f"SELECT path FROM files WHERE path = ? OR path {db.like} ? ESCAPE '\\' ORDER BY length(path) LIMIT ?",
        (suffix, "%/" + like, limit))]


def file_stem_exists(db: StoreBackend, stem: str) -> bool:
    """Some indexed file is named `stem` plus an extension (`app` for src/app.py)."""
    like = like_escape(stem)
    return db.one(f"SELECT 1 FROM files WHERE path {db.like} ? ESCAPE '\\' OR path {db.like} ? ESCAPE '\\' LIMIT 1",
                  (like + ".%", "%/" + like + ".%")) is not None


def folder_exists(db: StoreBackend, folder: str) -> bool:
    """Some indexed file lies under `folder` (a path, or the end of one)."""
    like = like_escape(folder.strip("/"))
    return db.one(f"SELECT 1 FROM files WHERE path {db.like} ? ESCAPE '\\' OR path {db.like} ? ESCAPE '\\' LIMIT 1",
                  (like + "/%", "%/" + like + "/%")) is not None


def imported_modules(db: StoreBackend, modules: Iterable[str]) -> set[str]:
    """Of `modules`, those some indexed file imports (by that name, or a submodule of it)."""
    found: set[str] = set()
    for module in set(modules):
        if db.one(f"SELECT 1 FROM imports WHERE module = ? OR module {db.like} ? ESCAPE '\\' LIMIT 1",
                  (module, like_escape(module) + ".%")) is not None:
            found.add(module)
    return found


def imported_names(db: StoreBackend, module: str) -> set[str]:
    """The names indexed files import from `module` (`from module import a, b`)."""
    import json

    out: set[str] = set()
    for (names,) in db.rows("SELECT names FROM imports WHERE module = ?", (module,)):
        try:
            out.update(str(n) for n in json.loads(names or "[]"))
        except ValueError:
            continue
    return out


def _words(text: str) -> list[str]:
    """`text`'s words as the keyword columns hold them (identifiers split at `_` and `.`)."""
    return re.findall(r"[^\W_]+", text.lower())


def _unescaped(text: str) -> str:
    """Markdown's escaped underscores as written (`dispatch\\_hook` is dispatch_hook, which
    holds no `_hook`)."""
    return text.replace("\\_", "_")


def in_code(db: StoreBackend, texts: Iterable[str]) -> set[str]:
    """Of `texts` (identifiers, `a.b` attribute chains), those written in some indexed chunk
    exactly, as a whole word (`dispatch_request` is not in `full_dispatch_request`)."""
    found: set[str] = set()
    for text in set(texts):
        words = _words(text)
        if not words:
            continue
        parts = [re.escape(p) for p in text.split(".")]
        pattern = re.compile(r"(?<![\w])" + r"\s*\.\s*".join(parts) + r"(?![\w])")
        for offset in range(0, MAX_ROWS + PAGE, PAGE):
            rows = db.word_chunks(words, PAGE, offset)
            if offset >= MAX_ROWS or any(pattern.search(_unescaped(r[2])) for r in rows):
                found.add(text)
                break
            if len(rows) < PAGE:
                break
    return found


def file_texts(db: StoreBackend, path: str) -> str:
    """A file's indexed text (its chunks, in line order)."""
    return "\n".join(str(t) for (t,) in db.rows(
        "SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.start_line",
        (path,)))


def unit_text(db: StoreBackend, unit: UnitRef) -> str:
    """A unit's lines as indexed (from the chunks of its file that overlap them)."""
    lines: dict[int, str] = {}
    for start, text in db.rows(
            "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "AND c.start_line <= ? AND c.end_line >= ? ORDER BY c.start_line", (unit.path, unit.end_line, unit.start_line)):
        for n, line in enumerate(str(text).split("\n"), int(start)):
            lines.setdefault(n, line)
    return "\n".join(lines[n] for n in range(unit.start_line, unit.end_line + 1) if n in lines)


class StoreNames:
    """The lookups of `answering/names.py` over one index, in any store."""

    def __init__(self, db: StoreBackend) -> None:
        self.db = db

    def units_named(self, name: str) -> list[UnitRef]:
        return units_named(self.db, name)

    def children(self, unit_id: int) -> list[UnitRef]:
        return read.children(self.db, unit_id)

    def unit_bases(self, unit_id: int) -> list[str]:
        return retrieval_reads.StoreReads(self.db).unit_bases(unit_id)

    def unit_text(self, unit: UnitRef) -> str:
        return unit_text(self.db, unit)

    def files_ending(self, suffix: str) -> list[str]:
        return files_ending(self.db, suffix)

    def folder_exists(self, folder: str) -> bool:
        return folder_exists(self.db, folder)

    def file_stem_exists(self, stem: str) -> bool:
        return file_stem_exists(self.db, stem)

    def imported_modules(self, modules: Iterable[str]) -> set[str]:
        return imported_modules(self.db, modules)

    def imported_names(self, module: str) -> set[str]:
        return imported_names(self.db, module)

    def in_code(self, texts: Iterable[str]) -> set[str]:
        return in_code(self.db, texts)

    def file_text(self, path: str) -> str:
        return file_texts(self.db, path)


def lines_exist(db: StoreBackend, path: str, start: int, end: int) -> bool:
    """The repository has lines `start`-`end` of `path` (a path as indexed, or the end of
    exactly one indexed path)."""
    facts = read.file_facts(db, path)
    if facts is None:
        ends = files_ending(db, path.lstrip("./"), 2)
        facts = read.file_facts(db, ends[0]) if len(ends) == 1 else None
    return facts is not None and 1 <= start <= end <= max(facts[1], 1)


def attribute_reads(db: StoreBackend, attributes: Iterable[str]) -> list[tuple[str, int, str]]:
    """(path, line, attribute) wherever indexed code reads one of `attributes` as `x.attribute`."""
    out: set[tuple[str, int, str]] = set()
    for n in sorted({a for a in attributes if a}):
        words = _words(n)
        if not words:
            continue
        pattern = re.compile(r"\.\s*" + re.escape(n) + r"(?!\w)")
        for path, start, text in db.word_chunks(words, MAX_ROWS):
            for m in pattern.finditer(text):
                out.add((path, start + text.count("\n", 0, m.start()), n))
    return sorted(out)


def classes_starting(db: StoreBackend, prefix: str, limit: int = 10) -> list[UnitRef]:
    """Classes (and structs) whose name starts with `prefix`, any case, shortest name first."""
    like = like_escape(prefix) + "%"
    return [unit_from_row(r) for r in db.rows(
        UNIT_SELECT + f" WHERE u.kind IN ('class', 'struct') AND u.name {db.like} ? ESCAPE '\\' "
        "ORDER BY length(u.name), u.id LIMIT ?", (like, limit))]
