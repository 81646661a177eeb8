"""search, context, map, embed, similar."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli import render
from coderag_tui.cli.base import (
    add_json,
    add_limit,
    arguments,
    command,
    open_service,
    print_json,
    print_result,
    progress_printer,
    query_from,
    width,
)
from coderag_tui.models import SearchFilters, SearchHit, to_dict
from coderag_tui.retrieval.intent import is_file_question
from coderag_tui.retrieval.strategies import STRATEGIES
from coderag_tui.textsafe import safe_text


def _print_hits(hits: list[SearchHit], as_json: bool, nothing: str, explain: bool = False) -> int:
    """Hits as JSON or lines (`explain`: with the ranks that found each); exit status 1 when
    there are none (in JSON too)."""
    if as_json:
        print_json([h.to_json() for h in hits])
    elif not hits:
        print(nothing, file=sys.stderr)
    else:
        cols = width()
        for h in hits:
            print(render.hit_line(h, cols, explain))
    return 0 if hits else 1


def _add_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("--explain", action="store_true", help="show how each result was found: its rank in "
                   "each retriever ([bm25#2, vector#10, name#11]; --json always has them)")


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", help="a question, a symbol (QuerySet, Foo.bar, pkg/auth), "
                   "'callers of X', 'tests for X', or a pasted snippet; - or none: read it from stdin")
    add_limit(p, None, "how many results (default: [search] k)")
    p.add_argument("--lang", help="only this language (python, go, ...)")
    p.add_argument("--path", help="only files under this path prefix")
    p.add_argument("--kind", help="only this unit kind (function, method, class, ...)")
    p.add_argument("--files", action="store_true", help="rank files instead of code units")
    p.add_argument("--units", action="store_true", help="rank code units even for a question that asks "
                   "for files ('which file handles X'), which otherwise ranks files")
    _add_explain(p)
    add_json(p)


@command("search", "hybrid search (keywords + vectors + symbols + graph) over the index")
@arguments(_search_args)
def cmd_search(args: argparse.Namespace) -> int:
    query = query_from(args.query)
    service = open_service(args)
    filters = service.check_filters(SearchFilters(language=args.lang, path_prefix=args.path, kind=args.kind))
    files = args.files or (not args.units and is_file_question(query))
    if files and not args.files:
        print("a question about files: files ranked by their matching code (--units for code units)",
              file=sys.stderr)
    if files:
        hits = service.search_files(query, args.limit, filters)
    else:
        hits = service.search(query, args.limit, filters)
    return _print_hits(hits, args.json, f"nothing matches {query!r}", args.explain)


def _context_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", help="the question to gather context for; - or none: read it from stdin")
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: [context] max_tokens)")
    p.add_argument("--strategy", choices=STRATEGIES, default="relevance",
                   help="what the context is built around: the most relevant hits (default), the most "
                        "important ones, many folders (breadth) or the best hit's call chain (depth)")
    add_json(p, "print JSON (pieces with their citations)")


@command("context", "the context an LLM would get for a question, packed into a token budget")
@arguments(_context_args)
def cmd_context(args: argparse.Namespace) -> int:
    ctx = open_service(args).context(query_from(args.query), max_tokens=args.max_tokens, strategy=args.strategy)
    if args.json:
        out = to_dict(ctx)
        out["hits"] = [h.to_json() for h in ctx.hits]
        print_json(out)
    else:
        if ctx.pieces:
            print(safe_text(ctx.render()))
        print(f"\n-- route: {ctx.route}; {len(ctx.pieces)} pieces, ~{ctx.tokens}/{ctx.budget} tokens",
              file=sys.stderr)
    return 0 if ctx.pieces else 1


def _map_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: [context] repo_map_tokens)")
    p.add_argument("--query", help="personalise the map toward files that match this query")
    add_json(p, 'print JSON: {"map": TEXT, "files": [PATH, ...]}')


@command("map", "a repo map: the signatures of the most central code, ranked by PageRank")
@arguments(_map_args)
def cmd_map(args: argparse.Namespace) -> int:
    text = open_service(args).repo_map(args.max_tokens, query=args.query)
    if args.json:
        files = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith("│")]
        print_json({"map": text, "files": files})
    elif not text:
        print("the index is empty: run `coderag index` first", file=sys.stderr)
    else:
        print(render.fit_text(text, width()))
    return 0 if text else 1


def _embed_args(p: argparse.ArgumentParser) -> None:
    add_json(p, "print the summary as JSON")


@command("embed", "embed the chunks that have no vector yet (runs after `index`)")
@arguments(_embed_args)
def cmd_embed(args: argparse.Namespace) -> int:
    service = open_service(args)
    bar = progress_printer("embed")
    summary = service.embed(progress=bar)
    bar.close()
    print_result(summary, args.json, render.embed_text)
    return 0


def _similar_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a symbol (its best definition is used) or a unit id")
    add_limit(p, None, "how many results (default: [search] k)")
    _add_explain(p)
    add_json(p)


@command("similar", "code like a given function or class (vectors; keywords without them)")
@arguments(_similar_args)
def cmd_similar(args: argparse.Namespace) -> int:
    service = open_service(args)
    if args.name.isdigit():
        unit_id = int(args.name)
    else:
        units = service.symbols(args.name, 1)
        if not units:
            if args.json:
                print_json([])
            print(f"no definition matches {args.name!r}", file=sys.stderr)
            return 1
        unit_id = units[0].id
    return _print_hits(service.similar(unit_id, args.limit), args.json, "no similar code found", args.explain)
