"""mcp: serve the index to MCP clients (Claude Desktop, Claude Code, IDEs) over stdio."""

from __future__ import annotations

import argparse

from coderag_tui.cli.base import add_path, arguments, command, open_service, refuse_store


def _mcp_args(p: argparse.ArgumentParser) -> None:
    add_path(p)
    p.add_argument("--watch", action="store_true", help="keep the index current while serving")
    p.add_argument("-v", "--verbose", action="store_true", help="log more to stderr")


@command("mcp", "serve the index as MCP tools over stdio (search, context, symbols, callers, callees, "
         "file summaries, repo map)")
@arguments(_mcp_args)
def cmd_mcp(args: argparse.Namespace) -> int:
    from coderag_tui.mcp_server import default_log_setup, serve

    default_log_setup(args.verbose)
    service = open_service(args)
    refuse_store(service, "coderag mcp", "serve it (coderag serve --store URL PATH), then coderag mcp --server URL")
    return serve(service, watch=args.watch)
