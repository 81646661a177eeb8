"""Turn one file into units, calls, imports and chunks, for any language: the definitions
`syntax` reads are nested into units, calls are attached to the innermost unit around them,
and the chunker's spans become chunks with their contextual header.

Structured languages have a tag query (queries/<language>.scm, captures in queries/README.md).
Other grammars get units from named top-level nodes. Text files get line-window chunks.
"""

from __future__ import annotations

import bisect
import hashlib
from pathlib import PurePosixPath
from typing import Any

from coderag_tui.config import ChunkSettings
from coderag_tui.parsing.chunker import CastChunker, Span, _end_row, line_bounds
from coderag_tui.parsing.guard import check_nesting, parse_tree
from coderag_tui.parsing.headings import heading_groups, inner_headings
from coderag_tui.parsing.kinds import (
    CLASS_LIKE,
    FUNCTION_LIKE,
    NAMESPACE_LIKE,
    is_test_path,
    unit_kinds,
)
from coderag_tui.parsing.languages import LanguageSpec
from coderag_tui.parsing.records import CallSite, ImportRef, ParsedChunk, ParsedFile, ParsedUnit
from coderag_tui.parsing.syntax import Definition, Extractor, UnitBuild, clean_doc, collapse

# is_test_path and unit_kinds live in `kinds`; retrieval still imports them from here
__all__ = ["content_hash", "contextualize", "is_test_path", "parse_source", "unit_kinds"]


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _innermost(starts: list[int], units: list[UnitBuild], start: int, end: int) -> int:
    """Index of the innermost unit whose line range contains [start, end] (0 = the file)."""
    i = bisect.bisect_right(starts, start) - 1
    while i > 0:
        u = units[i]
        if u.start_line <= start and u.end_line >= end:
            return i
        i = u.parent if u.parent is not None else 0
    return 0


def parse_source(
    path: str, source: bytes, spec: LanguageSpec | None, settings: ChunkSettings, *, plain: bool = False
) -> ParsedFile:
    """Parse one file's bytes into a ParsedFile. Never raises on bad syntax; raises ParseLimit
    for input past a safe limit of the parser. `plain`: line chunks only (no syntax tree)."""
    language = spec.name if spec is not None else "text"
    n_lines = source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)
    file_unit = UnitBuild(None, "file", PurePosixPath(path).name, (), 1, max(n_lines, 1),
                           0, len(source), None)
    units: list[UnitBuild] = [file_unit]
    import_refs: list[ImportRef] = []
    has_errors = False
    structured = False
    chunker = CastChunker(source, settings)
    ex: Extractor | None = None
    file_doc = ""

    if spec is not None and spec.parseable and not plain:
        check_nesting(source, spec.name)
        ex = Extractor(path, source, spec, settings)
        tree = parse_tree(spec.name, source)
        root = tree.root_node
        has_errors = bool(root.has_error)
        call_caps: list[tuple[Any, dict[str, list[Any]]]] = []
        if spec.structured:
            structured = True
            defs, call_caps, import_caps = ex.query_defs(root)
        else:
            defs, import_caps = (ex.generic_defs(root) if spec.kind == "code" else []), []
        _nest(units, defs, path)
        _attach_calls(ex, units, call_caps)
        for entry in sorted(import_caps, key=lambda e: e["import"][0].start_byte):
            node = entry["import"][0]
            names = tuple(ex.text(n) for n in entry.get("import.name", ()))
            import_refs.append(ImportRef(_module_path(ex, entry.get("import.module", [])), names,
                                         node.start_point[0] + 1))
        first = root.named_children[0] if root.named_children else None
        if first is not None and first.start_point[0] < 3 and (
            "comment" in first.type or first.type in ("string", "expression_statement")
        ):
            file_doc = clean_doc(ex.text(first))
        groups = heading_groups(ex, root, units) if spec.kind == "doc" and not spec.structured else []
        spans = chunker.chunk_groups(groups) if groups else chunker.chunk_tree(root)
        if spec.kind == "doc" and spec.structured:
            rows = inner_headings(ex, root, units)
            if rows:
                spans = chunker.split_at(spans, rows)
    else:
        spans = chunker.chunk_lines(n_lines)

    parsed_units = _finish_units(units, ex, path, file_doc)
    chunks = _make_chunks(path, language, source, spans, units, parsed_units, import_refs)
    return ParsedFile(
        path=path,
        language=language,
        units=tuple(parsed_units),
        imports=tuple(import_refs),
        chunks=tuple(chunks),
        lines=n_lines,
        has_errors=has_errors,
        structured=structured,
    )


