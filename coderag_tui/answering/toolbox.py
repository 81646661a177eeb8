"""The index's tools, as the MCP server serves them and as a model that can call tools uses them.

`CodeRagTools` implements each tool over a service (the contract of `contract.py`: this layer
sits below it, so it is not imported here; the readers of the index file use the service's store) and answers text that cites `path:start-end`; a tool that cannot answer raises
ToolFailure with one line. The tools only read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from typing import Any

from coderag_tui.errors import CoderagError
from coderag_tui.models import by_tiny_model, denoted, exact_matches, summary_label

log = logging.getLogger("coderag.mcp")

INDEX_WAIT_S = 120.0  # how long a tool waits for the first index before answering "try again"
MAX_CODE_LINES = 60  # code shown per symbol by lookup_symbol
MAX_READ_LINES = 200  # lines one read_lines call returns
FILES_FIRST = 5  # files listed before the units for a question that asks for files

class ToolFailure(Exception):
    """One line for the client."""


def one_line(exc: BaseException) -> str:
    from coderag_tui.store.db import clear_error

    exc = clear_error(exc) or exc
    if isinstance(exc, CoderagError):
        return exc.one_line()
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class CodeRagTools:
    """The tool implementations over a CodeRag service (plain methods, easy to test directly)."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.ready = threading.Event()
        self.index_error = ""
        self.watcher: Any = None
        self.summaries = False  # make model summaries in the background while serving

    # ------------------------------------------------------------------ lifecycle
    def start(self, *, watch: bool = False) -> None:
        """Index in the background when the index is empty; start the watcher if asked."""
        empty = self._index_is_empty()
        if watch:  # (the interface asks only a service that watches: see contract.WATCH)
            self.watcher = self.service.watch(self._on_watch_event, initial_index=empty)
            if not empty:
                self.ready.set()
            return
        if not empty:
            self.ready.set()
            self._start_summaries()
            return
        threading.Thread(target=self._initial_index, name="coderag-mcp-index", daemon=True).start()

    def stop(self) -> None:
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception as exc:  # stopping must not turn a clean exit into a crash
                log.warning("stopping the watcher: %s", one_line(exc))
            self.watcher = None
        self.service.close()

    def _index_is_empty(self) -> bool:
        from coderag_tui.store import read

        try:
            return read.file_count(self.service.db) == 0
        except Exception as exc:
            self.index_error = one_line(exc)
            return False

    def _initial_index(self) -> None:
        try:
            log.info("indexing %s (the index is empty)", self.service.root)
            self.service.index()
            if self.service.settings.embed.enabled:
                try:
                    self.service.embed()
                except Exception as exc:  # keyword and symbol search still work without vectors
                    log.warning("embedding failed, search uses keywords only: %s", one_line(exc))
            log.info("index ready")
            self._start_summaries()
        except Exception as exc:
            self.index_error = one_line(exc)
            log.error("indexing failed: %s", self.index_error)
        finally:
            self.ready.set()

    def _on_watch_event(self, event: Any) -> None:
        phase = event.phase
        if phase == "indexed":
            self._start_summaries()
        if phase == "indexed" or phase == "error":
            if phase == "error":
                log.warning("watch: %s", event.message)
            self.ready.set()

    def _start_summaries(self) -> None:
        if self.summaries:
            try:
                self.service.start_summaries()
            except Exception as exc:  # answers and search go on without summaries
                log.warning("summaries: %s", one_line(exc))

    def _wait(self) -> None:
        if not self.ready.wait(INDEX_WAIT_S):
            from coderag_tui.store import read

            files = 0
            with contextlib.suppress(Exception):
                files = read.file_count(self.service.db)
            raise ToolFailure(f"the index is still being built ({files} files so far); try again shortly")
        if self.index_error and self._index_is_empty():
            raise ToolFailure(f"the repository could not be indexed: {self.index_error}")

    # ------------------------------------------------------------------ helpers
    def _code(self, path: str, start: int, end: int, limit: int = MAX_CODE_LINES) -> str:
        try:
            lines = self.service.read_lines(path, start, min(end, start + limit - 1))
        except CoderagError:
            return ""
        body = "\n".join(f"{start + i:>5}  {line}" for i, line in enumerate(lines))
        if end - start + 1 > limit:
            body += f"\n  ... ({end - start + 1 - limit} more lines: {path}:{start + limit}-{end})"
        return body

    def _rel_path(self, path: str) -> str:
        from coderag_tui.store import read

        p = path.strip()
        # a backslash is a Windows separator, unless the index has the path as written (the
        # repository path of a file name with a backslash or bytes that are not UTF-8)
        if "\\" in p and not read.has_file(self.service.db, p):
            p = p.replace("\\", "/")
        root = str(self.service.root).replace("\\", "/").rstrip("/") + "/"
        if p.startswith(root):
            p = p[len(root) :]
        while p.startswith("./"):
            p = p[2:]
        return p.strip("/")

    def _targets(self, name: str) -> str:
        """The definitions a name denotes (as the service resolves callers/callees)."""
        chosen = denoted(self.service.symbols(name, 50), name)
        text = ", ".join(f"{u.qualname} ({u.location})" for u in chosen[:5])
        if len(chosen) > 5:
            text += f" and {len(chosen) - 5} more"
        return text or name

    # ------------------------------------------------------------------ tools
    def search_codebase(self, query: str, limit: int = 10, language: str | None = None,
                        path_prefix: str | None = None, kind: str | None = None) -> str:
        self._wait()
        from coderag_tui.models import SearchFilters

        if not query.strip():
            raise ToolFailure("give a query")
        limit = max(1, min(int(limit), 50))
        filters = SearchFilters(language=language or None,
                                path_prefix=self._rel_path(path_prefix) if path_prefix else None,
                                kind=kind or None)
        hits = self.service.search(query, limit, filters)
        if not hits:
            return f"Nothing in the index matches {query!r}."
        out = self._files_first(query, filters)
        out.append(f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {query!r}:")
        for n, h in enumerate(hits, 1):
            u = h.unit
            start, end = (h.chunk_start, h.chunk_end) if h.chunk_start else (u.start_line, u.end_line)
            out.append(f"\n{n}. {u.path}:{u.start_line}-{u.end_line}  {u.kind} {u.qualname or u.name}"
                       f"  (score {h.score:.4f}; {', '.join(h.reasons)})")
            if u.signature:
                out.append(f"   {u.signature}")
            if u.docstring:
                out.append("   " + u.docstring.strip().splitlines()[0][:200])
            snippet = self._code(u.path, start, end, limit=12)
            if snippet:
                out.append(snippet)
        return "\n".join(out)

    def _files_first(self, query: str, filters: Any) -> list[str]:
        """For a question that asks for files ("which file handles X"): the file ranking's best
        files, listed before the code units."""
        from coderag_tui.retrieval.intent import is_file_question

        if not is_file_question(query):
            return []
        files = self.service.search_files(query, FILES_FIRST, filters)
        if not files:
            return []
        out = [f"Files for {query!r}, best first (ranked by their matching code):"]
        for n, h in enumerate(files, 1):
            best = next((r[5:] for r in h.reasons if r.startswith("best ")), "")
            out.append(f"{n}. {h.unit.path}" + (f"  (best match {best}, lines {h.chunk_start}-{h.chunk_end})"
                                                  if best else ""))
        return [*out, ""]

    def get_context(self, task: str, max_tokens: int = 6000, strategy: str = "relevance") -> str:
        self._wait()
        if not task.strip():
            raise ToolFailure("describe the task")
        from coderag_tui.retrieval.strategies import STRATEGIES

        if strategy not in STRATEGIES:
            raise ToolFailure(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
        ctx = self.service.context(task, max(200, int(max_tokens)), strategy=strategy)
        if not ctx.pieces:
            return f"No code in the index relates to {task!r}."
        sources = "\n".join(f"- {p.citation} [{p.role}] {p.title}" for p in ctx.pieces)
        return (f"Context for {task!r} ({ctx.tokens} of {ctx.budget} tokens, route: {ctx.route}).\n"
                f"Sources:\n{sources}\n\n{ctx.render()}")

    def lookup_symbol(self, name: str, limit: int = 10) -> str:
        self._wait()
        if not name.strip():
            raise ToolFailure("give a symbol name")
        units = self.service.symbols(name, max(1, min(int(limit), 50)))
        if not units:
            return f"No definition matches {name!r}."
        exact = exact_matches(units, name)
        out = [f"{len(units)} definition{'s' if len(units) != 1 else ''} for {name!r}"
               + (f" ({len(exact)} exact)" if exact else " (no exact match; closest names)") + ":"]
        for u in units:
            out.append(f"- {u.location}  {u.kind} {u.qualname}" + (f"  {u.signature}" if u.signature else ""))
        for u in (exact or units[:1])[:3]:
            out.append(f"\n{u.location}  {u.kind} {u.qualname}")
            if u.docstring:
                out.append(u.docstring.strip()[:400])
            code = self._code(u.path, u.start_line, u.end_line)
            if code:
                out.append(code)
        return "\n".join(out)

    def find_callers(self, name: str, limit: int = 50) -> str:
        self._wait()
        if not name.strip():
            raise ToolFailure("give a function or method name")
        edges = self.service.callers(name, max(1, min(int(limit), 500)))
        target = self._targets(name)
        if not edges:
            return f"No callers of {target} in the index."
        out = [f"{len(edges)} call site{'s' if len(edges) != 1 else ''} of {target}:"]
        for e in edges:
            src = e.unit
            if src is None:
                out.append(f"- ?:{e.line}  calls {e.name}")
                continue
            callee = f" -> {e.source.qualname}" if e.source is not None else ""
            out.append(f"- {src.path}:{e.line}  in {src.kind} {src.qualname} ({src.location}){callee}")
        return "\n".join(out)

    def find_callees(self, name: str, limit: int = 50) -> str:
        self._wait()
        if not name.strip():
            raise ToolFailure("give a function or method name")
        edges = self.service.callees(name, max(1, min(int(limit), 500)))
        target = self._targets(name)
        if not edges:
            return f"{target} calls nothing the index knows of."
        inside = [e for e in edges if e.unit is not None]
        outside = sorted({e.name for e in edges if e.unit is None})
        out = [f"{target} calls {len(inside)} definition{'s' if len(inside) != 1 else ''} in the repository"
               + (f" and {len(outside)} name{'s' if len(outside) != 1 else ''} outside it" if outside else "") + ":"]
        for e in inside:
            u = e.unit
            assert u is not None
            out.append(f"- {u.location}  {u.kind} {u.qualname}  (called at line {e.line})"
                       + (f"  {u.signature}" if u.signature else ""))
        if outside:
            out.append("Outside the repository (unresolved): " + ", ".join(outside))
        return "\n".join(out)

    def get_file_summary(self, path: str) -> str:
        self._wait()
        from coderag_tui.store import read

        rel = self._rel_path(path)
        db = self.service.db
        file_unit = read.file_unit(db, rel)
        if file_unit is None:
            like = read.paths_ending_with(db, rel) if 0 < len(rel) <= 1000 else []
            if len(like) == 1:
                rel = like[0]
                file_unit = read.file_unit(db, rel)
            else:
                hint = f" (did you mean {', '.join(like)}?)" if like else ""
                raise ToolFailure(f"no file {path!r} in the index{hint}")
        assert file_unit is not None
        language, lines, has_errors = read.file_facts(db, rel) or (file_unit.language, file_unit.end_line, False)
        out = [f"{rel}:1-{lines}  ({language}, {lines} lines{', has syntax errors' if has_errors else ''})"]
        from coderag_tui.store.descriptions import file_descriptions

        profile, described = file_descriptions(db, rel)
        # another model reads this: the tiny default model's guesses are left out, the rest named
        summaries = {uid: f"{text.strip()} ({summary_label(model)})" for uid, (text, model) in described.items()
                     if not by_tiny_model(model)}
        if file_unit.id in summaries:
            out.append(f"\nSummary:\n{summaries[file_unit.id]}")
        elif file_unit.docstring:
            out.append(f"\nModule docstring:\n{file_unit.docstring.strip()[:800]}")
        if profile:
            out.append(f"\nProfile: {profile}")
        outline = [u for u in read.file_outline(db, rel) if u.kind != "file"]
        if outline:
            depth: dict[int, int] = {file_unit.id: -1}
            out.append("\nOutline:")
            for u in outline:
                d = depth.get(u.parent_id or file_unit.id, -1) + 1
                depth[u.id] = d
                label = u.signature or f"{u.kind} {u.name}"
                out.append(f"{'  ' * d}- {u.location}  {label}")
                if u.id in summaries:
                    out.append(f"{'  ' * d}  summary: {summaries[u.id].strip().splitlines()[0][:300]}")
        imports = read.file_imports(db, rel)
        if imports:
            resolved = read.import_targets(db, file_unit.id)
            out.append("\nImports:")
            for module, names, line in imports:
                try:
                    listed = json.loads(names) if names else []
                except ValueError:
                    listed = []
                where = f" -> {resolved[line]}" if line in resolved else " (outside the repository)"
                out.append(f"- {rel}:{line}  {module}" + (f" ({', '.join(listed)})" if listed else "") + where)
        importers = read.importers(db, rel)
        out.append("\nImported by:" if importers else "\nImported by: no file in the repository")
        for u in importers:
            out.append(f"- {u.path}")
        tests = [e.unit for e in read.callers(db, [file_unit.id], kinds=("TESTS",)) if e.unit is not None]
        if tests:
            out.append("\nTested by: " + ", ".join(sorted({t.path for t in tests})))
        return "\n".join(out)

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> str:
        """Numbered lines of an indexed file. Files the index left out (secrets, ignored
        folders) are refused: what a tool returns may go to a remote model."""
        self._wait()
        rel = self._rel_path(path)
        from coderag_tui.store import read

        facts = read.file_facts(self.service.db, rel)
        if facts is None:
            raise ToolFailure(f"no file {path!r} in the index")
        total = facts[1]
        first = max(1, int(start))
        last = min(total, int(end) if end is not None else first + MAX_READ_LINES - 1)
        if first > total:
            raise ToolFailure(f"{rel} has {total} lines")
        if last < first:
            raise ToolFailure(f"give start <= end (got {start}-{end})")
        last = min(last, first + MAX_READ_LINES - 1)
        code = self._code(rel, first, last, limit=MAX_READ_LINES)
        return f"{rel}:{first}-{last}\n{code}"

    def repo_map(self, max_tokens: int = 1024) -> str:
        self._wait()
        text = self.service.repo_map(max(64, int(max_tokens)))
        return text or "The index is empty."


