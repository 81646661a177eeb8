"""mcp: serve the index to MCP clients (Claude Desktop, Claude Code, IDEs) over stdio."""

from __future__ import annotations

import argparse

from coderag_tui.cli.base import arguments, command, open_service, open_workspace


def _mcp_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("repo_path", nargs="*", metavar="PATH|URL",
                   help="the repository (default: the cwd's); several are served as a workspace, "
                   "every path then written repo/path")
    p.add_argument("--watch", action="store_true", help="keep the index current while serving")
    p.add_argument("-v", "--verbose", action="store_true", help="log more to stderr")


@command("mcp", "serve the index as MCP tools over stdio (search, context, symbols, callers, callees, "
         "file summaries, repo map)")
@arguments(_mcp_args)
def cmd_mcp(args: argparse.Namespace) -> int:
    from coderag_tui.mcp_server import default_log_setup, serve

    default_log_setup(args.verbose)
    paths = list(args.repo_path or [])
    args.repo_path = paths[0] if len(paths) == 1 else None
    several = len(paths) > 1 or args.workspace or (args.repo and "," in args.repo and not args.server)
    service = (open_workspace(args, paths if len(paths) > 1 else (args.repo or "").split(","), tree_paths=True)
               if several else open_service(args))
    return serve(service, watch=args.watch)
