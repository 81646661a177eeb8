"""Reading one parsed file's syntax tree: the definitions a tag query (or, without one, the
named top-level nodes) finds, and each definition's signature, parameters and doc comment."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from coderag_tui.config import ChunkSettings
from coderag_tui.parsing.kinds import generic_kind
from coderag_tui.parsing.languages import LanguageSpec, get_query
from coderag_tui.parsing.records import CallSite

_WRAPPERS = frozenset({"decorated_definition", "export_statement", "template_declaration"})
_WS_RE = re.compile(r"\s+")
_COMMENT_MARKS = re.compile(r"^\s*(?:///?|/\*+|\*+/?|#+|--|;+|%+|\"\"\"|''')\s?")


# query matches start no deeper than this: matching is quadratic in depth (a 10,000-call chain
# took 118 s); definitions sit far shallower in any real file
_MAX_START_DEPTH = 400


def collapse(text: str, limit: int = 300) -> str:
    if len(text) <= limit:
        if text.isidentifier():  # most texts are names: nothing to collapse
            return text
        if "\n" not in text and "  " not in text and "\t" not in text:
            return text.strip()
    text = _WS_RE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TRAILING_COMMA = re.compile(r",[ \t]*(?:#[^\n]*)?\n\s*([)\]}])")
_AFTER_OPEN = re.compile(r"([(\[{])[ \t]*\n\s*")
_BEFORE_CLOSE = re.compile(r"[ \t]*\n\s*([)\]}])")


def joined(header: str) -> str:
    """A header written over several lines as it is written on one: `def f(\n    a,\n)` is
    `def f(a)`, not `def f( a, )` (what collapsing its whitespace alone gives)."""
    if "\n" not in header:
        return header
    header = _TRAILING_COMMA.sub(r"\1", header)
    header = _AFTER_OPEN.sub(r"\1", header)
    return _BEFORE_CLOSE.sub(r"\1", header)


@dataclass
class Definition:
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


class Extractor:
    def __init__(self, path: str, source: bytes, spec: LanguageSpec, settings: ChunkSettings):
        self.path = path
        self.source = source
        self.spec = spec
        self.settings = settings

    def text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    # ------------------------------------------------------------------ definitions
    def query_defs(self, root: Any) -> tuple[list[Definition], list[tuple[Any, dict[str, list[Any]]]], list[dict[str, list[Any]]]]:
        from tree_sitter import QueryCursor

        query = get_query(self.spec.name)
        cursor = QueryCursor(query)
        cursor.set_max_start_depth(_MAX_START_DEPTH)
        defs: dict[tuple[int, int], Definition] = {}
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
                    d = defs[(node.start_byte, node.end_byte)] = Definition(node, kind, pattern=pattern)
                elif kind == "method" or (d.kind == "decorated" and kind != "decorated"):
                    d.kind, d.pattern = kind, pattern
                elif pattern < d.pattern and d.kind != "method" and kind != "decorated":
                    d.kind, d.pattern = kind, pattern  # patterns disagree: the earliest in the file wins
                self._merge_caps(d, caps)
                break
        return list(defs.values()), calls, list(imports.values())

    def _merge_caps(self, d: Definition, caps: dict[str, list[Any]]) -> None:
        if not d.name and "name" in caps:
            d.name = collapse(self.text(caps["name"][0]), 200)
        if not d.scope and "scope" in caps:
            d.scope = collapse(self.text(caps["scope"][0]), 200)
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

    def _add_base(self, d: Definition, node: Any) -> None:
        name = collapse(self.text(node), 120)
        if name and name not in d.bases:
            d.bases.append(name)

    def generic_defs(self, root: Any) -> list[Definition]:
        """Units for grammars without a query: named top-level nodes (and one level inside)."""
        out: list[Definition] = []

        def visit(node: Any, depth: int) -> None:
            for child in node.named_children:
                name_node = child.child_by_field_name("name")
                if name_node is not None and child.end_point[0] > child.start_point[0]:
                    out.append(Definition(child, generic_kind(child.type), collapse(self.text(name_node), 200)))
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
        return collapse(joined(sig)).rstrip("{:= ").strip()

    def params(self, node: Any) -> tuple[str, ...]:
        if node is None:
            return ()
        return tuple(
            collapse(self.text(c), 120)
            for c in node.named_children
            if "comment" not in c.type
        )

    def docstring(self, d: Definition) -> str:
        if d.doc is not None:
            return clean_doc(self.text(d.doc))
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
                    break  # a trailing comment (`x = 1  # note`, a lint marker after `class A:`) is no doc
                lines.insert(0, self.text(prev).rstrip())  # Rust `///` comments end in a newline
            row = prev.start_point[0]
            prev = prev.prev_sibling
        return clean_doc("\n".join(lines)) if lines else ""


def clean_doc(text: str, limit: int = 1200) -> str:
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


@dataclass
class UnitBuild:
    parent: int | None
    kind: str
    name: str
    scope: tuple[str, ...]
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    d: Definition | None
    calls: list[CallSite] = field(default_factory=list)

