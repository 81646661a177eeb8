"""index, status, symbol, callers, callees, and the app itself (tui)."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli import render
from coderag_tui.cli.base import (
    arguments,
    command,
    is_tty,
    open_service,
    print_json,
    progress_printer,
)
from coderag_tui.models import to_dict


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="repository folder or URL (default: --repo or the cwd)")
    p.add_argument("--rebuild", action="store_true", help="drop the index and build it again")
    p.add_argument("--no-embed", action="store_true", help="stop after the structural index")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("index", "build or update the index of a repository")
@arguments(_index_args)
def cmd_index(args: argparse.Namespace) -> int:
    service = open_service(args, args.path)
    bar = progress_printer("index")
    summary = service.index(rebuild=args.rebuild, progress=bar)
    bar.close()
    if summary.recovered:
        print(f"coderag: {summary.recovered}", file=sys.stderr)
    embed = getattr(service, "embed", None)
    embed_summary = None
    if embed is not None and not args.no_embed and service.settings.embed.enabled:
        bar = progress_printer("embed")
        embed_summary = embed(progress=bar)
        bar.close()
    if args.json:
        out = to_dict(summary)
        if embed_summary is not None:
            out["embedding"] = to_dict(embed_summary) if hasattr(embed_summary, "__dataclass_fields__") else embed_summary
        print_json(out)
    else:
        print(render.summary_text(summary))
        if embed_summary is not None:
            print(getattr(embed_summary, "text", lambda: str(embed_summary))())
    return 0


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


@command("status", "what the index holds: files by language, units, chunks, edges, skips, size")
@arguments(_json_arg)
def cmd_status(args: argparse.Namespace) -> int:
    st = open_service(args).status()
    if args.json:
        print_json(st)
    else:
        print(render.status_text(st))
    return 0


def _name_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a symbol name: QuerySet, QuerySet.filter, parse_url(), pkg/auth")
    p.add_argument("-n", "--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print JSON")


@command("symbol", "find definitions by name (exact, qualified or fuzzy)")
@arguments(_name_args)
def cmd_symbol(args: argparse.Namespace) -> int:
    units = open_service(args).symbols(args.name, args.limit)
    if args.json:
        print_json([to_dict(u) for u in units])
    elif not units:
        print(f"no definition matches {args.name!r}", file=sys.stderr)
        return 1
    else:
        for u in units:
            print(render.unit_line(u))
    return 0


def _edges(args: argparse.Namespace, incoming: bool) -> int:
    service = open_service(args)
    edges = service.callers(args.name, args.limit) if incoming else service.callees(args.name, args.limit)
    if args.json:
        print_json([render.edge_json(e, incoming) for e in edges])
        return 0
    if not edges:
        what = "callers" if incoming else "callees"
        print(f"no {what} found for {args.name!r}", file=sys.stderr)
        return 1
    for e in edges:
        print(render.edge_line(e, incoming))
    return 0


@command("callers", "who calls a function or method")
@arguments(_name_args)
def cmd_callers(args: argparse.Namespace) -> int:
    return _edges(args, incoming=True)


@command("callees", "what a function or method calls")
@arguments(_name_args)
def cmd_callees(args: argparse.Namespace) -> int:
    return _edges(args, incoming=False)


def _tui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="repository folder or git URL (default: the cwd's repository)")


@command("tui", "open the app (the default when no command is given)")
@arguments(_tui_args)
def cmd_tui(args: argparse.Namespace) -> int:
    if not is_tty() and not sys.stdin.isatty():
        print("coderag: the app needs a terminal; try `coderag --help` for the commands", file=sys.stderr)
        return 2
    try:
        from coderag_tui.tui.app import run_app
    except ModuleNotFoundError:
        print("coderag: the terminal app is not available in this build; use the commands "
              "(`coderag --help`)", file=sys.stderr)
        return 2
    service = open_service(args, args.path)
    return int(run_app(service) or 0)
