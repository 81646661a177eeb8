"""A conversation as plain data, and its Markdown export. No textual import here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.answering.checked import check_lines
from coderag_tui.models import Source, ToolCallInfo
from coderag_tui.paths import EXPORT_MARK
from coderag_tui.textsafe import safe_line

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


OPENING_RULE = "\n\n---\n\n"  # between the opening section and the model's text
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")


def with_opening(opening: str, answer: str) -> str:
    """An answer as shown: coderag's opening section (when there is one) above the model's text.
    The opening is plain text: escaped, so that `__call__` is not taken for bold Markdown."""
    if not opening:
        return answer
    return _MARKDOWN_SPECIAL.sub(r"\\\1", opening) + OPENING_RULE + answer


@dataclass
class Turn:
    question: str
    answer: str = ""
    sources: tuple[Source, ...] = ()
    invalid: tuple[str, ...] = ()  # citations not verified against what the model was shown
    done: bool = False
    error: str = ""
    stopped: bool = False  # the user stopped it: the answer is what was written until then
    cached: bool = False  # it came from the answer cache (no model was asked)
    tools: tuple[ToolCallInfo, ...] = ()  # the calls the model made while answering
    absent: tuple[str, ...] = ()  # of `invalid`: lines the repository does not have
    unknown_names: tuple[str, ...] = ()  # code names in the answer the index does not have
    model: str = ""  # the model that wrote the answer
    opening: str = ""  # the index's opening section as plain text (shown escaped in `answer`)

    def plain(self) -> str:
        """The answer as text to paste: the opening without its Markdown escapes, then the
        model's text as it wrote it."""
        shown = with_opening(self.opening, "") if self.opening else ""
        if shown and self.answer.startswith(shown):
            return f"{self.opening}\n\n{self.answer[len(shown):].strip()}".strip()
        return self.answer.strip()


def tool_line(call: ToolCallInfo, expanded: bool = False) -> str:
    """A tool call in one line ("search_codebase 'tax owed' -> 2 results:"), and when expanded
    its arguments and the first line of its result below it (repository text escaped)."""
    try:
        args = json.loads(call.arguments)
    except ValueError:
        args = call.arguments
    first = next(iter(args.values()), "") if isinstance(args, dict) and args else args
    shown = f" {first!r}" if isinstance(first, str) and first else f" {first}" if first else ""
    if len(shown) > 50:
        shown = shown[:49] + "\u2026"
    arrow = "->" if call.ok else "-> failed:"
    line = f"{'▾' if expanded else '▸'} tool: {call.name}{safe_line(shown)} {arrow} {safe_line(call.summary)}"
    if expanded:
        line += f"\n    arguments: {safe_line(call.arguments)}\n    result: {safe_line(call.summary)}"
    return line


def source_line(s: Source) -> str:
    """A source as one line of display text (repository text escaped)."""
    title = f"  {safe_line(s.title)}" if s.title else ""
    return f"[{s.number}] {safe_line(s.citation)}{title}"


def to_markdown(turns: list[Turn], repo: str, title: str = "") -> str:
    heading = title or (turns[0].question if turns else "conversation")
    # the mark keeps coderag from indexing the export if it is ever copied into a repository
    out = [f"# {heading}", "", f"Repository: `{repo}`", "", EXPORT_MARK, ""]
    for turn in turns:
        out += [f"## {turn.question}", ""]
        if turn.tools:
            out += [f"- tool: {c.name} {c.arguments} -> {c.summary}" for c in turn.tools] + [""]
        out += [turn.answer.strip() or "_(no answer)_", ""]
        if turn.model:
            out += [f"> answered by {turn.model}", ""]
        for label, items in check_lines(turn.invalid, turn.absent, turn.unknown_names):
            out += [f"> {label}: {items}", ""]
        if turn.cached:
            out += ["> from the answer cache", ""]
        if turn.stopped:
            out += ["> stopped before the end", ""]
        if turn.error:
            out += [f"> error: {turn.error}", ""]
        if turn.sources:
            out += ["Sources:", ""]
            out += [f"{s.number}. `{s.citation}`{(' ' + s.title) if s.title else ''}"
                    f"{'' if s.cited else ' (context)'}" for s in turn.sources]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def slug(text: str, limit: int = 40) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)[:limit].strip("-") or "conversation"


def export_path(folder: Path, turns: list[Turn]) -> Path:
    """A new file name in `folder` for the export (never overwrites)."""
    base = "coderag-" + slug(turns[0].question if turns else "")
    path = folder / f"{base}.md"
    n = 2
    while path.exists():
        path = folder / f"{base}-{n}.md"
        n += 1
    return path


def last_code_block(text: str) -> str | None:
    blocks = _FENCE.findall(text)
    return blocks[-1].rstrip("\n") if blocks else None
