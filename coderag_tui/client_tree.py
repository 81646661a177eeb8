"""The app through a server that was given no repository (`coderag --server URL`): every
repository the server serves, each at the top of the tree, as `coderag A B` shows local ones.

Paths are `repo/path` (an answer across repositories cites `repo:path`; both are routed back
to their repository); searches, symbols and answers span them all.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from coderag_tui.client import RemoteCodeRag
from coderag_tui.errors import RepoError
from coderag_tui.models import EdgeRef, FileState, UnitRef
from coderag_tui.wire import decode


def for_the_app(client: RemoteCodeRag) -> RemoteCodeRag:
    """The client the app opens: as given when it names repositories; else the server's only
    repository, or a tree of all of them."""
    if client.repos:
        return client
    names = [name for name, _ in client.statuses()]
    if len(names) <= 1:
        return RemoteCodeRag(client.url, client.token, names, client.settings)
    return ServedTree(client.url, client.token, names, client.settings)


class ServedTree(RemoteCodeRag):
    def __init__(self, url: str, token: str, repos: list[str], settings: Any) -> None:
        super().__init__(url, token, repos, settings)
        self.root = Path(self.display_name)

    def _split(self, path: str) -> tuple[str, str]:
        """(repository, the path in it) of `repo/path` or `repo:path`."""
        for sep in ("/", ":"):
            head, found, rest = path.partition(sep)
            if found and head in self.repos:
                return head, rest
        raise RepoError(f"{path!r} is in no repository of this server", "repositories: " + ", ".join(self.repos))

    @staticmethod
    def _unit(unit: UnitRef | None) -> Any:
        return dataclasses.replace(unit, path=f"{unit.repo}/{unit.path}") if unit is not None and unit.repo else unit

    def files(self) -> list[FileState]:
        out: list[FileState] = []
        for name in self.repos:
            doc = self._send("GET", "/files", params={"repo": name})
            out += [dataclasses.replace(f, path=f"{name}/{f.path}") for f in (decode(FileState, x) for x in doc["files"])]
        return out

    def outline(self, path: str) -> list[UnitRef]:
        name, rest = self._split(path)
        doc = self._send("GET", "/outline", params={"repo": name, "path": rest})
        return [self._unit(dataclasses.replace(decode(UnitRef, u), repo=name)) for u in doc["units"]]

    def file_lines(self, path: str, start: int = 1, end: int | None = None) -> tuple[int, list[str]]:
        name, rest = self._split(path)
        doc = self._send("GET", "/lines", params={"repo": name, "path": rest, "start": start,
                                                  "end": end if end is not None else start + 399})
        return int(doc["total"]), [str(line) for line in doc["lines"]]

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return [self._unit(u) for u in super().symbols(name, limit)]

    def _edges(self, edges: list[EdgeRef]) -> list[EdgeRef]:
        return [dataclasses.replace(e, unit=self._unit(e.unit), source=self._unit(e.source)) for e in edges]

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self._edges(super().callers(name, limit))

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self._edges(super().callees(name, limit))

    def tests_for(self, name: str) -> list[EdgeRef]:
        return self._edges(super().tests_for(name))
