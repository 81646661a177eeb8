"""Plain-text rendering of the models for the terminal (pipe-friendly).

Repository text (paths, names, signatures) is escaped with `textsafe` before it is measured,
and lines are fitted to a width (80 columns unless a terminal says otherwise): a line that
does not fit is wrapped with an indent; a path is never shortened.
"""

from __future__ import annotations

import re
import textwrap
import time
from typing import TYPE_CHECKING

from coderag_tui.models import (
    EdgeRef,
    IndexCounts,
    IndexStatus,
    IndexSummary,
    ModelInfo,
    SearchHit,
    UnitRef,
)
from coderag_tui.textsafe import safe_line, safe_text

if TYPE_CHECKING:
    from coderag_tui.indexing.embedder import EmbedSummary

INDENT = "    "


class _Wrapper(textwrap.TextWrapper):
    # a path may break after a slash, like a sentence after a space
    wordsep_simple_re = re.compile(r"(\s+|[^\s/]*/+)")


def wrap(text: str, width: int, indent: str = INDENT, first: str = "") -> list[str]:
    """`text` (one line) in lines of at most `width` columns: the first starts with `first`,
    the next ones with `indent`; a line breaks at a space or after a slash (inside a word
    only when that is longer than a line)."""
    if len(first) + len(text) <= width:
        return [first + text]
    wrapper = _Wrapper(width, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False)
    return wrapper.wrap(text) or [first]


def two_part(head: str, tail: str, width: int) -> str:
    """`head  tail` on one line when it fits, else head, then tail indented below it."""
    line = f"{head}  {tail}".rstrip()
    if len(line) <= width:
        return line
    return "\n".join(wrap(head, width) + wrap(tail, width, first=INDENT))


def fit_text(text: str, width: int) -> str:
    """Multi-line text with every line fitted: a long line continues below, indented past its
    own leading whitespace (a tree mark becomes a space: a continuation is not a new item)."""
    out: list[str] = []
    for line in safe_text(text).expandtabs(4).splitlines():
        lead = re.match(r"[\s│]*", line)
        indent = " " * len(lead.group() if lead else "") + INDENT
        if len(indent) > width // 2:
            indent = INDENT
        out.extend(wrap(line, width, indent=indent))
    return "\n".join(out)


def _repo(u: UnitRef) -> str:
    """`name:` before a path, when results come from several repositories (a server's)."""
    return f"{safe_line(u.repo)}:" if u.repo else ""


def hit_line(h: SearchHit, width: int, explain: bool = False) -> str:
    """A search hit; `explain`: with the ranks that found it ([bm25#2, vector#10, name#11])."""
    u = h.unit
    head = f"{h.score:.4f}  {_repo(u)}{safe_line(u.path)}:{u.start_line}-{u.end_line}"
    tail = f"{u.kind:<9} {safe_line(u.qualname or u.name)}"
    if explain:
        tail += f"  [{', '.join(h.reasons)}]"
    return two_part(head, tail, width)


def model_line(m: ModelInfo, width: int) -> str:
    """One line when it fits; else the name, then its size, path (never broken) and note
    indented below."""
    size = f"{m.size_bytes / 1e6:.0f} MB" if m.size_bytes else "-"
    found = "" if m.found else "  (NOT FOUND)"
    name = f"{m.provider:<9} {safe_line(m.name)}"
    rest = [f"ctx {m.context_window}  {size}{found}", safe_line(m.path_or_url)]
    line = "  ".join([name, *rest])
    # a path stays on one line, whatever its length: it is copied into configs and --model
    lines = [line] if len(line) <= width else [*wrap(name, width), *wrap(rest[0], width, first=INDENT),
                                               INDENT + rest[1]]
    if m.note:
        lines += wrap(safe_line(m.note), width, first=INDENT)
    return "\n".join(lines)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} GB"


WIDTH = 80


def clip(line: str, width: int = WIDTH) -> str:
    """One line of at most `width` characters (cut at its end with an ellipsis)."""
    return line if len(line) <= width else line[: width - 1] + "…"


def summary_text(s: IndexSummary, counts: IndexCounts | None = None) -> str:
    """What an index run did, in lines of at most 80 columns; with `counts`, the index's totals
    (the same counts `status` and the app show) head it."""
    if counts is not None:
        edges = "" if s.edges is None else f", {s.edges:,} edges"
        head = f"indexed {counts.files:,} files, {counts.units:,} units, {counts.chunks:,} chunks{edges} in {s.seconds:.2f}s"
        run = (f"this run: {s.files_indexed:,} parsed, {s.files_unchanged:,} unchanged, "
               f"{s.files_deleted:,} deleted, {s.files_failed:,} failed")
        lines = [head, run]
    else:
        lines = [f"indexed {s.files_indexed:,} files ({s.files_unchanged:,} unchanged, "
                 f"{s.files_deleted:,} deleted, {s.files_failed:,} failed) in {s.seconds:.2f}s",
                 f"{s.units:,} units, {s.chunks:,} chunks written"
                 + ("" if s.edges is None else f"; {s.edges:,} edges in the graph")]
    skips = {r: n for r, n in s.skips.items() if r != "error"}
    if skips:
        lines.append("skipped: " + ", ".join(f"{n:,} {r}" for r, n in skips.items()))
    lines.extend(f"  error: {e}" for e in s.errors[:10])
    # unclipped: the setting that brings them back is at the end of the line
    return "\n".join([*(clip(line) for line in lines), *(safe_line(e.line) for e in s.excluded)])


