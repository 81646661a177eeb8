"""Turn one file into units, calls, imports and chunks, for any language.

Structured languages have a tag query (queries/<language>.scm, captures in queries/README.md).
Other grammars get units from named top-level nodes. Text files get line-window chunks.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from coderag_tui.config import ChunkSettings
from coderag_tui.parsing.chunker import CastChunker, Span, _end_row, line_bounds
from coderag_tui.parsing.guard import check_nesting, parse_tree
from coderag_tui.parsing.languages import LanguageSpec, get_query, query_source
from coderag_tui.parsing.records import CallSite, ImportRef, ParsedChunk, ParsedFile, ParsedUnit

CLASS_LIKE = frozenset(
    {"class", "struct", "interface", "trait", "impl", "enum", "object", "protocol",
     "extension", "record", "union", "namespace", "module", "mixin"}
)
FUNCTION_LIKE = frozenset({"function", "method", "constructor", "macro"})
NAMESPACE_LIKE = frozenset({"namespace", "module"})  # functions inside stay functions
_WRAPPERS = frozenset({"decorated_definition", "export_statement", "template_declaration"})
_WS_RE = re.compile(r"\s+")
_COMMENT_MARKS = re.compile(r"^\s*(?:///?|/\*+|\*+/?|#+|--|;+|%+|\"\"\"|''')\s?")
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$|"
    r"\.(test|spec)\.[a-z]+$|(^|/)[^/]*Tests?\.[a-z]+$|(^|/)conftest\.py$",
    re.IGNORECASE,
)


# query matches start no deeper than this: matching is quadratic in depth (a 10,000-call chain
# took 118 s); definitions sit far shallower in any real file
_MAX_START_DEPTH = 400


@functools.lru_cache(maxsize=65536)
def is_test_path(path: str) -> bool:
    low = path.lower()
    if "test" not in low and "spec" not in low:  # every pattern names one: skip the regex scan
        return False
    return bool(_TEST_PATH.search(path))


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _collapse(text: str, limit: int = 300) -> str:
    if len(text) <= limit:
        if text.isidentifier():  # most texts are names: nothing to collapse
            return text
        if "\n" not in text and "  " not in text and "\t" not in text:
            return text.strip()
    text = _WS_RE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Def:
    node: Any
    kind: str
    name: str = ""
    scope: str = ""
    params: Any = None
    ret: Any = None
    doc: Any = None
    decorators: list[Any] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)
    pattern: int = 0  # index of the query pattern that set `kind`
    param_nodes: list[Any] = field(default_factory=list)  # @param captures (no list node)


class _Extractor:
    def __init__(self, path: str, source: bytes, spec: LanguageSpec, settings: ChunkSettings):
        self.path = path
        self.source = source
        self.spec = spec
        self.settings = settings

    def text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    # ------------------------------------------------------------------ definitions
    def query_defs(self, root: Any) -> tuple[list[_Def], list[tuple[Any, dict[str, list[Any]]]], list[dict[str, list[Any]]]]:
        from tree_sitter import QueryCursor

        query = get_query(self.spec.name)
        cursor = QueryCursor(query)
        cursor.set_max_start_depth(_MAX_START_DEPTH)
        defs: dict[tuple[int, int], _Def] = {}
        calls: list[tuple[Any, dict[str, list[Any]]]] = []
        imports: dict[int, dict[str, list[Any]]] = {}
        for pattern, caps in cursor.matches(root):
            if "call" in caps:
                calls.append((caps["call"][0], caps))
                continue
            if "import" in caps:
                node = caps["import"][0]
                entry = imports.setdefault(node.start_byte, {"import": [node]})
                for key in ("import.module", "import.name"):
                    for n in caps.get(key, ()):
                        if all(n.start_byte != m.start_byte for m in entry.get(key, ())):
                            entry.setdefault(key, []).append(n)
                continue
            for key, nodes in caps.items():
                if not key.startswith("definition."):
                    continue
                node = nodes[0]
                kind = key.split(".", 1)[1]
                d = defs.get((node.start_byte, node.end_byte))
                if d is None:
                    d = defs[(node.start_byte, node.end_byte)] = _Def(node, kind, pattern=pattern)
                elif kind == "method" or (d.kind == "decorated" and kind != "decorated"):
                    d.kind, d.pattern = kind, pattern
                elif pattern < d.pattern and d.kind != "method" and kind != "decorated":
                    d.kind, d.pattern = kind, pattern  # patterns disagree: the earliest in the file wins
                self._merge_caps(d, caps)
                break
        return list(defs.values()), calls, list(imports.values())

    def _merge_caps(self, d: _Def, caps: dict[str, list[Any]]) -> None:
        if not d.name and "name" in caps:
            d.name = _collapse(self.text(caps["name"][0]), 200)
        if not d.scope and "scope" in caps:
            d.scope = _collapse(self.text(caps["scope"][0]), 200)
        if d.params is None and "params" in caps:
            d.params = caps["params"][0]
        for p in caps.get("param", ()):
            if all(p.start_byte != x.start_byte for x in d.param_nodes):
                d.param_nodes.append(p)
        if d.ret is None and "return" in caps:
            d.ret = caps["return"][0]
        if d.doc is None and "doc" in caps:
            d.doc = caps["doc"][0]
        for dec in caps.get("decorator", ()):
            if all(dec.start_byte != x.start_byte for x in d.decorators):
                d.decorators.append(dec)
        for bases in caps.get("bases", ()):
            for child in bases.named_children:
                if "comment" in child.type or child.type in ("keyword_argument",):
                    continue
                self._add_base(d, child)
        for base in caps.get("base", ()):
            self._add_base(d, base)

    def _add_base(self, d: _Def, node: Any) -> None:
        name = _collapse(self.text(node), 120)
        if name and name not in d.bases:
            d.bases.append(name)

    def generic_defs(self, root: Any) -> list[_Def]:
        """Units for grammars without a query: named top-level nodes (and one level inside)."""
        out: list[_Def] = []

        def visit(node: Any, depth: int) -> None:
            for child in node.named_children:
                name_node = child.child_by_field_name("name")
                if name_node is not None and child.end_point[0] > child.start_point[0]:
                    out.append(_Def(child, _generic_kind(child.type), _collapse(self.text(name_node), 200)))
                    if depth == 0:
                        body = child.child_by_field_name("body")
                        if body is not None:
                            visit(body, depth + 1)

        visit(root, 0)
        return out

    # ------------------------------------------------------------------ details
    def signature(self, node: Any, start: int | None = None) -> str:
        """The definition's header; `start` skips annotations that open the node."""
        start = node.start_byte if start is None else start
        body = node.child_by_field_name("body")
        if body is not None and body.start_byte > start:
            end = start
            body_start = body.start_byte
            for child in node.children:
                if child.start_byte >= body_start:
                    break
                if "comment" not in child.type:
                    child_end = child.end_byte
                    if child_end > end:
                        end = child_end
            sig = self.source[start:end].decode("utf-8", "replace")
        else:
            sig = self.source[start : node.end_byte].decode("utf-8", "replace").lstrip().split("\n", 1)[0]
        return _collapse(sig).rstrip("{:= ").strip()

    def params(self, node: Any) -> tuple[str, ...]:
        if node is None:
            return ()
        return tuple(
            _collapse(self.text(c), 120)
            for c in node.named_children
            if "comment" not in c.type
        )

    def docstring(self, d: _Def) -> str:
        if d.doc is not None:
            return _clean_doc(self.text(d.doc))
        node = d.node
        parent = node.parent
        if parent is not None and parent.type in _WRAPPERS:
            node = parent
        # a definition alone in (or first in) a wrapper node takes the comments before the wrapper:
        # Go `type X struct`, the first class in a Ruby module body
        while (up := node.parent) is not None and up.parent is not None and (
            up.named_child_count == 1 or up.start_byte == node.start_byte
        ):
            node = up
        skip = {x.start_byte for x in d.decorators}  # sibling attributes between comment and definition
        lines: list[str] = []
        prev = node.prev_sibling
        row = node.start_point[0]
        while prev is not None and ("comment" in prev.type or prev.start_byte in skip) and prev.end_point[0] >= row - 1:
            if "comment" in prev.type:
                before = prev.prev_sibling
                if before is not None and before.end_point[1] > 0 and before.end_point[0] == prev.start_point[0]:
                    break  # a trailing comment (`x = 1  # note`, `class A:  # noqa`) is no doc
                lines.insert(0, self.text(prev).rstrip())  # Rust `///` comments end in a newline
            row = prev.start_point[0]
            prev = prev.prev_sibling
        return _clean_doc("\n".join(lines)) if lines else ""


