"""A file as the code viewer shows it: plain lines, highlighted lines (pygments through rich)
and the file's outline. Built in a worker thread; no textual import here."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Text

from coderag_tui.models import FileDescription, UnitRef
from coderag_tui.textsafe import safe_line

if TYPE_CHECKING:
    from coderag_tui.contract import Service

DARK_THEME = "monokai"
LIGHT_THEME = "default"
MAX_HIGHLIGHT_CHARS = 2_000_000  # beyond this, plain text (highlighting would take seconds)


@dataclass(frozen=True)
class Document:
    path: str
    language: str
    lines: tuple[str, ...]  # tabs expanded
    styled: tuple[Text, ...]
    outline: tuple[UnitRef, ...]
    dark: bool
    described: FileDescription | None = None  # the file's profile and summaries, when indexed
    highlighted: bool = True  # False: plain lines, shown while the colours are worked out

    @property
    def width(self) -> int:
        return max((len(line) for line in self.lines), default=0)


def _lexer(path: str, code: str) -> Any:
    from pygments.lexers import TextLexer, get_lexer_for_filename, guess_lexer
    from pygments.util import ClassNotFound

    options = {"stripnl": False, "stripall": False, "ensurenl": True, "tabsize": 4}
    try:
        return get_lexer_for_filename(path, code, **options)
    except ClassNotFound:
        if code.startswith("#!"):
            try:
                return guess_lexer(code[:4000], **options)
            except ClassNotFound:
                pass
    return TextLexer(**options)


@functools.lru_cache(maxsize=4)
def _theme(name: str) -> PygmentsSyntaxTheme:
    return PygmentsSyntaxTheme(name)


def highlight(path: str, lines: tuple[str, ...], dark: bool) -> tuple[Text, ...]:
    """One rich Text per line, coloured by pygments (foreground only: the viewer paints the
    background, so highlighted ranges and themes stay readable)."""
    code = "\n".join(lines)
    if len(code) > MAX_HIGHLIGHT_CHARS:
        return tuple(Text(line) for line in lines)
    theme = _theme(DARK_THEME if dark else LIGHT_THEME)
    styles: dict[Any, Style] = {}
    out: list[Text] = [Text()]
    for token_type, value in _lexer(path, code).get_tokens(code):
        style = styles.get(token_type)
        if style is None:
            s = theme.get_style_for_token(token_type)
            style = styles[token_type] = Style(color=s.color, bold=s.bold, italic=s.italic,
                                               underline=s.underline)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                out.append(Text())
            if part:
                out[-1].append(part, style)
    out = out[: len(lines)]
    return tuple(out) + tuple(Text(line) for line in lines[len(out):])


def load(service: Service, path: str, dark: bool = True) -> Document:
    """Read, highlight and outline a repository file (raises the service's errors)."""
    return complete(service, load_plain(service, path, dark), dark)


def load_plain(service: Service, path: str, dark: bool = True) -> Document:
    """A file's lines and outline, uncoloured: what the viewer shows at once (highlighting a
    long file and describing it take a few hundred ms more; `complete` adds them)."""
    # what the file holds is shown, never obeyed: control characters become visible escapes
    lines = tuple(safe_line(line.expandtabs(4)) for line in service.read_lines(path, 1, None))
    outline = tuple(service.outline(path))
    language = outline[0].language if outline else ""
    return Document(path, language, lines, tuple(Text(line) for line in lines), outline, dark,
                    highlighted=False)


def complete(service: Service, doc: Document, dark: bool) -> Document:
    """The document coloured, with what the file and its units do."""
    found = [d for d in service.descriptions([doc.path]) if d.path == doc.path]
    described = found[0] if found else None
    return replace(doc, styled=highlight(doc.path, doc.lines, dark), dark=dark, described=described,
                   highlighted=True)


def rethemed(doc: Document, dark: bool) -> Document:
    if doc.dark == dark or not doc.highlighted:
        return doc
    return replace(doc, styled=highlight(doc.path, doc.lines, dark), dark=dark)
