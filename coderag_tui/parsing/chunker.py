"""cAST chunking: split-then-merge over the syntax tree, sized by non-whitespace characters.

Siblings are packed greedily up to `target`; a node larger than `max` is split into its
children (recursively; a leaf that is still too large is split by lines); chunks under `min`
are merged into a neighbour when the pair stays within `max` (as astchunk does).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coderag_tui.config import ChunkSettings

_NWS_TABLE = bytes(0 if c in b" \t\r\n\f\v" else 1 for c in range(256))  # byte -> is non-whitespace


def nws_prefix(source: bytes) -> np.ndarray:
    """prefix[i] = number of non-whitespace bytes in source[:i].

    uint32, as tree-sitter's own byte offsets: half the memory of int64 to fill and to write,
    ~30% less time for Django's files (0.15-0.17 s against 0.22-0.28 s)."""
    arr = np.frombuffer(source.translate(_NWS_TABLE), dtype=np.uint8)
    out = np.empty(len(arr) + 1, dtype=np.uint32)
    out[0] = 0
    np.cumsum(arr, out=out[1:])
    return out


def line_bounds(source: bytes) -> tuple[list[int], list[int]]:
    """(start, end) byte offsets of each line of source.split(b"\\n"), without the newline."""
    newlines = np.flatnonzero(np.frombuffer(source, dtype=np.uint8) == 10)
    starts = [0, *(newlines + 1).tolist()]
    ends = [*newlines.tolist(), len(source)]
    return starts, ends


@dataclass
class Span:
    """A chunk under construction: a line range (0-based rows, inclusive) and its size."""

    start_row: int
    end_row: int
    size: int
    kinds: list[str]


def _line_spans(
    line_sizes: Sequence[int], start_row: int, end_row: int, target: int, kind: str
) -> list[Span]:
    spans: list[Span] = []
    cur_start, cur_size = start_row, 0
    for row in range(start_row, end_row + 1):
        cur_size += line_sizes[row]
        if cur_size >= target:
            spans.append(Span(cur_start, row, cur_size, [kind]))
            cur_start, cur_size = row + 1, 0
    if cur_start <= end_row:
        spans.append(Span(cur_start, end_row, cur_size, [kind]))
    return spans


class CastChunker:
    def __init__(self, source: bytes, settings: ChunkSettings) -> None:
        self.source = source
        self.settings = settings
        self.prefix = nws_prefix(source)
        self._nws = self.prefix.data  # a memoryview: indexing it gives Python ints, much faster than numpy's
        self._line_sizes: list[int] | None = None

    def size(self, node: Any) -> int:
        nws = self._nws
        return int(nws[node.end_byte] - nws[node.start_byte])

    @property
    def line_sizes(self) -> list[int]:
        if self._line_sizes is None:
            starts, ends = line_bounds(self.source)
            self._line_sizes = (self.prefix[ends] - self.prefix[starts]).tolist()
        return self._line_sizes

    def chunk_tree(self, root: Any) -> list[Span]:
        total = self.size(root)
        if total <= self.settings.max:
            if total == 0:
                return []
            return [Span(root.start_point[0], _end_row(root), total, [root.type])]
        spans = self._pack(root.children)
        return self._merge_small(spans)

    def chunk_groups(self, groups: Sequence[Sequence[Any]]) -> list[Span]:
        """Sibling nodes packed group by group (a document's sections): no chunk spans two
        groups, except small ones merged into a neighbour."""
        spans: list[Span] = []
        for group in groups:
            spans.extend(self._pack(group))
        return self._merge_small(spans)

    def split_at(self, spans: list[Span], rows: Sequence[int]) -> list[Span]:
        """Spans cut before each of the given rows (headings) that falls inside one."""
        sizes = self.line_sizes
        out: list[Span] = []
        for span in spans:
            cuts = [r for r in rows if span.start_row < r <= span.end_row]
            start = span.start_row
            for r in [*cuts, span.end_row + 1]:
                if r > start:
                    out.append(Span(start, r - 1, sum(sizes[start:r]), list(span.kinds)))
                start = r
        return [s for s in out if s.size > 0]

    def chunk_lines(self, n_lines: int) -> list[Span]:
        spans = _line_spans(self.line_sizes, 0, max(n_lines - 1, 0), self.settings.target, "lines")
        return self._merge_small([s for s in spans if s.size > 0])

    # ---------------------------------------------------------------- internals
    def _pack(self, nodes: Sequence[Any]) -> list[Span]:
        # iterative (a stack of sibling iterators): a node nested thousands deep (a long call
        # chain, generated code) must not exhaust Python's recursion limit
        target, maximum = self.settings.target, self.settings.max
        nws = self._nws
        out: list[Span] = []
        cur: Span | None = None
        stack: list[Iterator[Any]] = [iter(nodes)]
        while stack:
            for node in stack[-1]:  # hot: one read of each node attribute
                size = nws[node.end_byte] - nws[node.start_byte]
                if size == 0:
                    continue
                start_row = node.start_point[0]
                end_row, end_col = node.end_point
                if end_col == 0 and end_row > start_row:  # _end_row, inlined
                    end_row -= 1
                if size > maximum:
                    if cur is not None:
                        out.append(cur)
                        cur = None
                    children = node.children
                    if children:
                        stack.append(iter(children))
                        break  # pack the children, then go on with this node's siblings
                    out.extend(_line_spans(self.line_sizes, start_row, end_row, target, node.type))
                    continue
                if cur is not None and cur.size + size > target:
                    out.append(cur)
                    cur = None
                if cur is None:
                    cur = Span(start_row, end_row, size, [node.type])
                else:
                    if end_row > cur.end_row:
                        cur.end_row = end_row
                    cur.size += size
                    kinds = cur.kinds
                    if len(kinds) < 6:
                        kind = node.type
                        if kind not in kinds:
                            kinds.append(kind)
            else:  # these siblings are done
                stack.pop()
                if cur is not None:
                    out.append(cur)
                    cur = None
        return out

    def _merge_small(self, spans: list[Span]) -> list[Span]:
        if not spans:
            return spans
        minimum, maximum = self.settings.min, self.settings.max
        merged: list[Span] = [spans[0]]
        for span in spans[1:]:
            last = merged[-1]
            if (span.size < minimum or last.size < minimum) and last.size + span.size <= maximum:
                last.end_row = max(last.end_row, span.end_row)
                last.size += span.size
                for k in span.kinds:
                    if len(last.kinds) < 6 and k not in last.kinds:
                        last.kinds.append(k)
            elif span.start_row <= last.end_row and span.end_row <= last.end_row:
                last.size += span.size  # entirely inside the previous line range
            else:
                merged.append(span)
        # Ranges are whole lines: make them disjoint (a node may end on the row the next starts).
        for prev, nxt in zip(merged, merged[1:], strict=False):
            if nxt.start_row <= prev.end_row:
                nxt.start_row = prev.end_row + 1
        return [s for s in merged if s.start_row <= s.end_row]


def _end_row(node: Any) -> int:
    row, col = node.end_point
    # A node that ends at column 0 ended with a newline: its last line is the previous row.
    if col == 0 and row > node.start_point[0]:
        return int(row) - 1
    return int(row)
