"""export: every file's profile and summaries written out as JSON or Markdown."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from coderag_tui.cli.base import (
    UsageError,
    arguments,
    command,
    open_service,
)
from coderag_tui.errors import IndexError_
from coderag_tui.models import FileDescription, summary_label
from coderag_tui.textsafe import safe_text


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
    return print_descriptions(files, args.format)


def print_descriptions(files: list[FileDescription], fmt: str) -> int:
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
