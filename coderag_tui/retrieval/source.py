"""Reading code for context from the index: the chunks hold every line they cover; lines between
chunks (or a unit larger than its chunks) come from the file on disk when it still matches the
indexed hash."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.errors import RepoError
from coderag_tui.parsing.extract import content_hash
from coderag_tui.sources.safe_read import read_repo_file
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.retrieval_reads import context_reads


class CodeReader:
    def __init__(self, source: StoreBackend | ContextReads, root: Path | None = None) -> None:
        self.reads = context_reads(source)
        self.root = root
        self._chunks: dict[str, dict[int, str]] = {}
        self._disk: dict[str, list[str] | None] = {}

    def _chunk_lines(self, path: str) -> dict[int, str]:
        cached = self._chunks.get(path)
        if cached is not None:
            return cached
        lines: dict[int, str] = {}
        for start, text in self.reads.file_chunk_texts(path):
            for i, line in enumerate(text.split("\n")):
                lines.setdefault(start + i, line)
        self._chunks[path] = lines
        return lines

    def _disk_lines(self, path: str) -> list[str] | None:
        if path in self._disk:
            return self._disk[path]
        lines = None
        if self.root is not None:
            indexed = self.reads.file_hash(path)
            try:
                # through no link, as every reader; only what still matches the index is used
                data = read_repo_file(self.root, path) if indexed is not None else b""
                if indexed is not None and content_hash(data) == indexed:
                    lines = data.decode("utf-8", "replace").split("\n")
            except RepoError:
                lines = None
        self._disk[path] = lines
        return lines

    def lines(self, path: str, start: int, end: int) -> list[tuple[int, str]]:
        """Numbered lines start..end (inclusive) as indexed; unknown lines are left out."""
        have = self._chunk_lines(path)
        out: list[tuple[int, str]] = []
        disk: list[str] | None = None
        for n in range(start, end + 1):
            text = have.get(n)
            if text is None:
                if disk is None:
                    disk = self._disk_lines(path) or []
                if 0 < n <= len(disk):
                    text = disk[n - 1]
            if text is not None:
                out.append((n, text))
        while out and not out[-1][1].strip():
            out.pop()
        return out

    def text(self, path: str, start: int, end: int) -> str:
        return "\n".join(t for _, t in self.lines(path, start, end))
