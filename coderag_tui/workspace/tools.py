"""The MCP tools (and a model's tools) over a workspace: the same tools and texts as over one
index, every path `repo/path`, so that each citation says which repository it is in and a
path given back (`read_lines`, `get_file_summary`) reaches its repository."""

from __future__ import annotations

import re
from typing import Any

from coderag_tui.answering.toolbox import CodeRagTools, ToolFailure
from coderag_tui.errors import CoderagError
from coderag_tui.store import read
from coderag_tui.workspace.local import WorkspaceService

# a path-like word: what a per-repository text cites (`pkg/mod.py`, `pkg/mod.py:3-9`)
_PATHLIKE = re.compile(r"(?<![\w./-])([\w.-]+(?:/[\w.-]+)*\.\w+|[\w.-]+(?:/[\w.-]+)+)(?=[:\s,)]|$)")


class WorkspaceTools(CodeRagTools):
    """`service`: a WorkspaceService made with `tree_paths=True`."""

    service: WorkspaceService

    def __init__(self, service: WorkspaceService) -> None:
        if not service.tree_paths:
            raise ValueError("the workspace tools need tree paths (repo/path)")
        super().__init__(service)

    def _index_is_empty(self) -> bool:
        try:
            return not self.service.has_index()
        except Exception as exc:  # as for one index: say it when a tool is called
            self.index_error = str(exc)
            return False

    def _rel_path(self, path: str) -> str:
        p = path.strip().replace("\\", "/")
        while p.startswith("./"):
            p = p[2:]
        return p.strip("/")

    def _one(self, path: str) -> tuple[str, Any, CodeRagTools, str]:
        """(repository, its service, its own tools, the path in it) for `repo/path`."""
        try:
            name, service, rest = self.service._split(self._rel_path(path))
        except CoderagError as exc:
            raise ToolFailure(exc.one_line()) from None
        tools = CodeRagTools(service)
        tools.ready.set()  # this workspace's tools waited for the indexes already
        return name, service, tools, rest

    def get_context(self, task: str, max_tokens: int = 6000, strategy: str = "relevance") -> str:
        """As over one index; a context across repositories cites `repo:path`, written here
        `repo/path` like every other tool's paths."""
        text = super().get_context(task, max_tokens, strategy)
        names = "|".join(re.escape(n) for n in self.service.repos)
        return re.sub(rf"(?<![\w./-])({names}):(?=[^\s:]+:\d)", r"\1/", text)

    def get_file_summary(self, path: str) -> str:
        self._wait()
        name, service, tools, rest = self._one(path)
        return _tag_paths(tools.get_file_summary(rest), name, service)

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> str:
        self._wait()
        name, service, tools, rest = self._one(path)
        text = tools.read_lines(rest, start, end)
        head, _, body = text.partition("\n")
        return f"{name}/{head}\n{body}"

    def repo_map(self, max_tokens: int = 1024) -> str:
        """Each chosen repository's map, under its name, sharing the budget."""
        self._wait()
        chosen = self.service.chosen
        share = max(64, int(max_tokens) // max(1, len(chosen)))
        parts = []
        for name, service in chosen:
            text = service.repo_map(share)
            parts.append(f"== {name} (paths below are relative to {name}/)\n{text or 'The index is empty.'}")
        return "\n\n".join(parts)


def _tag_paths(text: str, name: str, service: Any) -> str:
    """`text` with every path of the repository's index written `name/path`."""
    db = service.db

    def tag(m: re.Match[str]) -> str:
        word = m.group(1)
        return f"{name}/{word}" if read.has_file(db, word) else word

    return _PATHLIKE.sub(tag, text)
