"""search, context, map, embed, similar."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli import render
from coderag_tui.cli.base import arguments, command, open_service, print_json, progress_printer
from coderag_tui.models import SearchFilters, SearchHit, to_dict


def _hit_line(h: SearchHit) -> str:
    u = h.unit
    where = f"{u.path}:{u.start_line}-{u.end_line}"
    return f"{h.score:.4f}  {where}  {u.kind:<9} {u.qualname or u.name}  [{', '.join(h.reasons)}]"


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="a question, a symbol (QuerySet, Foo.bar, pkg/auth), "
                   "'callers of X', 'tests for X', or a pasted snippet")
    p.add_argument("-k", type=int, default=None, help="how many results (default: [search] k)")
    p.add_argument("--lang", help="only this language (python, go, ...)")
    p.add_argument("--path", help="only files under this path prefix")
    p.add_argument("--kind", help="only this unit kind (function, method, class, ...)")
    p.add_argument("--files", action="store_true", help="rank files instead of code units")
    p.add_argument("--json", action="store_true", help="print JSON")


@command("search", "hybrid search (keywords + vectors + symbols + graph) over the index")
@arguments(_search_args)
def cmd_search(args: argparse.Namespace) -> int:
    service = open_service(args)
    filters = SearchFilters(language=args.lang, path_prefix=args.path, kind=args.kind)
    if args.files:
        hits = service.search_files(args.query, args.k, filters)
    else:
        hits = service.search(args.query, args.k, filters)
    if args.json:
        print_json([h.to_json() for h in hits])
        return 0
    if not hits:
        print(f"nothing matches {args.query!r}", file=sys.stderr)
        return 1
    for h in hits:
        print(_hit_line(h))
    return 0


def _context_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="the question to gather context for")
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: [context] max_tokens)")
    p.add_argument("--json", action="store_true", help="print JSON (pieces with their citations)")


@command("context", "the context an LLM would get for a question, packed into a token budget")
@arguments(_context_args)
def cmd_context(args: argparse.Namespace) -> int:
    ctx = open_service(args).context(args.query, max_tokens=args.max_tokens)
    if args.json:
        out = to_dict(ctx)
        out["hits"] = [h.to_json() for h in ctx.hits]
        print_json(out)
        return 0
    print(ctx.render())
    print(f"\n-- route: {ctx.route}; {len(ctx.pieces)} pieces, ~{ctx.tokens}/{ctx.budget} tokens",
          file=sys.stderr)
    return 0


def _map_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: [context] repo_map_tokens)")
    p.add_argument("--query", help="personalise the map toward files that match this query")


@command("map", "a repo map: the signatures of the most central code, ranked by PageRank")
@arguments(_map_args)
def cmd_map(args: argparse.Namespace) -> int:
    text = open_service(args).repo_map(args.max_tokens, query=args.query)
    if not text:
        print("the index is empty: run `coderag index` first", file=sys.stderr)
        return 1
    print(text)
    return 0


def _embed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("embed", "embed the chunks that have no vector yet (runs after `index`)")
@arguments(_embed_args)
def cmd_embed(args: argparse.Namespace) -> int:
    service = open_service(args)
    bar = progress_printer("embed")
    summary = service.embed(progress=bar)
    bar.close()
    if args.json:
        print_json(summary)
    else:
        print(render.embed_text(summary))
    return 0


def _similar_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a symbol (its best definition is used) or a unit id")
    p.add_argument("-k", type=int, default=None)
    p.add_argument("--json", action="store_true", help="print JSON")


@command("similar", "code like a given function or class (vectors; keywords without them)")
@arguments(_similar_args)
def cmd_similar(args: argparse.Namespace) -> int:
    service = open_service(args)
    if args.name.isdigit():
        unit_id = int(args.name)
    else:
        units = service.symbols(args.name, 1)
        if not units:
            print(f"no definition matches {args.name!r}", file=sys.stderr)
            return 1
        unit_id = units[0].id
    hits = service.similar(unit_id, args.k)
    if args.json:
        print_json([h.to_json() for h in hits])
    else:
        for h in hits:
            print(_hit_line(h))
    return 0
