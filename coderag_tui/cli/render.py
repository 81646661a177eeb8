"""Plain-text rendering of the models for the terminal (pipe-friendly)."""

from __future__ import annotations

import time

from coderag_tui.models import EdgeRef, IndexStatus, IndexSummary, UnitRef


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} GB"


def summary_text(s: IndexSummary) -> str:
    skips = ", ".join(f"{n} {r}" for r, n in s.skips.items()) or "none"
    lines = [
        f"indexed {s.files_indexed} files ({s.files_unchanged} unchanged, {s.files_deleted} deleted, "
        f"{s.files_failed} failed) in {s.seconds:.2f}s",
        f"{s.units} units, {s.chunks} chunks written; {s.edges} edges in the graph; skipped: {skips}",
    ]
    lines.extend(f"  error: {e}" for e in s.errors[:10])
    return "\n".join(lines)


def status_text(s: IndexStatus) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.last_update)) if s.last_update else "never"
    lines = [
        f"repository  {s.repo_root}" + (f" @ {s.commit[:12]}" if s.commit else ""),
        f"index       {s.db_path} ({human_bytes(s.index_bytes)}, schema v{s.schema_version})",
        f"updated     {when}",
        f"files       {s.files}    units {s.units}    chunks {s.chunks}    edges {s.edges}",
        f"vectors     {s.vectors}/{s.chunks}" + (f" ({s.embed_model})" if s.embed_model else ""),
    ]
    if s.skips:
        lines.append("skipped     " + ", ".join(f"{n} {r}" for r, n in s.skips.items()))
    for path, reason in s.problems:
        lines.append(f"  {path}: {reason}")
    if s.languages:
        lines.append("languages")
        for lang in s.languages[:25]:
            lines.append(f"  {lang.language:<16} {lang.files:>6} files {lang.units:>8} units {lang.chunks:>8} chunks")
        if len(s.languages) > 25:
            lines.append(f"  ... and {len(s.languages) - 25} more")
    if s.orphaned:
        lines.append(f"orphaned calls (their target was removed or renamed): {len(s.orphaned)}")
        for e in s.orphaned[:20]:
            src = e.source
            where = f"{src.path}:{e.line}" if src else f"?:{e.line}"
            lines.append(f"  {where}  {src.qualname if src else '?'} calls {e.name}")
    return "\n".join(lines)


def unit_line(u: UnitRef) -> str:
    sig = u.signature or u.qualname
    return f"{u.path}:{u.start_line}-{u.end_line}  {u.kind:<9} {u.qualname}  {sig if sig != u.qualname else ''}".rstrip()


def edge_line(e: EdgeRef, incoming: bool) -> str:
    """A caller (incoming: where the call is) or a callee (outgoing: what is called)."""
    if incoming:
        src = e.unit
        if src is None:
            return f"?:{e.line}  calls {e.name}"
        return f"{src.path}:{e.line}  {src.kind:<9} {src.qualname}"
    if e.unit is not None:
        return f"{e.unit.path}:{e.unit.start_line}-{e.unit.end_line}  {e.unit.kind:<9} {e.unit.qualname}  (line {e.line})"
    return f"(external)  {e.name}  (line {e.line})"


def edge_json(e: EdgeRef, incoming: bool) -> dict[str, object]:
    u = e.unit
    out: dict[str, object] = {"kind": e.kind, "name": e.name, "line": e.line}
    if u is not None:
        out.update(path=u.path, start_line=u.start_line, end_line=u.end_line, qualname=u.qualname,
                   unit_kind=u.kind)
    if incoming and u is not None:
        out["call_line"] = e.line
    if e.source is not None:
        out["of"] = e.source.qualname
    return out
