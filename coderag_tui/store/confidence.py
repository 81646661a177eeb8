"""How sure a resolved call edge is, from how it can be explained (seed 000, "Confidence Scoring").

Resolution picks one definition per call by name; this says which rule explains the pick, in
the order the resolver tries them:

- scope (1.0): `self.m()` / `this.m()` resolved to a member of the caller's class or its bases;
- import (0.9): the target's file is imported by the caller's file;
- same file (0.9): a plain call to a definition of the caller's own file;
- unique name (0.6): a plain call to the only definition of that name in the repository;
- guess (0.3): anything else, e.g. `obj.get()` on an object whose type is unknown, resolved to
  the one `get` the repository defines.

Computed when edges are read, from the edge and the index (deterministic: the same index gives
the same answers), so it needs no column and stays right while resolution rules change.
"""

from __future__ import annotations

from collections.abc import Sequence

from coderag_tui.store.db import Database

SELF_RECEIVERS = frozenset({"self", "this", "cls", "super()", "super", "@", "static", "Self"})
LEVELS = {"scope": 1.0, "import": 0.9, "same file": 0.9, "unique name": 0.6, "guess": 0.3}


def _class_chain(db: Database, unit_id: int) -> set[int]:
    """The ids of the types enclosing a unit (its parents that are not files)."""
    out: set[int] = set()
    pid = db.scalar("SELECT parent_id FROM units WHERE id=?", (unit_id,))
    for _ in range(12):
        if pid is None:
            break
        row = db.one("SELECT parent_id, kind FROM units WHERE id=?", (pid,))
        if row is None or row[1] == "file":
            break
        out.add(int(pid))
        pid = row[0]
    return out


def classify(db: Database, edges: Sequence[tuple[int, int | None, str, str, int]]) -> list[tuple[str, float]]:
    """(how, confidence) for each CALLS edge given as (src, dst, name, receiver, src_file);
    ("", 0.0) for an unresolved one."""
    dsts = sorted({d for _, d, _, _, _ in edges if d is not None})
    info = {int(r[0]): (int(r[1]), r[2]) for r in db.rows_in(
        "SELECT id, file_id, parent_id FROM units WHERE id IN ({marks})", dsts)} if dsts else {}
    imported: dict[int, set[int]] = {}
    counts: dict[str, int] = {}
    chains: dict[int, set[int]] = {}
    out: list[tuple[str, float]] = []
    for src, dst, name, receiver, src_file in edges:
        if dst is None or dst not in info:
            out.append(("", 0.0))
            continue
        dst_file, dst_parent = info[dst]
        how = "guess"
        self_call = receiver in SELF_RECEIVERS or receiver.startswith(("self.", "this."))
        if self_call:
            if src not in chains:
                chains[src] = _class_chain(db, src)
            if dst_parent in chains[src] or _inherited(db, chains[src], dst_parent):
                how = "scope"
        if how == "guess":
            if src_file not in imported:
                imported[src_file] = {int(r[0]) for r in db.rows(
                    "SELECT t.file_id FROM edges e JOIN units t ON t.id = e.dst "
                    "WHERE e.src_file=? AND e.kind='IMPORTS'", (src_file,))}
            if dst_file in imported[src_file] and dst_file != src_file:
                how = "import"
            elif not receiver and dst_file == src_file:
                how = "same file"
            elif not receiver:
                if name not in counts:
                    counts[name] = int(db.scalar(
                        "SELECT count(*) FROM units WHERE name=? COLLATE NOCASE AND kind<>'file' AND name=?",
                        (name, name)) or 0)
                if counts[name] <= 1:
                    how = "unique name"
        out.append((how, LEVELS[how]))
    return out


def _inherited(db: Database, chain: set[int], owner: int | None) -> bool:
    """The owner type is a (transitive, up to 4 levels) base of a type of the chain."""
    if owner is None or not chain:
        return False
    frontier = set(chain)
    for _ in range(4):
        marks = ",".join("?" * len(frontier))
        bases = {int(r[0]) for r in db.rows(
            f"SELECT dst FROM edges WHERE src IN ({marks}) AND kind IN ('INHERITS','IMPLEMENTS') "
            f"AND dst IS NOT NULL", tuple(frontier))}
        if owner in bases:
            return True
        frontier = bases - chain
        if not frontier:
            return False
    return False
