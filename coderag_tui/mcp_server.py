"""`coderag mcp`: the index as Model Context Protocol tools, over stdio.

Tools: search_codebase, get_context, lookup_symbol, find_callers, find_callees,
get_file_summary, repo_map, read_lines (implemented in answering/toolbox.py, where a model
answering a question calls them too). Every result is text that cites `path:start-end`. The server
reads the same index file the app writes (SQLite in WAL mode; every worker thread opens its
own connection through `CodeRag.db`), indexes the repository first when the index is empty,
and with `watch=True` keeps it current while it runs.

A tool that fails answers with a tool error of one line; nothing but the protocol is written
to stdout (the SDK moves fd 1 to stderr while it serves, and we log to stderr).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from coderag_tui import __version__
from coderag_tui.answering.toolbox import CodeRagTools, ToolFailure, one_line
from coderag_tui.answering.tools import SPECS

if TYPE_CHECKING:
    from coderag_tui.contract import Service

log = logging.getLogger("coderag.mcp")

INSTRUCTIONS = """\
coderag indexes this repository with tree-sitter into a code graph (definitions, calls, \
imports, inheritance, tests) with keyword and vector search. Use search_codebase to find code \
by meaning, lookup_symbol for a name, find_callers / find_callees to follow calls, \
get_file_summary for a file's outline and dependencies, get_context to gather the code a \
task needs within a token budget, and repo_map for an overview. Results cite path:start-end."""

F = TypeVar("F", bound=Callable[..., str])


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
            raise ToolError(one_line(exc)[:500]) from None

    return wrapper  # type: ignore[return-value]


def build_server(tools: CodeRagTools, *, start: bool = False, watch: bool = False) -> Any:
    """An MCPServer with the eight coderag tools. `start`: start the tools (first index,
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
        path:start-end citations and a snippet; a question that asks for files ("which file
        handles X") gets the best files listed first."""
        return tools.search_codebase(query, limit, language, path_prefix, kind)

    @_tool
    def get_context(task: str, max_tokens: int = 6000, strategy: str = "relevance") -> str:
        """Gather the code a coding task needs (the best matches plus their callers, callees,
        class outlines, tests and metadata), packed into max_tokens, each piece headed by its
        path:start-end citation. strategy: relevance (default), importance (central code
        first), breadth (many folders and files) or depth (the best match's call chain)."""
        return tools.get_context(task, max_tokens, strategy)

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

    @_tool
    def read_lines(path: str, start: int = 1, end: int | None = None) -> str:
        """Read lines of an indexed file."""
        return tools.read_lines(path, start, end)

    for fn in (search_codebase, get_context, lookup_symbol, find_callers, find_callees,
               get_file_summary, repo_map, read_lines):
        # the descriptions a model sees while answering are the ones MCP clients see
        spec = SPECS.get(fn.__name__)
        server.add_tool(fn, description=spec.description if spec else None, annotations=ro,
                        structured_output=False)
    return server


def serve(service: Service, *, watch: bool = False) -> int:
    """Serve the tools over stdio until the client closes the connection."""
    import anyio

    from coderag_tui.contract import SUMMARIES, WATCH

    tools = service.tools()
    # a server keeps running: summaries come in the background where the service makes them
    tools.summaries = SUMMARIES in service.capabilities
    service.long_lived = True
    server = build_server(tools, start=True, watch=watch and WATCH in service.capabilities)
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
