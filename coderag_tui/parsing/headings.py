"""Sections of prose documents: one `section` unit per heading, so that a long page is
split at its headings like code is split at its definitions (reST's flat title nodes, and the
setext headings a Markdown grammar leaves inside a section)."""

from __future__ import annotations

from typing import Any

from coderag_tui.parsing.chunker import _end_row
from coderag_tui.parsing.syntax import Extractor, UnitBuild, collapse


def heading_groups(ex: Extractor, root: Any, units: list[UnitBuild]) -> list[list[Any]]:
    """A document whose grammar marks headings with flat `section` nodes (reST: a title and its
    underline): one `section` unit per heading, running to the next one, and the top-level nodes
    grouped by section, so that chunks break at headings. [] when it has no headings."""
    children = [c for c in root.children if c.end_byte > c.start_byte]
    heads = [i for i, c in enumerate(children) if c.type == "section"]
    if not heads:
        return []
    groups = [children[: heads[0]]] if heads[0] else []
    for j, i in enumerate(heads):
        end_i = heads[j + 1] if j + 1 < len(heads) else len(children)
        group = children[i:end_i]
        groups.append(group)
        node = children[i]
        title = next((c for c in node.named_children if c.type == "title"), node)
        name = collapse(ex.text(title).strip().splitlines()[0] if ex.text(title).strip() else "", 200)
        last = group[-1]
        units.append(UnitBuild(0, "section", name or "section", (), node.start_point[0] + 1, _end_row(last) + 1,
                                node.start_byte, last.end_byte, None))
    return groups


def inner_headings(ex: Extractor, root: Any, units: list[UnitBuild]) -> list[int]:
    """Headings a Markdown grammar leaves inside a section (setext `Title` + `-----` lines after
    the first: requests' HISTORY.md is one section of ~2,000 lines): a `section` unit for each,
    running to the next such heading or the end of its section. Their first rows (0-based)."""
    rows: list[int] = []
    by_start = {(u.start_byte, u.kind): i for i, u in enumerate(units)}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.type == "section":
                stack.append(child)
        if node.type != "section":
            continue
        parent = by_start.get((node.start_byte, "section"), 0)
        kids = [c for c in node.children if c.end_byte > c.start_byte]
        heads = [i for i, c in enumerate(kids) if i > 0 and c.type == "setext_heading"]
        for j, i in enumerate(heads):
            end_i = heads[j + 1] if j + 1 < len(heads) else len(kids)
            if any(c.type == "section" for c in kids[i:end_i]):
                end_i = next(k for k in range(i, end_i) if kids[k].type == "section")
            head, last = kids[i], kids[end_i - 1]
            title = ex.text(head).strip().splitlines()
            pu = units[parent]
            units.append(UnitBuild(parent, "section", collapse(title[0], 200) if title else "section",
                                    pu.scope + ((pu.name,) if parent else ()), head.start_point[0] + 1,
                                    _end_row(last) + 1, head.start_byte, last.end_byte, None))
            rows.append(head.start_point[0])
    if rows:  # units stay in source order (chunks find their unit by bisecting the starts)
        order = [0, *sorted(range(1, len(units)), key=lambda i: (units[i].start_byte, -units[i].end_byte))]
        new_index = {old: new for new, old in enumerate(order)}
        moved = [units[i] for i in order]
        for u in moved:
            if u.parent is not None:
                u.parent = new_index[u.parent]
        units[:] = moved
    return sorted(rows)

