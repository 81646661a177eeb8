"""`coderag mcp`: the index as Model Context Protocol tools, over stdio.

Tools: search_codebase, get_context, lookup_symbol, find_callers, find_callees,
get_file_summary, repo_map. Every result is text that cites `path:start-end`. The server
reads the same index file the app writes (SQLite in WAL mode; every worker thread opens its
own connection through `CodeRag.db`), indexes the repository first when the index is empty,
and with `watch=True` keeps it current while it runs.

A tool that fails answers with a tool error of one line; nothing but the protocol is written
to stdout (the SDK moves fd 1 to stderr while it serves, and we log to stderr).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from coderag_tui import __version__
from coderag_tui.errors import CoderagError

log = logging.getLogger("coderag.mcp")

INSTRUCTIONS = """\
coderag indexes this repository with tree-sitter into a code graph (definitions, calls, \
imports, inheritance, tests) with keyword and vector search. Use search_codebase to find code \
by meaning, lookup_symbol for a name, find_callers / find_callees to follow calls, \
get_file_summary for a file's outline and dependencies, get_context to gather the code a \
task needs within a token budget, and repo_map for an overview. Results cite path:start-end."""

INDEX_WAIT_S = 120.0  # how long a tool waits for the first index before answering "try again"
MAX_CODE_LINES = 60  # code shown per symbol by lookup_symbol

F = TypeVar("F", bound=Callable[..., str])


class ToolFailure(Exception):
    """One line for the client."""


