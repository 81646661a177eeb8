"""ask (a cited answer, streamed), models list / models pull."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.cli import render
from coderag_tui.cli.base import (
    add_json,
    arguments,
    command,
    is_tty,
    open_service,
    piped_stdin,
    print_json,
    query_from,
    read_stdin,
    width,
)
from coderag_tui.errors import CoderagError
from coderag_tui.models import AnswerEvent, Source, ToolCallInfo
from coderag_tui.textsafe import safe_line, safe_text


def _ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="*", help="the question, in plain language; - or none: read it from "
                   "stdin. Text piped in after a question is given to the model with it (cat err.log | "
                   "coderag ask \"why?\")")
    p.add_argument("--model", help="a GGUF path (or a remote model name) instead of the configured one")
    add_json(p, "print one JSON object when done")
    p.add_argument("--no-stream", action="store_true", help="print the answer when complete")
    p.add_argument("--conversation", type=int, metavar="ID", help="continue a stored conversation")
    p.add_argument("--fresh", action="store_true", help="ask the model even when the answer cache has an "
                   "answer to this question")


def _source_line(s: Source) -> str:
    mark = "*" if s.cited else " "
    title = f"  {safe_line(s.title)}" if s.title else ""
    return f"[{s.number}]{mark} {safe_line(s.citation)}{title}"


def _tool_line(call: ToolCallInfo) -> str:
    mark = "" if call.ok else " (failed)"
    return safe_line(f"tool {call.name}({call.arguments}){mark}: {call.summary}")[:300]


@command("ask", "answer a question about the repository, citing path:start-end sources")
@arguments(_ask_args)
def cmd_ask(args: argparse.Namespace) -> int:
    attachment = ""
    if args.question and args.question != ["-"] and piped_stdin():
        attachment = read_stdin()
    question = query_from(args.question, "question")
    service = open_service(args)
    if service.status().files == 0:
        service.index()
    stream = is_tty() and not args.no_stream and not args.json
    answer: list[str] = []
    final: AnswerEvent | None = None
    sources: tuple[Source, ...] = ()
    invalid: tuple[str, ...] = ()
    conversation = args.conversation or 0
    calls: list[ToolCallInfo] = []
    for event in service.ask(question, args.conversation, model=args.model, attachment=attachment,
                              fresh=args.fresh):
        conversation = event.conversation_id or conversation
        if event.kind == "token":
            answer.append(event.text)
            if stream:
                sys.stdout.write(safe_text(event.text))
                sys.stdout.flush()
        elif event.kind == "status" and stream:
            sys.stderr.write(f"\r\033[2K{safe_line(event.text)}…")
            sys.stderr.flush()
        elif event.kind == "tool" and event.tool is not None:
            calls.append(event.tool)
            if not args.json:  # beside the answer, not in it: stdout stays the answer alone
                sys.stderr.write(("\r\033[2K" if stream else "") + _tool_line(event.tool) + "\n")
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
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "summary": c.summary, "ok": c.ok}
                           for c in calls],
            "conversation_id": conversation,
            "cached": bool(final and final.cached),
            "stats": final.stats if final else {},
        })
        return 0
    if not stream:
        print(safe_text(text))
    else:
        print()
    print("\nSources (* cited by the answer):")
    cols = width()
    for s in sources:
        print("\n".join(render.wrap(_source_line(s), cols)))
    if invalid:
        print("\n".join(render.wrap("Not in the index (invented by the model): "
                                    + ", ".join(safe_line(c) for c in invalid), cols)))
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
    add_json(p)


@command("models", "list the configured and available models, or pull a GGUF into models/")
@arguments(_models_args)
def cmd_models(args: argparse.Namespace) -> int:
    from coderag_tui.answering import pull_model
    from coderag_tui.paths import models_dir

    if args.action == "pull":
        if not args.repo_id or not args.filename:
            raise CoderagError("models pull needs REPO and FILE", "e.g. coderag models pull OWNER/REPO model.Q4_K_M.gguf")
        from coderag_tui.cli.base import progress_printer

        bar = progress_printer("download")
        path = pull_model(args.repo_id, args.filename, models_dir(), bar, base_url=args.base_url)
        bar.close()
        if args.json:
            print_json({"path": str(path)})
            return 0
        print(f"saved {path}; coderag uses the first GGUF in {models_dir()} unless [llm] model names one")
        return 0
    infos = open_service(args).list_models(args.model)
    if args.json:
        print_json(infos)
    else:
        cols = width()
        for m in infos:
            print(render.model_line(m, cols))
    return 0 if infos else 1
