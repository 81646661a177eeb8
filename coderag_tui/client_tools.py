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
        raise ToolFailure("file summaries are not available through a server yet; use lookup_symbol "
                          "or read_lines")

    def repo_map(self, max_tokens: int = 1024) -> str:
        raise ToolFailure("the repo map is not available through a server yet; use search_codebase")