def _module_path(ex: Extractor, nodes: list[Any]) -> str:
    """The first @import.module; segments captured one by one (Scala `a.b.c`) are joined."""
    if not nodes:
        return ""
    nodes = sorted(nodes, key=lambda n: n.start_byte)
    parts, end = [ex.text(nodes[0])], nodes[0].end_byte
    for n in nodes[1:]:
        if ex.source[end : n.start_byte].strip() != b".":
            break
        parts.append(ex.text(n))
        end = n.end_byte
    return ".".join(parts).strip("\"'`<> ")


def _nest(units: list[UnitBuild], defs: list[Definition], path: str) -> None:
    defs = [d for d in defs if d.name]
    defs.sort(key=lambda d: (d.node.start_byte, -d.node.end_byte))
    stack: list[int] = [0]
    for d in defs:
        node = d.node
        while len(stack) > 1 and units[stack[-1]].end_byte <= node.start_byte:
            stack.pop()
        parent = stack[-1]
        pu = units[parent]
        kind = d.kind
        if kind == "function" and pu.kind in CLASS_LIKE and pu.kind not in NAMESPACE_LIKE:
            kind = "method"
        scope = pu.scope + (pu.name,) if parent != 0 else ()
        if d.scope and scope[-1:] != (d.scope,):  # C++ `ns { T C::m() }` -> ns.C.m
            scope = scope + (d.scope,)
        units.append(
            UnitBuild(parent, kind, d.name, scope, node.start_point[0] + 1, _end_row(node) + 1,
                       node.start_byte, node.end_byte, d)
        )
        stack.append(len(units) - 1)


def _attach_calls(ex: Extractor, units: list[UnitBuild], call_caps: list[tuple[Any, dict[str, list[Any]]]]) -> None:
    if not call_caps:
        return
    starts = [u.start_byte for u in units]
    seen: set[tuple[int, str]] = set()
    source = ex.source
    bisect_right = bisect.bisect_right
    for node, caps in call_caps:  # the hottest loop of extraction: locals, one read per attribute
        names = caps.get("call.name")
        if not names:
            continue
        name_node = names[-1]
        name = source[name_node.start_byte : name_node.end_byte].decode("utf-8", "replace")
        pos = node.start_byte
        key = (pos, name)
        if key in seen:
            continue
        seen.add(key)
        receivers = caps.get("call.receiver")
        if receivers:
            r = receivers[0]
            receiver = source[r.start_byte : r.end_byte].decode("utf-8", "replace")
        else:
            receiver = ""
        argc = -1
        args_caps = caps.get("call.args")
        if args_caps:
            args = args_caps[0]
            # an argument list counts its items; anything else (a bare generator) is one argument
            argc = args.named_child_count if "argument" in args.type else 1
        i = bisect_right(starts, pos) - 1
        while i > 0:
            u = units[i]
            if u.start_byte <= pos < u.end_byte:
                break
            i = u.parent if u.parent is not None else 0
        if i > 0 and units[i].name == name and _is_head(node, units[i].d):
            continue  # Elixir's `def add(a, b)`: the definition's own head parses as a call
        units[i if i > 0 else 0].calls.append(
            CallSite(collapse(name, 120), collapse(receiver, 80) if receiver else "", node.start_point[0] + 1, argc)
        )


def _is_head(call: Any, d: Definition | None) -> bool:
    """Whether a call node is the head of the definition `d` (a call in the definition's own
    argument list: `def name(args)` in Elixir)."""
    parent = call.parent
    return d is not None and parent is not None and parent.type == "arguments" and parent.parent == d.node