def _one_line(exc: BaseException) -> str:
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

    # ------------------------------------------------------------------ lifecycle
    def start(self, *, watch: bool = False) -> None:
        """Index in the background when the index is empty; start the watcher if asked."""
        empty = self._index_is_empty()
        if watch and hasattr(self.service, "watch"):
            self.watcher = self.service.watch(self._on_watch_event, initial_index=empty)
            if not empty:
                self.ready.set()
            return
        if not empty:
            self.ready.set()
            return
        threading.Thread(target=self._initial_index, name="coderag-mcp-index", daemon=True).start()

    def stop(self) -> None:
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception as exc:  # stopping must not turn a clean exit into a crash
                log.warning("stopping the watcher: %s", _one_line(exc))
            self.watcher = None
        close = getattr(self.service, "close", None)
        if close is not None:
            close()

    def _index_is_empty(self) -> bool:
        try:
            return int(self.service.db.scalar("SELECT count(*) FROM files", default=0)) == 0
        except Exception as exc:
            self.index_error = _one_line(exc)
            return False

    def _initial_index(self) -> None:
        try:
            log.info("indexing %s (the index is empty)", self.service.root)
            self.service.index()
            embed = getattr(self.service, "embed", None)
            if embed is not None and self.service.settings.embed.enabled:
                try:
                    embed()
                except Exception as exc:  # keyword and symbol search still work without vectors
                    log.warning("embedding failed, search uses keywords only: %s", _one_line(exc))
            log.info("index ready")
        except Exception as exc:
            self.index_error = _one_line(exc)
            log.error("indexing failed: %s", self.index_error)
        finally:
            self.ready.set()

    def _on_watch_event(self, event: Any) -> None:
        phase = getattr(event, "phase", "")
        if phase == "indexed" or phase == "error":
            if phase == "error":
                log.warning("watch: %s", getattr(event, "message", ""))
            self.ready.set()

    def _wait(self) -> None:
        if not self.ready.wait(INDEX_WAIT_S):
            files = 0
            with contextlib.suppress(Exception):
                files = int(self.service.db.scalar("SELECT count(*) FROM files", default=0))
            raise ToolFailure(f"the index is still being built ({files} files so far); try again shortly")
        if self.index_error and self._index_is_empty():
            raise ToolFailure(f"the repository could not be indexed: {self.index_error}")

    def _need(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.service, name, None)
        if fn is None:
            raise ToolFailure(f"{name} is not available in this build of coderag")
        return fn

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
        p = path.strip().replace("\\", "/")
        root = str(self.service.root).replace("\\", "/").rstrip("/") + "/"
        if p.startswith(root):
            p = p[len(root) :]
        while p.startswith("./"):
            p = p[2:]
        return p.strip("/")

    def _targets(self, name: str) -> str:
        """The definitions a name denotes (as the service resolves callers/callees)."""
        units = self.service.symbols(name, 50)
        q = name.strip().rstrip("()")
        exact = [u for u in units if u.name == q or u.qualname == q or u.qualname.endswith("." + q)]
        chosen = exact or units[:1]
        text = ", ".join(f"{u.qualname} ({u.location})" for u in chosen[:5])
        if len(chosen) > 5:
            text += f" and {len(chosen) - 5} more"
        return text or name

    # ------------------------------------------------------------------ tools
    def search_codebase(self, query: str, limit: int = 10, language: str | None = None,
                        path_prefix: str | None = None, kind: str | None = None) -> str:
        self._wait()
        search = self._need("search")
        from coderag_tui.models import SearchFilters

        if not query.strip():
            raise ToolFailure("give a query")
        limit = max(1, min(int(limit), 50))
        filters = SearchFilters(language=language or None,
                                path_prefix=self._rel_path(path_prefix) if path_prefix else None,
                                kind=kind or None)
        hits = search(query, limit, filters)
        if not hits:
            return f"Nothing in the index matches {query!r}."
        out = [f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {query!r}:"]
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

    def get_context(self, task: str, max_tokens: int = 6000) -> str:
        self._wait()
        context = self._need("context")
        if not task.strip():
            raise ToolFailure("describe the task")
        ctx = context(task, max(200, int(max_tokens)))
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
        q = name.strip().rstrip("()")
        exact = [u for u in units if u.name == q or u.qualname == q or u.qualname.endswith("." + q)]
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
            like = [r[0] for r in db.rows("SELECT path FROM files WHERE path LIKE ? ORDER BY length(path) LIMIT 5",
                                          ("%" + rel,))] if rel else []
            if len(like) == 1:
                rel = like[0]
                file_unit = read.file_unit(db, rel)
            else:
                hint = f" (did you mean {', '.join(like)}?)" if like else ""
                raise ToolFailure(f"no file {path!r} in the index{hint}")
        assert file_unit is not None
        row = db.one("SELECT language, lines, has_errors FROM files WHERE path=?", (rel,))
        language, lines, has_errors = row if row else (file_unit.language, file_unit.end_line, 0)
        out = [f"{rel}:1-{lines}  ({language}, {lines} lines{', has syntax errors' if has_errors else ''})"]
        from coderag_tui.store.descriptions import file_descriptions

        profile, summaries = file_descriptions(db, rel)
        if file_unit.id in summaries:
            out.append(f"\nSummary:\n{summaries[file_unit.id].strip()}")
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
        imports = db.rows("SELECT i.module, i.names, i.line FROM imports i JOIN files f ON f.id=i.file_id "
                          "WHERE f.path=? ORDER BY i.line", (rel,))
        if imports:
            resolved = {int(r[0]): r[1] for r in db.rows(
                "SELECT e.line, tf.path FROM edges e JOIN units t ON t.id=e.dst JOIN files tf ON tf.id=t.file_id "
                "WHERE e.kind='IMPORTS' AND e.src=?", (file_unit.id,))}
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

    def repo_map(self, max_tokens: int = 1024) -> str:
        self._wait()
        repo_map = self._need("repo_map")
        text = repo_map(max(64, int(max_tokens)))
        return text or "The index is empty."


def _tool(fn: F) -> F:
    """Run a tool; turn any failure into a one-line tool error (never a crash)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            log.debug("tool %s failed", fn.__name__, exc_info=True)
            raise ToolError(_one_line(exc)[:500]) from None

    return wrapper  # type: ignore[return-value]


def build_server(tools: CodeRagTools, *, start: bool = False, watch: bool = False) -> Any:
    """An MCPServer with the seven coderag tools. `start`: start the tools (first index,
    watcher) when the server starts serving (after the SDK has claimed stdout, so nothing
    they print can reach the wire) and stop them when it ends."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    @contextlib.asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        tools.start(watch=watch)
        try:
            yield {}
        finally:
            tools.stop()

    server = MCPServer("coderag", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING",
                       lifespan=lifespan if start else None)
    ro = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @_tool
    def search_codebase(query: str, limit: int = 10, language: str | None = None,
                        path_prefix: str | None = None, kind: str | None = None) -> str:
        """Search the codebase for code relevant to a natural-language query or a name (hybrid:
        keywords + vectors + symbols + call graph). Optional filters: language (python, go, ...),
        path_prefix (a folder), kind (function, method, class, ...). Returns ranked units with
        path:start-end citations and a snippet."""
        return tools.search_codebase(query, limit, language, path_prefix, kind)

    @_tool
    def get_context(task: str, max_tokens: int = 6000) -> str:
        """Gather the code a coding task needs (the best matches plus their callers, callees,
        class outlines, tests and metadata), packed into max_tokens, each piece headed by its
        path:start-end citation."""
        return tools.get_context(task, max_tokens)

    @_tool
    def lookup_symbol(name: str) -> str:
        """Look up a function, method, class or constant by name (exact, qualified like
        Class.method, or fuzzy): its definitions with path:start-end and the code of the best."""
        return tools.lookup_symbol(name)

    @_tool
    def find_callers(name: str) -> str:
        """Every call site of a function or method (who calls it), as path:line with the
        calling unit's path:start-end."""
        return tools.find_callers(name)

    @_tool
    def find_callees(name: str) -> str:
        """What a function or method calls: definitions in the repository (path:start-end) and
        names outside it."""
        return tools.find_callees(name)

    @_tool
    def get_file_summary(path: str) -> str:
        """What a file is: its stored summary when there is one, its outline (every class and
        function with path:start-end), its imports, the files that import it and its tests."""
        return tools.get_file_summary(path)

    @_tool
    def repo_map(max_tokens: int = 1024) -> str:
        """A map of the repository: the signatures of its most referenced definitions in its most
        central files, within max_tokens."""
        return tools.repo_map(max_tokens)

    for fn in (search_codebase, get_context, lookup_symbol, find_callers, find_callees,
               get_file_summary, repo_map):
        server.add_tool(fn, annotations=ro, structured_output=False)
    return server


def serve(service: Any, *, watch: bool = False) -> int:
    """Serve the tools over stdio until the client closes the connection."""
    import anyio

    tools = CodeRagTools(service)
    server = build_server(tools, start=True, watch=watch)
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        pass
    finally:
        tools.stop()  # a no-op when the lifespan already stopped them
    return 0


def default_log_setup(verbose: bool = False) -> None:
    """Our log lines go to stderr (stdout belongs to the protocol)."""
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("coderag mcp: %(message)s"))
    root = logging.getLogger("coderag")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
