"""summarize, export: files' profiles and the model's summaries, made and written out."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from coderag_tui.cli.base import (
    UsageError,
    add_json,
    arguments,
    command,
    open_service,
    print_json,
    progress_printer,
)
from coderag_tui.errors import CoderagError, IndexError_
from coderag_tui.models import FileDescription, summary_label
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
        return _print(service.descriptions(paths), "json" if args.json else "markdown")
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


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: all)")
    p.add_argument("--format", choices=("json", "markdown"), default="markdown", help="output format")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--json", action="store_const", const="json", dest="format", help="the same as --format json")


@command("export", "write every file's profile and summaries as JSON or Markdown")
@arguments(_export_args)
def cmd_export(args: argparse.Namespace) -> int:
    service = open_service(args)
    if not service.has_index():
        raise IndexError_("the repository is not indexed", "run `coderag index` first")
    files = service.descriptions([p.rstrip("/") for p in args.paths] or None)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(render(files, args.format))
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from exc
        print(f"{len(files)} files written to {args.output}", file=sys.stderr)
        return 0
    return _print(files, args.format)


def _print(files: list[FileDescription], fmt: str) -> int:
    sys.stdout.write(render(files, fmt))
    return 0 if files else 1


def render(files: list[FileDescription], fmt: str) -> str:
    if fmt == "json":
        import json

        return json.dumps([dataclasses.asdict(f) for f in files], indent=2, ensure_ascii=False) + "\n"
    out: list[str] = []
    for f in files:
        out.append(f"## {f.path}\n")
        out.append(f"*{f.role}* · {f.language} · {f.lines} lines · referred to by {f.fan_in} files, "
                   f"refers to {f.fan_out}\n")
        if f.summary:
            out.append(f"{f.summary}{' *(out of date)*' if f.stale else ''} *({summary_label(f.summary_model)})*\n")
        out.append(f"Profile: {f.profile}\n")
        for u in f.units:
            line = f"- `{u.qualname}` ({u.kind}, line {u.line})"
            if u.summary:
                line += f": {u.summary}{' *(out of date)*' if u.stale else ''} *({summary_label(u.summary_model)})*"
            out.append(line)
        out.append("")
    return safe_text("\n".join(out)) + ("\n" if out else "")