def embed_text(e: EmbedSummary) -> str:
    """What an embedding run did, in lines of at most 80 columns."""
    if e.embedded or e.stopped:
        head = (f"vectors: {e.embedded:,} chunks embedded in {e.seconds:.1f}s ({e.rate:,.1f}/s), "
                f"{e.reused:,} already had one")
    else:
        head = f"vectors: up to date ({e.reused:,} chunks)"
    lines = [head, f"model: {e.model}"]
    if e.removed:
        lines.append(f"{e.removed:,} stale vectors removed")
    if e.reset:
        lines.append("the model changed, so every chunk was embedded again")
    if e.stopped:
        lines.append("stopped before the end: `coderag index` adds the rest")
    return "\n".join(clip(line) for line in lines)


def status_text(s: IndexStatus) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.last_update)) if s.last_update else "never"
    lines = [
        f"repository  {s.repo_root}" + (f" @ {s.commit[:12]}" if s.commit else ""),
        f"index       {s.db_path} ({human_bytes(s.index_bytes)}, schema v{s.schema_version})",
        f"updated     {when}",
        f"files       {s.files:,}    units {s.units:,}    chunks {s.chunks:,}    edges {s.edges:,}",
        f"vectors     {s.vectors:,}/{s.chunks:,}" + (f" ({s.embed_model})" if s.embed_model else ""),
    ]
    skips = {r: n for r, n in s.skips.items() if r not in ("error", "partial")}
    if skips:
        lines.append(f"skipped     {s.skipped:,}: " + ", ".join(f"{n:,} {r}" for r, n in skips.items()))
    if s.secrets:  # never read (they may hold keys): named, so a missing file is not a mystery
        more = skips.get("secret", 0) - len(s.secrets)
        lines.append("  secret (never read): " + ", ".join(safe_line(p) for p in s.secrets)
                     + (f" and {more:,} more" if more > 0 else ""))
    if s.skips.get("partial"):
        lines.append(f"plain text  {s.skips['partial']:,} files indexed as plain text (their parse was refused)")
    lines.extend(f"excluded    {safe_line(e.line)}" for e in s.excluded)
    if s.errors:
        lines.append(f"errors      {s.errors:,} files could not be read or parsed")
    for path, reason in s.problems:
        lines.append(f"  {safe_line(path)}: {safe_line(reason)}")
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


def unit_line(u: UnitRef, width: int = 80) -> str:
    """A definition: where, kind, name and signature on one line when they fit; else the
    signature starts a line of its own (continued, indented, only past the width)."""
    sig = safe_line(u.signature or u.qualname)
    name = safe_line(u.qualname)
    head = f"{_repo(u)}{safe_line(u.path)}:{u.start_line}-{u.end_line}"
    tail = f"{u.kind:<9} {name}"
    line = f"{head}  {tail}  {sig if sig != name else ''}".rstrip()
    if len(line) <= width or sig == name:
        return two_part(head, tail, width) if len(line) > width else line
    return "\n".join([*wrap(head, width), *wrap(tail, width, first=INDENT),
                      *wrap(sig, width, indent=INDENT * 2, first=INDENT)])


def edge_line(e: EdgeRef, incoming: bool, width: int = 80) -> str:
    """A caller (incoming: where the call is) or a callee (outgoing: what is called)."""
    name = safe_line(e.name)
    if incoming:
        src = e.unit
        if src is None:
            return two_part(f"?:{e.line}", f"calls {name}", width)
        return two_part(f"{_repo(src)}{safe_line(src.path)}:{e.line}",
                        f"{src.kind:<9} {safe_line(src.qualname)}{_how(e)}", width)
    if e.unit is not None:
        u = e.unit
        return two_part(f"{_repo(u)}{safe_line(u.path)}:{u.start_line}-{u.end_line}",
                        f"{u.kind:<9} {safe_line(u.qualname)}  (line {e.line}){_how(e)}", width)
    return two_part("(external)", f"{name}  (line {e.line})", width)


def _how(e: EdgeRef) -> str:
    """How a call was resolved, when it is less than sure (a name match, a guess)."""
    if e.how and e.unit is not None and e.source is not None and e.unit.repo != e.source.repo:
        return f"  [{e.how}]"  # a call into another repository of the workspace
    return f"  [{e.how} {e.confidence:.1f}]" if e.how and e.confidence < 0.9 else ""


def edge_json(e: EdgeRef, incoming: bool) -> dict[str, object]:
    u = e.unit
    out: dict[str, object] = {"kind": e.kind, "name": e.name, "line": e.line}
    if e.how:
        out.update(resolved_by=e.how, confidence=e.confidence)
    if u is not None:
        out.update(path=u.path, start_line=u.start_line, end_line=u.end_line, qualname=u.qualname,
                   unit_kind=u.kind)
        if u.repo:
            out["repository"] = u.repo
    if incoming and u is not None:
        out["call_line"] = e.line
    if e.source is not None:
        out["of"] = e.source.qualname
        if e.source.repo and (u is None or u.repo != e.source.repo):  # a link across repositories
            out["of_repository"] = e.source.repo
    return out
