"""How sure a resolved call edge is, from how it can be explained (the rule that explains it sets the score).

Resolution picks one definition per call by name; this says which rule explains the pick, in
the order the resolver tries them:

- scope (1.0): `self.m()` / `this.m()` resolved to a member of the caller's class or its bases
  (a call in the class's own body included);
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

from coderag_tui.store.backend import GraphRows

SELF_RECEIVERS = frozenset({"self", "this", "cls", "super()", "super", "@", "static", "Self"})
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "record", "object", "protocol", "type",
                        "impl"})  # (as the resolver's, indexing/callres.py)
LEVELS = {"scope": 1.0, "import": 0.9, "same file": 0.9, "unique name": 0.6, "guess": 0.3}


def _class_chain(facts: GraphRows, unit_id: int) -> set[int]:
    """The ids of the types enclosing a unit (its parents that are not files), and the unit
    itself when it is a type: a call in a class's body (`area = property(lambda self:
    self.size())`) is made by the class."""
    out: set[int] = set()
    place = facts.unit_places([unit_id]).get(unit_id)
    if place is not None and place[2] in TYPE_KINDS:
        out.add(int(unit_id))
    pid = place[1] if place else None
    for _ in range(12):
        if pid is None:
            break
        parent = facts.unit_places([pid]).get(pid)
        if parent is None or parent[2] == "file":
            break
        out.add(int(pid))
        pid = parent[1]
    return out


def classify(facts: GraphRows, edges: Sequence[tuple[int, int | None, str, str, int]]) -> list[tuple[str, float]]:
    """(how, confidence) for each CALLS edge given as (src, dst, name, receiver, src_file);
    ("", 0.0) for an unresolved one."""
    dsts = sorted({d for _, d, _, _, _ in edges if d is not None})
    info = {uid: (fid, pid) for uid, (fid, pid, _) in facts.unit_places(dsts).items()} if dsts else {}
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
                chains[src] = _class_chain(facts, src)
            if dst_parent in chains[src] or _inherited(facts, chains[src], dst_parent):
                how = "scope"
        if how == "guess":
            if src_file not in imported:
                imported[src_file] = facts.imported_files(src_file)
            if dst_file in imported[src_file] and dst_file != src_file:
                how = "import"
            elif not receiver and dst_file == src_file:
                how = "same file"
            elif not receiver:
                if name not in counts:
                    counts[name] = facts.definitions_named(name)
                if counts[name] <= 1:
                    how = "unique name"
        out.append((how, LEVELS[how]))
    return out


def sureness(facts: GraphRows, rows: Sequence[Sequence]) -> list[tuple[str, float]]:
    """(how, confidence) per edge row (src, dst, kind, name, line, receiver, src_file): resolved
    calls are classified; other edges are certain when resolved."""
    calls = [i for i, r in enumerate(rows) if r[2] == "CALLS" and r[1] is not None]
    out = [("", 1.0 if r[1] is not None else 0.0) for r in rows]
    if calls:
        found = classify(facts, [(int(rows[i][0]), int(rows[i][1]), str(rows[i][3]), str(rows[i][5] or ""),
                                  int(rows[i][6])) for i in calls])
        for i, value in zip(calls, found, strict=True):
            out[i] = value
    return out


def _inherited(facts: GraphRows, chain: set[int], owner: int | None) -> bool:
    """The owner type is a (transitive, up to 4 levels) base of a type of the chain."""
    if owner is None or not chain:
        return False
    frontier = set(chain)
    for _ in range(4):
        bases = facts.bases_of(frontier)
        if owner in bases:
            return True
        frontier = bases - chain
        if not frontier:
            return False
    return False
