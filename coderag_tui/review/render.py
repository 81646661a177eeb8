"""A review as Markdown (for people and for pasting into any LLM) or as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coderag_tui.review.pack import render_piece

if TYPE_CHECKING:
    from coderag_tui.review.build import Review
    from coderag_tui.review.gather import ChangeContext


def markdown(review: Review) -> str:
    parts = [f"# Review: {review.label}", review.overview]
    current = -1
    for cand, piece in review.chosen:
        if cand.change != current:
            current = cand.change
            if review.headings:
                parts.append(review.headings[current])
        parts.append(render_piece(piece))
    return "\n\n".join(p for p in parts if p) + "\n"


def _unit_json(u: Any) -> dict[str, Any] | None:
    if u is None:
        return None
    return {"name": u.name, "qualname": u.qualname, "kind": u.kind, "signature": u.signature,
            "params": list(u.params), "return_type": u.return_type, "start_line": u.start_line,
            "end_line": u.end_line}


def _change_json(ctx: ChangeContext) -> dict[str, Any]:
    c = ctx.change
    return {
        "kind": c.kind,
        "name": c.name,
        "qualname": c.qualname,
        "unit_kind": c.unit.kind,
        "path": c.path,
        "old_path": c.old_path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "citation": c.citation,
        "old_citation": c.old_citation or None,
        "old_name": c.old.name if c.old is not None else None,
        "old_qualname": c.old_qualname or None,
        "new": _unit_json(c.new),
        "old": _unit_json(c.old),
        "signature_changed": c.signature_changed,
        "similarity": c.similarity,
        "members": list(c.members),
        "partial": c.partial,
        "callers": [r.to_json() for r in ctx.callers],
        "caller_count": ctx.caller_count,
        "callees": [r.to_json() for r in ctx.callees],
        "external_callees": list(ctx.external_callees),
        "tests": [r.to_json() for r in ctx.tests],
        "test_files": list(ctx.test_files),
        "similar": [r.to_json() for r in ctx.similar],
        "orphaned_callers": [r.to_json() for r in ctx.orphaned],
        "mismatched_calls": [m.to_json() for m in ctx.mismatched],
        "outline": ctx.outline,
        "imports": list(ctx.imports),
        "constants": list(ctx.constants),
    }


def to_json(review: Review) -> dict[str, Any]:
    files = []
    for fs in review.files:
        added, deleted = fs.diff.stats()
        files.append({"path": fs.diff.path, "old_path": fs.diff.old_path, "new_path": fs.diff.new_path,
                      "status": fs.diff.status, "language": fs.language, "lines_added": added,
                      "lines_deleted": deleted, "partial": fs.partial, "note": fs.note})
    return {
        "label": review.label,
        "base": review.base,
        "budget": review.budget,
        "tokens": review.tokens,
        "dropped": dict(review.dropped),
        "notes": list(review.notes),
        "files": files,
        "changes": [_change_json(ctx) for ctx in review.contexts],
        "context": [
            {"change": cand.change, "role": p.role, "tier": cand.tier, "path": p.path,
             "start_line": p.start_line, "end_line": p.end_line, "citation": p.citation, "title": p.title,
             "tokens": p.tokens, "text": p.text}
            for cand, p in review.chosen
        ],
        "overview": review.overview,
    }
