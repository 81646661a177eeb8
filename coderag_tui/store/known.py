"""What the index knows by name: the lookups that check the code names and paths in a model's
text (`answering/names.py`). Each answers a set of names at once and reads only what it needs:
exact unit names (an index), keyword rows (FTS5) whose chunk text is then matched exactly."""

from __future__ import annotations

import re
from collections.abc import Iterable

from coderag_tui.models import UnitRef
from coderag_tui.store import read, retrieval_reads
from coderag_tui.store.db import Database
from coderag_tui.store.read import UNIT_SELECT, unit_from_row
from coderag_tui.store.sqlite_backend import bases_of

PAGE = 400  # keyword rows read at a time to confirm a word
MAX_ROWS = 4000  # a word in more rows than this is common: known


def units_named(db: Database, name: str, limit: int = 50) -> list[UnitRef]:
    """Units (not files) whose name is exactly `name`."""
    return [unit_from_row(r) for r in db.rows(
        UNIT_SELECT + " WHERE u.name = ? AND u.kind <> 'file' ORDER BY u.id LIMIT ?", (name, limit))]


def files_ending(db: Database, suffix: str, limit: int = 20) -> list[str]:
    """Indexed paths equal to `suffix` or ending with `/suffix`."""
    like = suffix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [str(r[0]) for r in db.rows(
        "SELECT path FROM files WHERE path = ? OR path LIKE ? ESCAPE '\\' ORDER BY length(path) LIMIT ?",
        (suffix, "%/" + like, limit))]


def file_stem_exists(db: Database, stem: str) -> bool:
    """Some indexed file is named `stem` plus an extension (`app` for src/app.py)."""
    like = stem.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return db.one("SELECT 1 FROM files WHERE path LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\' LIMIT 1",
                  (like + ".%", "%/" + like + ".%")) is not None


def folder_exists(db: Database, folder: str) -> bool:
    """Some indexed file lies under `folder` (a path, or the end of one)."""
    like = folder.strip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return db.one("SELECT 1 FROM files WHERE path LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\' LIMIT 1",
                  (like + "/%", "%/" + like + "/%")) is not None


def imported_modules(db: Database, modules: Iterable[str]) -> set[str]:
    """Of `modules`, those some indexed file imports (by that name, or a submodule of it)."""
    found: set[str] = set()
    for module in set(modules):
        if db.one("SELECT 1 FROM imports WHERE module = ? OR module LIKE ? LIMIT 1",
                  (module, module + ".%")) is not None:
            found.add(module)
    return found


def imported_names(db: Database, module: str) -> set[str]:
    """The names indexed files import from `module` (`from module import a, b`)."""
    import json

    out: set[str] = set()
    for (names,) in db.rows("SELECT names FROM imports WHERE module = ?", (module,)):
        try:
            out.update(str(n) for n in json.loads(names or "[]"))
        except ValueError:
            continue
    return out


def _fts_phrase(text: str) -> str:
    """`text` as one FTS5 phrase of its words (the tokenizer splits identifiers at `_` and `.`)."""
    words = re.findall(r"[^\W_]+", text.lower())
    return '"' + " ".join(words) + '"' if words else ""


def in_code(db: Database, texts: Iterable[str]) -> set[str]:
    """Of `texts` (identifiers, `a.b` attribute chains), those written in some indexed chunk
    exactly, as a whole word (`dispatch_request` is not in `full_dispatch_request`)."""
    found: set[str] = set()
    for text in set(texts):
        phrase = _fts_phrase(text)
        if not phrase:
            continue
        parts = [re.escape(p) for p in text.split(".")]
        pattern = re.compile(r"(?<![\w])" + r"\s*\.\s*".join(parts) + r"(?![\w])")
        for offset in range(0, MAX_ROWS + PAGE, PAGE):
            rows = db.rows("SELECT c.text FROM chunks c WHERE c.id IN (SELECT rowid FROM chunks_fts "
                           "WHERE chunks_fts MATCH ? ORDER BY rowid LIMIT ? OFFSET ?)", (phrase, PAGE, offset))
            if offset >= MAX_ROWS or any(pattern.search(str(r[0])) for r in rows):
                found.add(text)
                break
            if len(rows) < PAGE:
                break
    return found


def file_texts(db: Database, path: str) -> str:
    """A file's indexed text (its chunks, in line order)."""
    return "\n".join(str(t) for (t,) in db.rows(
        "SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.start_line",
        (path,)))


def unit_text(db: Database, unit: UnitRef) -> str:
    """A unit's lines as indexed (from the chunks of its file that overlap them)."""
    lines: dict[int, str] = {}
    for start, text in db.rows(
            "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "AND c.start_line <= ? AND c.end_line >= ? ORDER BY c.start_line", (unit.path, unit.end_line, unit.start_line)):
        for n, line in enumerate(str(text).split("\n"), int(start)):
            lines.setdefault(n, line)
    return "\n".join(lines[n] for n in range(unit.start_line, unit.end_line + 1) if n in lines)


class SqliteNames:
    """The lookups of `answering/names.py` over one SQLite index."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def units_named(self, name: str) -> list[UnitRef]:
        return units_named(self.db, name)

    def children(self, unit_id: int) -> list[UnitRef]:
        return read.children(self.db, unit_id)

    def unit_bases(self, unit_id: int) -> list[str]:
        return bases_of(retrieval_reads.unit_bases(self.db, unit_id))

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


def lines_exist(db: Database, path: str, start: int, end: int) -> bool:
    """The repository has lines `start`-`end` of `path` (a path as indexed, or the end of
    exactly one indexed path)."""
    facts = read.file_facts(db, path)
    if facts is None:
        ends = files_ending(db, path.lstrip("./"), 2)
        facts = read.file_facts(db, ends[0]) if len(ends) == 1 else None
    return facts is not None and 1 <= start <= end <= max(facts[1], 1)


def attribute_reads(db: Database, attributes: Iterable[str]) -> list[tuple[str, int, str]]:
    """(path, line, attribute) wherever indexed code reads one of `attributes` as `x.attribute`."""
    names = sorted({a for a in attributes if a})
    expression = " OR ".join(p for p in map(_fts_phrase, names) if p)
    if not expression:
        return []
    patterns = {n: re.compile(r"\.\s*" + re.escape(n) + r"(?!\w)") for n in names}
    out: set[tuple[str, int, str]] = set()
    for path, start, text in db.rows(
            "SELECT f.path, c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN "
            "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (expression, MAX_ROWS)):
        text = str(text)
        for n, pattern in patterns.items():
            for m in pattern.finditer(text):
                out.add((str(path), int(start) + text.count("\n", 0, m.start()), n))
    return sorted(out)


def classes_starting(db: Database, prefix: str, limit: int = 10) -> list[UnitRef]:
    """Classes (and structs) whose name starts with `prefix`, any case, shortest name first."""
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [unit_from_row(r) for r in db.rows(
        UNIT_SELECT + " WHERE u.kind IN ('class', 'struct') AND u.name LIKE ? ESCAPE '\\' "
        "ORDER BY length(u.name), u.id LIMIT ?", (like, limit))]