def _finish_units(units: list[UnitBuild], ex: Extractor | None, path: str, file_doc: str) -> list[ParsedUnit]:
    test_path = is_test_path(path)
    out: list[ParsedUnit] = []
    for i, u in enumerate(units):
        d = u.d
        if d is None or ex is None:
            out.append(ParsedUnit(i, u.parent, u.kind, u.name, path if i == 0 else u.name, u.scope,
                                  "", (), "", (), file_doc if i == 0 else "", u.start_line,
                                  u.end_line, tuple(u.calls), (), test_path and i == 0))
            continue
        decorators = tuple(collapse(ex.text(n), 120) for n in d.decorators)
        is_test = test_path and (
            (u.kind in FUNCTION_LIKE and (u.name.lower().startswith("test") or
                                          any("test" in x.lower() for x in decorators)))
            or (u.kind in CLASS_LIKE and "test" in u.name.lower())
        )
        out.append(
            ParsedUnit(
                index=i,
                parent=u.parent,
                kind=u.kind,
                name=u.name,
                qualname=".".join(u.scope + (u.name,)),
                scope=u.scope,
                signature=ex.signature(d.node, max(
                    (x.end_byte for x in d.decorators if d.node.start_byte <= x.start_byte < d.node.end_byte),
                    default=d.node.start_byte)),
                params=ex.params(d.params) if d.params is not None else tuple(
                    collapse(ex.text(n), 120) for n in sorted(d.param_nodes, key=lambda n: n.start_byte)),
                return_type=collapse(ex.text(d.ret), 120) if d.ret is not None else "",
                decorators=decorators,
                docstring=ex.docstring(d),
                start_line=u.start_line,
                end_line=u.end_line,
                calls=tuple(u.calls),
                bases=tuple(d.bases),
                is_test=is_test,
            )
        )
    return out


def contextualize(path: str, scope: tuple[str, ...], language: str, imports: list[str]) -> str:
    """The header prepended to a chunk before embedding (path, scope and imports, so that a chunk's vector knows where it lives)."""
    lines = [f"# {path}"]
    if scope:
        lines.append(f"# Scope: {' > '.join(scope)}")
    lines.append(f"# Language: {language}")
    lines.extend(imports[:5])
    return "\n".join(lines) + "\n"


def _make_chunks(
    path: str,
    language: str,
    source: bytes,
    spans: list[Span],
    units: list[UnitBuild],
    parsed: list[ParsedUnit],
    imports: list[ImportRef],
) -> list[ParsedChunk]:
    if not spans:
        return []
    line_starts, line_ends = line_bounds(source)  # of source.split(b"\n"), without the copies
    n_lines = len(line_starts)
    starts = [u.start_line for u in units]
    import_lines = []
    for imp in imports[:5]:
        if 0 < imp.line <= n_lines:
            line = source[line_starts[imp.line - 1] : line_ends[imp.line - 1]]
            import_lines.append(collapse(line.decode("utf-8", "replace"), 160))
    out: list[ParsedChunk] = []
    for span in spans:
        start, end = span.start_row + 1, span.end_row + 1
        # the lines start_row..end_row (clamped like a list slice), joined by their newlines
        last = min(span.end_row, n_lines - 1)
        raw = source[line_starts[span.start_row] : line_ends[last]] if span.start_row <= last else b""
        text = raw.decode("utf-8", "replace")
        if not text.strip():
            continue
        ui = _innermost(starts, units, start, end)
        scope = parsed[ui].scope + ((parsed[ui].name,) if ui else ())
        header = contextualize(path, scope, language, import_lines)
        out.append(
            ParsedChunk(
                start_line=start,
                end_line=end,
                node_kinds=tuple(span.kinds),
                unit_index=ui,
                scope=scope,
                text=text,
                context_text=header + text,
                hash=content_hash((header + text).encode("utf-8", "replace")),
                nws=span.size,
            )
        )
    return out


