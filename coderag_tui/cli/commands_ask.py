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
                   "pull REPO FILE: download a GGUF into models/")
    p.add_argument("repo_id", nargs="?", help="pull: the model repository, e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")
    p.add_argument("filename", nargs="?", help="pull: the GGUF file in it")
    p.add_argument("--model", help="list: also describe this GGUF path")
    p.add_argument("--base-url", default="https://huggingface.co", help="pull: the model hub")
    p.add_argument("--json", action="store_true")


@command("models", "list the configured and available models, or pull a GGUF into models/")
@arguments(_models_args)
def cmd_models(args: argparse.Namespace) -> int:
    from coderag_tui.answering import list_models, pull_model
    from coderag_tui.config import load_settings
    from coderag_tui.paths import models_dir

    if args.action == "pull":
        if not args.repo_id or not args.filename:
            raise CoderagError("models pull needs REPO and FILE", "e.g. coderag models pull OWNER/REPO model.Q4_K_M.gguf")
        from coderag_tui.cli.base import progress_printer

        bar = progress_printer("download")
        path = pull_model(args.repo_id, args.filename, models_dir(), bar, base_url=args.base_url)
        bar.close()
        print(f"saved {path}; coderag uses the first GGUF in {models_dir()} unless [llm] model names one")
        return 0
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
