"""index, status, symbol, callers, callees, and the app itself (tui)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from coderag_tui.cli import render
from coderag_tui.cli.base import (
    UsageError,
    add_json,
    add_limit,
    add_path,
    arguments,
    command,
    is_tty,
    open_service,
    open_workspace,
    print_json,
    progress_printer,
    repo_target,
    width,
)
from coderag_tui.contract import INDEX, Service
from coderag_tui.models import exact_matches, to_dict
from coderag_tui.textsafe import safe_line


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("repo_path", nargs="*", metavar="PATH|URL",
                   help="the repositories (folders or git URLs; default: the cwd's); several are indexed "
                   "one after another, each into its own index, with one progress display")
    p.add_argument("--rebuild", action="store_true", help="drop the index and build it again")
    p.add_argument("--no-embed", action="store_true", help="stop after the structural index")
    add_json(p, "print the summary as JSON")


@command("index", "build or update the index of a repository")
@arguments(_index_args)
def cmd_index(args: argparse.Namespace) -> int:
    """The structural index first, its summary as soon as search works, then the vectors."""
    paths = list(args.repo_path or [])
    args.repo_path = paths[0] if len(paths) == 1 else None
    if len(paths) > 1 and (args.repo or args.workspace):
        raise UsageError("give the repositories either as PATH|URL ... or with --repo/--workspace")
    service = open_workspace(args, paths) if len(paths) > 1 else open_service(args)
    parts = service.repositories()
    if len(parts) > 1:
        return _index_several(args, parts)
    bar = progress_printer("index")
    summary = service.index(rebuild=args.rebuild, progress=bar)
    bar.close()
    if summary.recovered:
        print(f"coderag: {summary.recovered}", file=sys.stderr)
    embedding = not args.no_embed and service.settings.embed.enabled
    if not args.json:
        print(render.fit_text(render.summary_text(summary, service.counts()), width()))
        if embedding and service.vectors_pending():
            print("search works now; vectors are being added")
        sys.stdout.flush()  # before the minutes of embedding, even into a pipe
    embed_summary = None
    if embedding:
        bar = progress_printer("embed")
        embed_summary = service.embed(progress=bar)  # (None: a server embeds as it sees fit)
        bar.close()
    if args.json:
        out = to_dict(summary)
        if embed_summary is not None:
            out["embedding"] = to_dict(embed_summary)
        print_json(out)
    elif embed_summary is not None:
        print(render.fit_text(render.embed_text(embed_summary), width()))
    return 0


def _index_several(args: argparse.Namespace, parts: Sequence[tuple[str, Service]]) -> int:
    """Each repository indexed in turn, then each one's vectors: rows of one display, each
    naming its repository; a summary per repository."""
    bar = progress_printer("index")
    out: dict[str, Any] = {}
    for name, service in parts:
        bar.repo = name
        summary = service.index(rebuild=args.rebuild, progress=bar)
        out[name] = to_dict(summary)
        if not args.json:
            bar.refresh()
            print(f"== {name}")
            print(render.fit_text(render.summary_text(summary, service.counts()), width()))
            sys.stdout.flush()
    embedding = [(n, s) for n, s in parts if not args.no_embed and s.settings.embed.enabled]
    if not args.json and any(s.vectors_pending() for _, s in embedding):
        print("search works now; vectors are being added", flush=True)
    for name, service in embedding:
        bar.repo = name
        done = service.embed(progress=bar)
        if done is None:
            continue
        out[name]["embedding"] = to_dict(done)
        if not args.json:
            print(f"== {name}: " + render.fit_text(render.embed_text(done), width()), flush=True)
    bar.close()
    if args.json:
        print_json([{"repository": n, **v} for n, v in out.items()])
    return 0


def _status_args(p: argparse.ArgumentParser) -> None:
    add_path(p)
    add_json(p)


@command("status", "what the index holds: files by language, units, chunks, edges, skips, size "
                   "(exit 1 when the repository was never indexed)")
@arguments(_status_args)
def cmd_status(args: argparse.Namespace) -> int:
    service = open_service(args)
    if not service.has_index():
        # asking must not create an index: say what to run instead, and write nothing
        where = f" {service.display_name}" if repo_target(args) else ""
        if getattr(args, "db", None):
            where += f" --db {args.db}"
        print(f"coderag: {service.display_name} has no index yet; run `coderag index{where}` "
              "to build it", file=sys.stderr)
        return 1
    # several repositories (a server's, a workspace): each headed by its name
    named = service.statuses()
    if args.json:
        print_json(named[0][1] if len(named) == 1 else [{"repository": n, **to_dict(st)} for n, st in named])
    else:
        for name, st in named:
            if len(named) > 1:
                print(f"== {name}")
            print(render.fit_text(render.status_text(st), width()))
    return 0


def _name_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a symbol name: QuerySet, QuerySet.filter, parse_url(), pkg/auth")
    add_limit(p, 20, "how many results (default: 20)")
    add_json(p)


def _symbol_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a symbol name: QuerySet, QuerySet.filter, parse_url(), pkg/auth")
    add_limit(p, None, "how many results (default: 20; a qualified name that matches exactly: that "
              "definition alone, unless -n asks for more)")
    add_json(p)


def _qualified(name: str) -> str:
    """`Foo.bar` of `Foo.bar`, `Foo::bar` or `Foo#bar` ("" for a plain name or a path)."""
    q = name.strip().rstrip("()").replace("::", ".").replace("#", ".")
    return q if "." in q.strip(".") and "/" not in q else ""


@command("symbol", "find definitions by name (exact, qualified or fuzzy)")
@arguments(_symbol_args)
def cmd_symbol(args: argparse.Namespace) -> int:
    units = open_service(args).symbols(args.name, args.limit or 20)
    qualified = _qualified(args.name)
    exact = exact_matches(units, qualified) if qualified and args.limit is None else []
    if exact and len(exact) < len(units):  # Flask.dispatch_request: that one, not 12 more of the name
        if not args.json:
            others = len(units) - len(exact)
            print(f"({others} more definitions match {args.name!r}: -n 20 lists them)", file=sys.stderr)
        units = exact
    if args.json:
        print_json([to_dict(u) for u in units])
    elif not units:
        print(f"no definition matches {args.name!r}", file=sys.stderr)
    else:
        cols = width()
        for u in units:
            print(render.unit_line(u, cols))
    return 0 if units else 1


def _edges(args: argparse.Namespace, incoming: bool) -> int:
    service = open_service(args)
    what = "callers" if incoming else "callees"
    if not _say_what_was_found(service, args.name, quiet=args.json):
        if args.json:
            print_json([])
        return 1  # no results (exit 1, as for any command), the reason said on stderr
    edges = service.callers(args.name, args.limit) if incoming else service.callees(args.name, args.limit)
    if args.json:
        print_json([render.edge_json(e, incoming) for e in edges])
    elif not edges:
        print(f"no {what} found for {args.name!r}", file=sys.stderr)
    else:
        cols = width()
        for e in edges:
            print(render.edge_line(e, incoming, cols))
    return 0 if edges else 1


def _say_what_was_found(service: Any, name: str, quiet: bool = False) -> bool:
    """False for a name that denotes no definition, said to be unknown rather than "no callers
    found"; a fuzzy match is said to be what the edges are of (`quiet`: nothing said)."""
    found = service.symbols(name, 5)
    if exact_matches(found, name):
        return True
    if not found:
        if not quiet:
            print(f"no definition named {name!r} (`coderag symbol NAME` finds names; callers and "
                  "callees take a function, method or class)", file=sys.stderr)
        return False
    if not quiet:
        best = found[0]
        print(f"no definition named {name!r}; the closest: {safe_line(best.qualname or best.name)} "
              f"({safe_line(best.location)})", file=sys.stderr)
    return True


