"""The MCP tools over a server's client (`coderag mcp --server URL`): the same tools and
texts as over a local index, with what needs the index file itself asked of the server."""

from __future__ import annotations

from coderag_tui.answering.toolbox import MAX_READ_LINES, CodeRagTools, ToolFailure
from coderag_tui.client import RemoteCodeRag


class RemoteTools(CodeRagTools):
    service: RemoteCodeRag

    def _index_is_empty(self) -> bool:
        return False  # the server indexed its repositories before it listened

    def _rel_path(self, path: str) -> str:
        p = path.strip().replace("\\", "/")
        while p.startswith("./"):
            p = p[2:]
        return p

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> str:
        rel = self._rel_path(path)
        first = max(1, int(start))
        last = int(end) if end is not None else first + MAX_READ_LINES - 1
        if last < first:
            raise ToolFailure(f"give start <= end (got {start}-{end})")
        last = min(last, first + MAX_READ_LINES - 1)
        total, lines = self.service.file_lines(rel, first, last)
        if first > total:
            raise ToolFailure(f"{rel} has {total} lines")
        body = "\n".join(f"{first + i:>5}  {line}" for i, line in enumerate(lines))
        return f"{rel}:{first}-{first + len(lines) - 1}\n{body}"

    def get_file_summary(self, path: str) -> str:
        """The file's line count, summary, profile and outline (each unit's summary), from the
        server's descriptions and outline of it."""
        rel = self._rel_path(path)
        found = [d for d in self.service.descriptions([rel]) if d.path == rel]
        if not found:
            raise ToolFailure(f"no file {path!r} in the index")
        d = found[0]
        out = [f"{rel}:1-{d.lines}  ({d.language}, {d.lines} lines)"]
        if d.summary:
            out.append(f"\nSummary:\n{d.summary.strip()}")
        if d.profile:
            out.append(f"\nProfile: {d.profile}")
        summaries = {(u.qualname, u.line): u.summary for u in d.units if u.summary}
        units = [u for u in self.service.outline(rel) if u.kind != "file"]
        if units:
            depth: dict[int, int] = {}
            out.append("\nOutline:")
            for u in units:
                level = depth.get(u.parent_id or 0, -1) + 1
                depth[u.id] = level
                out.append(f"{'  ' * level}- {u.location}  {u.signature or f'{u.kind} {u.name}'}")
                summary = summaries.get((u.qualname, u.start_line), "")
                if summary:
                    out.append(f"{'  ' * level}  summary: {summary.strip().splitlines()[0][:300]}")
        return "\n".join(out)

