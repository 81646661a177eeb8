"""Text from a repository is shown, never obeyed: control characters made visible.

A file name, a symbol or a snippet can hold escape sequences (`\\x1b[31m`, OSC 52 clipboard
writes, cursor moves), carriage returns that overwrite a line, bidirectional overrides that
reorder what is read, or bytes that are not UTF-8 (kept as surrogate escapes). Printed raw, a
terminal obeys them. These functions replace each such character with a visible escape
(`\\x1b`, `\\r`, `\\u202e`, `\\xe9` for an undecodable byte), so the text reads the same and
does nothing. JSON output needs none of this: the encoder escapes control characters itself.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, the bidirectional embeddings/overrides/isolates, the line and
# paragraph separators, and lone surrogates (undecodable bytes of a file name).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_line(text: str) -> str:
    """One line of display text: every control character escaped, newlines and tabs too."""
    return _UNSAFE.sub(_escape, text)


def _escape_keep_layout(match: re.Match[str]) -> str:
    ch = match.group()
    return ch if ch in "\n\t" else _escape(match)


def safe_text(text: str) -> str:
    """Multi-line display text (snippets, answers): newlines and tabs kept, a CRLF line end
    read as a newline, every other control character escaped."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _UNSAFE.sub(_escape_keep_layout, text)


def is_safe(text: str) -> bool:
    """True when `text` holds nothing but printable characters, newlines and tabs."""
    return all(ch in "\n\t" for ch in _UNSAFE.findall(text))
