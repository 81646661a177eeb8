"""ask (a cited answer, streamed), models list / models pull."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli.base import arguments, command, is_tty, open_service, print_json
from coderag_tui.errors import CoderagError
from coderag_tui.models import AnswerEvent, AnswerOpening, Source, to_dict


def _ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="+", help="the question, in plain language")
    p.add_argument("--model", help="a GGUF path (or a remote model name) instead of the configured one")
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
    opening: AnswerOpening | None = None
    sources: tuple[Source, ...] = ()
    invalid: tuple[str, ...] = ()
    conversation = args.conversation or 0
    status_shown = False  # a status line is on the terminal (stderr), to be cleared

    def clear_status() -> None:
        nonlocal status_shown
        if status_shown:
            sys.stderr.write("\r\033[2K")
            sys.stderr.flush()
            status_shown = False

    for event in service.ask(question, args.conversation, model=args.model):
        conversation = event.conversation_id or conversation
        if event.kind == "token":
            if stream:
                # the status line shares the terminal's line: clear it BEFORE the first word
                clear_status()
                sys.stdout.write(event.text)
                sys.stdout.flush()
            answer.append(event.text)
        elif event.kind == "opening":
            opening = event.opening
            if stream and opening is not None:
                clear_status()  # what the index knows, at once, before the model starts
                print(opening.render() + "\n", flush=True)
        elif event.kind == "status" and stream and not answer:
            sys.stderr.write(f"\r\033[2K{event.text}\u2026")
            sys.stderr.flush()
            status_shown = True
        elif event.kind == "sources":
            sources, invalid = event.sources, event.invalid_citations
        elif event.kind == "error":
            clear_status()
            if stream and answer:
                sys.stdout.write("\n")
            raise CoderagError(event.text)
        elif event.kind == "done":
            final = event
    clear_status()
    text = "".join(answer).strip()
    if args.json:
        print_json({
            "question": question,
            "opening": to_dict(opening) if opening is not None else None,
            "answer": text,
            "sources": [{"number": s.number, "path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                         "title": s.title, "cited": s.cited} for s in sources],
            "invalid_citations": list(invalid),
            "conversation_id": conversation,
            "stats": final.stats if final else {},
        })
    else:
        if not stream:
            if opening is not None:
                print(opening.render() + "\n")
            print(text)
        else:
            print()
        print("\nSources (* cited by the answer):")
        for s in sources:
            print(_source_line(s))
        if invalid:
            print("Unverified citations (not in the code the model was given; not sources): " + ", ".join(invalid))
        if final is not None and final.text:
            print(f"\n{final.text}  (conversation {conversation}; continue with --conversation {conversation})",
                  file=sys.stderr)
    if not text:
        raise CoderagError("the model returned an empty answer",
                           "see the line above; try again, or set [llm] n_ctx / max_tokens")
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
    settings = load_settings(None, args.config)
    infos = list_models(settings.llm, models_dir(), model_override=args.model)
    if args.json:
        print_json(infos)
        return 0
    for m in infos:
        size = f"{m.size_bytes / 1e6:.0f} MB" if m.size_bytes else "-"
        found = "" if m.found else "  (NOT FOUND)"
        print(f"{m.provider:<9} {m.name}  ctx {m.context_window}  {size}  {m.path_or_url}{found}")
        if m.note:
            print(f"          {m.note}")
    return 0
