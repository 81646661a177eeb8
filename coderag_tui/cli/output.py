"""stdout for the commands: whatever reaches it has its control characters made visible.

The renderers escape repository text themselves (so that widths are measured on what is
shown); this wrapper is the net under them, for any text that reaches stdout another way.
Our own output never needs a control character on stdout (progress and status go to stderr).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from coderag_tui.textsafe import safe_text


class SafeWriter:
    """A text stream that escapes control characters (newlines and tabs pass) on their way."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._cr = False  # a write ended in "\r": held, in case the next one starts with "\n"

    def write(self, text: str) -> int:
        if self._cr:
            text = "\r" + text
            self._cr = False
        if text.endswith("\r"):
            text, self._cr = text[:-1], True
        self._stream.write(safe_text(text))
        return len(text)

    def flush(self) -> None:
        if self._cr:
            self._stream.write("\\r")
            self._cr = False
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, ...
        return getattr(self._stream, name)


@contextmanager
def safe_stdout() -> Iterator[None]:
    """sys.stdout escapes control characters while the block runs."""
    original = sys.stdout
    writer = SafeWriter(original)
    sys.stdout = writer
    try:
        yield
    finally:
        writer.flush()
        sys.stdout = original