@command("callers", "who calls a function or method")
@arguments(_name_args)
def cmd_callers(args: argparse.Namespace) -> int:
    return _edges(args, incoming=True)


@command("callees", "what a function or method calls")
@arguments(_name_args)
def cmd_callees(args: argparse.Namespace) -> int:
    return _edges(args, incoming=False)


def _tui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("repo_path", nargs="*", metavar="PATH|URL",
                   help="the repository (default: the cwd's); several open as a workspace, the tree "
                   "holding each repository at its top")


@command("tui", "open the app (the default when no command is given)")
@arguments(_tui_args)
def cmd_tui(args: argparse.Namespace) -> int:
    if not is_tty() and not sys.stdin.isatty():
        print("coderag: the app needs a terminal; try `coderag --help` for the commands", file=sys.stderr)
        return 2
    from coderag_tui.tui.app import run_app

    paths = list(args.repo_path or [])
    args.repo_path = paths[0] if len(paths) == 1 else None
    if len(paths) > 1 or args.workspace or (args.repo and "," in args.repo and not args.server):
        workspace = open_workspace(args, paths if len(paths) > 1 else (args.repo or "").split(","), tree_paths=True)
        bar = progress_printer("index")
        for name, repo in workspace.chosen:  # a first index before the tree can show them
            if not repo.has_index():
                bar.repo = name
                repo.index(progress=bar)
        bar.close()
        return int(run_app(workspace) or 0)  # then, as for one repository, catch up and watch
    service = open_service(args)
    if INDEX not in service.capabilities:  # a server's: it indexes and watches its repositories itself
        return int(run_app(service, auto_index=False, watch=False, embed=False) or 0)
    return int(run_app(service) or 0)
