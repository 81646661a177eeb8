"""summarize: files' profiles and the model's summaries, made bottom up (resumable)."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from coderag_tui.cli.base import (
    add_json,
    arguments,
    command,
    open_service,
    print_json,
    progress_printer,
)
from coderag_tui.cli.commands_export import print_descriptions
from coderag_tui.errors import CoderagError, IndexError_
from coderag_tui.textsafe import safe_text


def _summarize_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the whole repository)")
    p.add_argument("--all", action="store_true",
                   help="every unit, not only the budget's share ([summaries] budget) with a local model")
    p.add_argument("--model", help="a GGUF path or model name instead of the configured model")
    p.add_argument("--estimate", action="store_true", help="print how many requests and tokens it takes, then stop")
    p.add_argument("--show", action="store_true", help="print the stored profiles and summaries, make none")
    p.add_argument("-y", "--yes", action="store_true",
                   help="with a remote model, go ahead without asking after the estimate")
    add_json(p)


@command("summarize", "describe files and units with the model (bottom up, resumable); profiles need no model")
@arguments(_summarize_args)
def cmd_summarize(args: argparse.Namespace) -> int:
    service = open_service(args)
    paths = [p.rstrip("/") for p in args.paths] or None
    if not service.has_index():
        raise IndexError_("the repository is not indexed", "run `coderag index` first")
    if args.show:
        return print_descriptions(service.descriptions(paths), "json" if args.json else "markdown")
    planned = service.summary_estimate(paths, everything=args.all, model=args.model)
    estimate = planned.estimate
    if args.estimate:
        if args.json:
            print_json(dataclasses.asdict(estimate))
        else:
            print(f"{planned.model}: {estimate.text()}")
        return 0
    if not planned.local:  # a remote model costs money: say what it will take, then ask
        print(f"{safe_text(planned.model)}: {estimate.text()}", file=sys.stderr)
        if not args.yes and not _confirmed():
            raise CoderagError("not summarized: the estimate was not confirmed", "add --yes to go ahead")
    bar = progress_printer("summarize")
    result = service.summarize(paths, everything=args.all, model=args.model, progress=bar)
    bar.close()
    if args.json:
        print_json({**dataclasses.asdict(result), "per_summary_s": result.per_summary_s})
    else:
        print(result.text())
        for line in result.errors:
            print(f"  {safe_text(line)}", file=sys.stderr)
    return 0 if not result.failed else 1


def _confirmed() -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input("go ahead? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False
