"""Parse guards: limits that keep one hostile file from taking a parse worker (or the app) down.
A file past one raises `ParseLimit` and is indexed as plain text (line chunks, no units)."""

from __future__ import annotations

import re
import time
from typing import Any

from coderag_tui.parsing.languages import get_parser

PARSE_SECONDS = 10.0  # a grammar stuck on its input (GLR ambiguity, a scanner loop)
# External scanners keep a stack of open blocks that overflows past ~255 entries: a Markdown
# file 255 blockquotes deep, a YAML or reStructuredText file 270 levels deep segfault the parse.
# Every level costs one column of indentation or one container marker at the start of a line.
_DEEP_INDENT = (b" " * 240, b"\t" * 240)
_MD_CONTAINERS = re.compile(rb"^(?:[ \t]*(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))){120}", re.M)
_READ_BLOCK = 1 << 16


class ParseLimit(Exception):
    """A file past a safe limit of the parser (nesting, time): parse it as plain text."""


def check_nesting(source: bytes, language: str) -> None:
    """Raise ParseLimit for nesting a grammar's scanner cannot take (before tree-sitter sees it:
    a segfault cannot be caught)."""
    for run in _DEEP_INDENT:
        if run in source:
            raise ParseLimit(f"indentation deeper than {len(run)} columns")
    if language == "markdown" and _MD_CONTAINERS.search(source):
        raise ParseLimit("blocks nested deeper than 120 levels")


def parse_tree(language: str, source: bytes, seconds: float | None = None) -> Any:
    """The syntax tree of `source`; with `seconds` (default: `PARSE_SECONDS` unless a parse
    worker turned that off with `timed_parses(False)`), ParseLimit when the parse takes longer."""
    parser = get_parser(language)
    seconds = seconds if seconds is not None else _TIMED[0]
    if not seconds:
        return parser.parse(source)
    view = memoryview(source)
    deadline = time.monotonic() + seconds
    try:
        tree = parser.parse(lambda offset, _point: view[offset : offset + _READ_BLOCK],
                            progress_callback=lambda _offset, _error: time.monotonic() > deadline)
    except ValueError:  # the progress callback cancelled it
        parser.reset()  # else the next parse resumes this one
        if time.monotonic() > deadline:
            raise ParseLimit(f"parse took longer than {seconds:g} s") from None
        raise
    # a tree parsed from a callback has no text: query predicates (#eq?, #match?) on it crash
    # the process. Reparsing with it as the old tree reuses every node (~10% of a parse).
    return parser.parse(source, old_tree=tree)


_TIMED: list[float] = [PARSE_SECONDS]


def timed_parses(on: bool) -> None:
    """Parse with a time limit (the default) or not: a parse worker has a watchdog instead,
    which costs nothing per file."""
    _TIMED[0] = PARSE_SECONDS if on else 0.0
