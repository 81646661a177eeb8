"""ask (a cited answer, streamed), models list / models pull."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli.base import arguments, command, is_tty, open_service, print_json
from coderag_tui.errors import CoderagError
from coderag_tui.models import AnswerEvent, Source


def _ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="+", help="the question, in plain language")
    p.add_argument("--model", metavar="NAME", help="answer with another model: a GGUF path, a GGUF in models/, "
                   "a model served on loopback or a configured one (`coderag models list` shows the names)")
    p.add_argument("--json", action="store_true", help="print one JSON object when done")
    p.add_argument("--no-stream", action="store_true", help="print the answer when complete")
    p.add_argument("--conversation", type=int, metavar="ID", help="continue a stored conversation")


def _source_line(s: Source) -> str:
    mark = "*" if s.cited else " "
    title = f"  {s.title}" if s.title else ""
    return f"[{s.number}]{mark} {s.citation}{title}"


@command("ask", "answer a question about the repository, citing path:start-end sources")
@arguments(_ask_args)
def cmd_ask(args: argparse.Namespace) -> int:
    service = open_service(args)
    if service.status().files == 0:
        service.index()
    question = " ".join(args.question)
    stream = is_tty() and not args.no_stream and not args.json
    answer: list[str] = []
    final: AnswerEvent | None = None
    sources: tuple[Source, ...] = ()
    invalid: tuple[str, ...] = ()
    conversation = args.conversation or 0
    for event in service.ask(question, args.conversation, model=args.model):
        conversation = event.conversation_id or conversation
        if event.kind == "token":
            answer.append(event.text)
            if stream:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        elif event.kind == "status" and stream:
            sys.stderr.write(f"\r\033[2K{event.text}…")
            sys.stderr.flush()
        elif event.kind == "sources":
            sources, invalid = event.sources, event.invalid_citations
        elif event.kind == "error":
            if stream:
                sys.stdout.write("\n")
            raise CoderagError(event.text)
        elif event.kind == "done":
            final = event
        if stream and event.kind == "token" and len(answer) == 1:
            sys.stderr.write("\r\033[2K")
    text = "".join(answer).strip()
    if args.json:
        print_json({
            "question": question,
            "answer": text,
            "sources": [{"number": s.number, "path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                         "title": s.title, "cited": s.cited} for s in sources],
            "invalid_citations": list(invalid),
            "conversation_id": conversation,
            "stats": final.stats if final else {},
        })
        return 0
    if not stream:
        print(text)
    else:
        print()
    print("\nSources (* cited by the answer):")
    for s in sources:
        print(_source_line(s))
    if invalid:
        print("Not in the index (invented by the model): " + ", ".join(invalid))
    if final is not None and final.text:
        print(f"\n{final.text}  (conversation {conversation}; continue with --conversation {conversation})",
              file=sys.stderr)
    return 0


def _models_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "pull"], help="list: configured and found models; "
                   "pull: the models there are to download; pull NAME, or pull REPO FILE: download a GGUF "
                   "into models/")
    p.add_argument("repo_id", nargs="?", metavar="NAME|REPO",
                   help="pull: a name from `coderag models pull`, or a hub repository, "
                   "e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")
    p.add_argument("filename", nargs="?", metavar="FILE", help="pull REPO FILE: the GGUF in the repository")
    p.add_argument("--model", help="list: also describe this GGUF path")
    p.add_argument("--base-url", default=None, help="pull: the model hub (default: $HF_ENDPOINT, else "
                   "https://huggingface.co)")
    p.add_argument("--json", action="store_true")


def _pull(args: argparse.Namespace) -> int:
    from coderag_tui.answering.catalog import CATALOG, catalog_lines, find, hub_pull
    from coderag_tui.paths import models_dir

    if not args.repo_id:
        if args.json:
            print_json(list(CATALOG))
            return 0
        print("\n".join(catalog_lines()))
        print("download one with `coderag models pull NAME` (or `coderag models pull REPO FILE`)")
        return 0
    if args.filename:
        repo, filename = args.repo_id, args.filename
    else:
        entry = find(args.repo_id)
        if entry is None:
            raise CoderagError(f"no model named {args.repo_id!r} in the list",
                               "`coderag models pull` lists them; or give REPO FILE")
        repo, filename = entry.repo, entry.file
    path = hub_pull(repo, filename, models_dir(), args.base_url)
    print(f"saved {path}; answer with it: --model {path.name}, or F8 in the app")
    return 0


@command("models", "list the configured and available models, or pull a GGUF into models/")
@arguments(_models_args)
def cmd_models(args: argparse.Namespace) -> int:
    from coderag_tui.answering import list_models
    from coderag_tui.config import load_settings
    from coderag_tui.paths import models_dir

    if args.action == "pull":
        return _pull(args)
    from coderag_tui.answering.choices import discovery_ports
    from coderag_tui.answering.discovery import discover

    settings = load_settings(None, args.config)
    ports = discovery_ports(settings.llm)
    infos = list_models(settings.llm, models_dir(), model_override=args.model,
                        served=discover(ports) if ports else [])
    if args.json:
        print_json(infos)
        return 0
    for m in infos:
        size = f"{m.size_bytes / 1e6:.0f} MB" if m.size_bytes else "-"
        found = "" if m.found else "  (NOT FOUND)"
        print(f"{m.provider:<9} {m.name}  ctx {m.context_window}  {size}  {m.path_or_url}{found}")
        if m.note:
            print(f"          {m.note}")
        if m.choice and m.choice != m.path_or_url:
            print(f"          --model {m.choice}")
    if ports is None:
        print("(looking for model servers on this machine is off: [llm] discover = false)")
    return 0
