"""ask: a cited answer, streamed."""

from __future__ import annotations

import argparse
import sys

from coderag_tui.answering.checked import check_lines
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
from coderag_tui.models import AnswerEvent, AnswerOpening, Source, ToolCallInfo, to_dict
from coderag_tui.textsafe import safe_line, safe_text


def _ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="*", help="the question, in plain language; - or none: read it from "
                   "stdin. Text piped in after a question is given to the model with it (cat err.log | "
                   "coderag ask \"why?\")")
    p.add_argument("--model", metavar="NAME", help="answer with another model: a GGUF path, a GGUF in models/, "
                   "a model served on loopback or a configured one (`coderag models list` shows the names)")
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
    service = open_service(args)  # (the service says, in one line, when there is no index to ask)
    # the opening, then the model's text as it comes; on a terminal also a status line
    # (stderr), piped as plain text flushed line by line
    stream = not args.no_stream and not args.json
    tty = stream and is_tty()
    answer: list[str] = []
    final: AnswerEvent | None = None
    opening: AnswerOpening | None = None
    sources: tuple[Source, ...] = ()
    invalid: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    conversation = args.conversation or 0
    calls: list[ToolCallInfo] = []
    status_shown = False  # a status line is on the terminal (stderr), to be cleared

    def clear_status() -> None:
        nonlocal status_shown
        if status_shown:
            sys.stderr.write("\r\033[2K")
            sys.stderr.flush()
            status_shown = False

    for event in service.ask(question, args.conversation, model=args.model, attachment=attachment,
                              fresh=args.fresh):
        conversation = event.conversation_id or conversation
        if event.kind == "token":
            if stream:
                # the status line shares the terminal's line: clear it BEFORE the first word
                clear_status()
                sys.stdout.write(safe_text(event.text))
                if tty or "\n" in event.text:
                    sys.stdout.flush()
            answer.append(event.text)
        elif event.kind == "opening":
            opening = event.opening
            if stream and opening is not None:
                clear_status()  # what the index knows, at once, before the model starts
                print(safe_text(opening.render()) + "\n", flush=True)
        elif event.kind == "status" and tty and not answer:
            sys.stderr.write(f"\r\033[2K{safe_line(event.text)}\u2026")
            sys.stderr.flush()
            status_shown = True
        elif event.kind == "tool" and event.tool is not None:
            calls.append(event.tool)
            if not args.json:  # beside the answer, not in it: stdout stays the answer alone
                clear_status()
                sys.stderr.write(_tool_line(event.tool) + "\n")
                sys.stderr.flush()
        elif event.kind == "sources":
            sources, invalid = event.sources, event.invalid_citations
            absent, unknown = event.absent_citations, event.unknown_names
        elif event.kind == "error":
            clear_status()
            if stream and answer:
                sys.stdout.write("\n")
            if sources and not args.json:  # retrieval worked: what it found is still worth seeing
                _print_sources(sources, invalid, absent, unknown)
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
            "absent_citations": list(absent),
            "unknown_names": list(unknown),
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "summary": c.summary, "ok": c.ok}
                           for c in calls],
            "conversation_id": conversation,
            "cached": bool(final and final.cached),
            "model": final.model if final else "",
            "stats": final.stats if final else {},
        })
    else:
        if not stream:
            if opening is not None:
                print(safe_text(opening.render()) + "\n")
            print(safe_text(text))
        else:
            print()
        _print_sources(sources, invalid, absent, unknown)
        if final is not None and final.text:
            print(f"\n{final.text}  (conversation {conversation}; continue with --conversation {conversation})",
                  file=sys.stderr)
    if not text:
        raise CoderagError("the model returned an empty answer",
                           "see the line above; try again, or set [llm] n_ctx / max_tokens")
    return 0


def _print_sources(sources: tuple[Source, ...], invalid: tuple[str, ...], absent: tuple[str, ...] = (),
                   unknown: tuple[str, ...] = ()) -> None:
    """The checks of the model's text (right under it), then the numbered sources."""
    cols = width()
    for label, items in check_lines(invalid, absent, unknown):
        print("\n".join(render.wrap(f"! {label}: {safe_line(items)}", cols)))
    print("\nSources (* cited by the answer):")
    for s in sources:
        print("\n".join(render.wrap(_source_line(s), cols)))
