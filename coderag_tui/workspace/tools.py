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
    """`service`: a WorkspaceService made with `tree_paths=True`. `sep`: between a repository
    and a path in what the tools write: "/" (the MCP server, like the app's tree) or ":" (an
    answer across repositories, whose context cites `repo:path`)."""

    service: WorkspaceService

    def __init__(self, service: WorkspaceService, sep: str = "/") -> None:
        if not service.tree_paths:
            raise ValueError("the workspace tools need tree paths (repo/path)")
        if sep not in ("/", ":"):
            raise ValueError("sep is '/' or ':'")
        super().__init__(service)
        self.sep = sep

    def _out(self, text: str) -> str:
        """`text` with each `repo/path` or `repo:path` citation written with `sep`."""
        names = "|".join(re.escape(n) for n in self.service.repos)
        other = ":" if self.sep == "/" else "/"
        return re.sub(rf"(?<![\w./-])({names}){re.escape(other)}(?=[^\s:]+:\d)", rf"\1{self.sep}", text)

    def search_codebase(self, query: str, limit: int = 10, language: str | None = None,
                        path_prefix: str | None = None, kind: str | None = None) -> str:
        return self._out(super().search_codebase(query, limit, language, path_prefix, kind))

    def lookup_symbol(self, name: str, limit: int = 10) -> str:
        return self._out(super().lookup_symbol(name, limit))

    def find_callers(self, name: str, limit: int = 50) -> str:
        return self._out(super().find_callers(name, limit))

    def find_callees(self, name: str, limit: int = 50) -> str:
        return self._out(super().find_callees(name, limit))

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
        return self._out(super().get_context(task, max_tokens, strategy))

    def get_file_summary(self, path: str) -> str:
        self._wait()
        name, service, tools, rest = self._one(path)
        return _tag_paths(tools.get_file_summary(rest), name, service, self.sep)

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> str:
        self._wait()
        name, service, tools, rest = self._one(path)
        text = tools.read_lines(rest, start, end)
        head, _, body = text.partition("\n")
        return f"{name}{self.sep}{head}\n{body}"

    def repo_map(self, max_tokens: int = 1024) -> str:
        """Each chosen repository's map, under its name, sharing the budget."""
        self._wait()
        chosen = self.service.chosen
        share = max(64, int(max_tokens) // max(1, len(chosen)))
        parts = []
        for name, service in chosen:
            text = service.repo_map(share)
            parts.append(f"== {name} (paths below are relative to {name}{self.sep})\n{text or 'The index is empty.'}")
        return "\n\n".join(parts)


def _tag_paths(text: str, name: str, service: Any, sep: str) -> str:
    """`text` with every path of the repository's index written `name{sep}path`."""
    db = service.db

    def tag(m: re.Match[str]) -> str:
        word = m.group(1)
        return f"{name}{sep}{word}" if read.has_file(db, word) else word

    return _PATHLIKE.sub(tag, text)