_GENERIC_KINDS = (
    ("class", "class"), ("struct", "struct"), ("interface", "interface"), ("trait", "trait"),
    ("enum", "enum"), ("impl", "impl"), ("module", "module"), ("namespace", "namespace"),
    ("method", "method"), ("function", "function"), ("func", "function"), ("def", "function"),
    ("proc", "function"), ("macro", "macro"), ("type", "type"), ("section", "section"),
    ("rule", "rule"), ("const", "constant"), ("var", "variable"),
)


def _generic_kind(node_type: str) -> str:
    t = node_type.lower()
    for word, kind in _GENERIC_KINDS:
        if word in t:
            return kind
    return "definition"


def _clean_doc(text: str, limit: int = 1200) -> str:
    text = text.strip()
    for prefix in ('r"""', 'b"""', 'u"""', '"""', "r'''", "'''", '"', "'"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    for suffix in ('"""', "'''", '"', "'", "*/"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    lines = [_COMMENT_MARKS.sub("", line).rstrip() for line in text.splitlines()]
    cleaned = "\n".join(line for line in lines).strip()
    return cleaned[:limit]


def _innermost(starts: list[int], units: list[_UnitBuild], start: int, end: int) -> int:
    """Index of the innermost unit whose line range contains [start, end] (0 = the file)."""
    i = bisect.bisect_right(starts, start) - 1
    while i > 0:
        u = units[i]
        if u.start_line <= start and u.end_line >= end:
            return i
        i = u.parent if u.parent is not None else 0
    return 0


@dataclass
class _UnitBuild:
    parent: int | None
    kind: str
    name: str
    scope: tuple[str, ...]
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    d: _Def | None
    calls: list[CallSite] = field(default_factory=list)


def parse_source(
    path: str, source: bytes, spec: LanguageSpec | None, settings: ChunkSettings, *, plain: bool = False
) -> ParsedFile:
    """Parse one file's bytes into a ParsedFile. Never raises on bad syntax; raises ParseLimit
    for input past a safe limit of the parser. `plain`: line chunks only (no syntax tree)."""
    language = spec.name if spec is not None else "text"
    n_lines = source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)
    file_unit = _UnitBuild(None, "file", PurePosixPath(path).name, (), 1, max(n_lines, 1),
                           0, len(source), None)
    units: list[_UnitBuild] = [file_unit]
    import_refs: list[ImportRef] = []
    has_errors = False
    structured = False
    chunker = CastChunker(source, settings)
    ex: _Extractor | None = None
    file_doc = ""

    if spec is not None and spec.parseable and not plain:
        check_nesting(source, spec.name)
        ex = _Extractor(path, source, spec, settings)
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
            file_doc = _clean_doc(ex.text(first))
        groups = _heading_groups(ex, root, units) if spec.kind == "doc" and not spec.structured else []
        spans = chunker.chunk_groups(groups) if groups else chunker.chunk_tree(root)
        if spec.kind == "doc" and spec.structured:
            rows = _inner_headings(ex, root, units)
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


def _heading_groups(ex: _Extractor, root: Any, units: list[_UnitBuild]) -> list[list[Any]]:
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
        name = _collapse(ex.text(title).strip().splitlines()[0] if ex.text(title).strip() else "", 200)
        last = group[-1]
        units.append(_UnitBuild(0, "section", name or "section", (), node.start_point[0] + 1, _end_row(last) + 1,
                                node.start_byte, last.end_byte, None))
    return groups


def _inner_headings(ex: _Extractor, root: Any, units: list[_UnitBuild]) -> list[int]:
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
            units.append(_UnitBuild(parent, "section", _collapse(title[0], 200) if title else "section",
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


def _module_path(ex: _Extractor, nodes: list[Any]) -> str:
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


def _nest(units: list[_UnitBuild], defs: list[_Def], path: str) -> None:
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
            _UnitBuild(parent, kind, d.name, scope, node.start_point[0] + 1, _end_row(node) + 1,
                       node.start_byte, node.end_byte, d)
        )
        stack.append(len(units) - 1)


def _attach_calls(ex: _Extractor, units: list[_UnitBuild], call_caps: list[tuple[Any, dict[str, list[Any]]]]) -> None:
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
            CallSite(_collapse(name, 120), _collapse(receiver, 80) if receiver else "", node.start_point[0] + 1, argc)
        )


def _is_head(call: Any, d: _Def | None) -> bool:
    """Whether a call node is the head of the definition `d` (a call in the definition's own
    argument list: `def name(args)` in Elixir)."""
    parent = call.parent
    return d is not None and parent is not None and parent.type == "arguments" and parent.parent == d.node


def _finish_units(units: list[_UnitBuild], ex: _Extractor | None, path: str, file_doc: str) -> list[ParsedUnit]:
    test_path = is_test_path(path)
    out: list[ParsedUnit] = []
    for i, u in enumerate(units):
        d = u.d
        if d is None or ex is None:
            out.append(ParsedUnit(i, u.parent, u.kind, u.name, path if i == 0 else u.name, u.scope,
                                  "", (), "", (), file_doc if i == 0 else "", u.start_line,
                                  u.end_line, tuple(u.calls), (), test_path and i == 0))
            continue
        decorators = tuple(_collapse(ex.text(n), 120) for n in d.decorators)
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
                    _collapse(ex.text(n), 120) for n in sorted(d.param_nodes, key=lambda n: n.start_byte)),
                return_type=_collapse(ex.text(d.ret), 120) if d.ret is not None else "",
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
    """The header prepended to a chunk before embedding (seed 004's contextualized text)."""
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
    units: list[_UnitBuild],
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
            import_lines.append(_collapse(line.decode("utf-8", "replace"), 160))
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


@functools.cache
def unit_kinds() -> frozenset[str]:
    """Every kind of unit parsing can produce: the `@definition.KIND` captures of the tag
    queries, the kinds of the generic fallback, and `file`."""
    from coderag_tui.parsing.languages import registry

    kinds = {"file", "method", "definition"}
    kinds.update(k for _, k in _GENERIC_KINDS)
    for name in registry():
        source = query_source(name)
        if source:
            kinds.update(re.findall(r"@definition\.(\w+)", source))
    kinds.discard("decorated")  # a wrapper capture, never a unit's kind
    return frozenset(kinds)
