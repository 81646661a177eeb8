"""review: the context a reviewer (or a model) needs for a diff, packed into a token budget."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.cli.base import add_json, arguments, command, open_service, print_json
from coderag_tui.errors import RepoError
from coderag_tui.tokens import counter_for

if TYPE_CHECKING:
    from coderag_tui.config import Settings
    from coderag_tui.review.build import Review


def _review_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", default="HEAD", metavar="REV",
                   help="compare the working tree with this revision (default: HEAD)")
    p.add_argument("--diff", metavar="FILE|-",
                   help="review this unified diff instead (- reads stdin); the other side of each "
                   "file is rebuilt from the file on disk")
    p.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help="token budget of the context (default: 8000; with --ask, what the model's "
                   "window leaves)")
    p.add_argument("--similar", type=int, default=3, metavar="K", help="similar units per change (0: none)")
    p.add_argument("--no-update", action="store_true",
                   help="do not bring the index up to date with the working tree first")
    add_json(p)
    p.add_argument("--ask", action="store_true", help="send the context to the configured model and "
                   "stream its review")
    p.add_argument("--model", metavar="PATH|NAME", help="with --ask: the model to use instead of [llm] model")


def _read_diff(arg: str) -> tuple[str, str]:
    if arg == "-":
        data = sys.stdin.buffer.read()
        return data.decode("utf-8", "replace"), "stdin"
    path = Path(arg).expanduser()
    try:
        return path.read_bytes().decode("utf-8", "replace"), str(arg)
    except OSError as exc:
        raise RepoError(f"cannot read the diff {arg}: {exc.strerror}") from exc


@command("review", "review context for a diff: changed functions, their callers, callees, tests "
         "and breaking changes")
@arguments(_review_args)
def cmd_review(args: argparse.Namespace) -> int:
    from coderag_tui.review import DEFAULT_BUDGET, ReviewOptions

    diff_text = label = None
    if args.diff:
        diff_text, label = _read_diff(args.diff)
    service = open_service(args)
    provider = None
    budget = args.max_tokens
    if args.ask:
        from coderag_tui.review.ask import context_room, provider_for

        if args.model:
            from dataclasses import replace

            service.settings = replace(service.settings, llm=replace(service.settings.llm, model=args.model))
        provider = provider_for(service.settings)
        if budget is None:
            room = context_room(provider, service.settings.llm.max_tokens)
            budget = min(DEFAULT_BUDGET, room) if room else DEFAULT_BUDGET
    if budget is not None and budget < 1:
        raise RepoError("--max-tokens must be at least 1")
    options = ReviewOptions(
        base=args.base,
        diff_text=diff_text,
        diff_label=label or "",
        max_tokens=budget or DEFAULT_BUDGET,
        update_index=not args.no_update,
        similar=max(0, args.similar),
        count_tokens=counter_for(provider),
    )
    review = service.review(options.base, diff_text=options.diff_text, diff_label=options.diff_label,
                            max_tokens=options.max_tokens, update_index=options.update_index,
                            similar=options.similar, count_tokens=options.count_tokens)
    if not review.file_count() and not args.diff:
        # a clean working tree against HEAD (the default): say how to compare with something else
        hint = (f"nothing to review: the working tree is the same as {args.base}; compare with an earlier "
                "revision (--base main, --base HEAD~1) or give a diff (--diff FILE, or - for stdin)")
        if args.json:
            print_json(review.to_json())
        print(f"coderag: {hint}", file=sys.stderr)
        return 1
    if not args.ask:
        if args.json:
            print_json(review.to_json())
        else:
            sys.stdout.write(review.markdown())
        return 0
    return _ask(service.settings, review, provider, args.json)


def _ask(settings: Settings, review: Review, provider: object, as_json: bool) -> int:
    from coderag_tui.review.ask import ask_review

    answer: list[str] = []
    sources: list[dict[str, object]] = []
    error = ""
    for event in ask_review(settings, review, provider):
        if event.kind == "status":
            print(f"coderag: {event.text}", file=sys.stderr)
        elif event.kind == "token":
            answer.append(event.text)
            if not as_json:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        elif event.kind == "sources":
            sources = [{"citation": s.citation, "title": s.title, "cited": s.cited} for s in event.sources]
            if not as_json:
                cited = [s for s in event.sources if s.cited]
                sys.stdout.write("\n\nSources:\n" if cited else "\n")
                for s in cited:
                    sys.stdout.write(f"  [{s.number}] {s.citation}  {s.title}\n")
                if event.invalid_citations:
                    sys.stdout.write("Not in the context (check these): "
                                     + ", ".join(event.invalid_citations) + "\n")
        elif event.kind == "done":
            print(f"coderag: {event.text}", file=sys.stderr)
        elif event.kind == "error":
            error = event.text
    if as_json:
        out = review.to_json()
        out["review"] = "".join(answer).strip()
        out["sources"] = sources
        if error:
            out["error"] = error
        print_json(out)
    if error:
        print(f"coderag: error: {error}", file=sys.stderr)
        return 2
    return 0
