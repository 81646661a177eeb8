"""Repository paths for file names that are not valid UTF-8.

A POSIX file name is any byte string. Python hands names that are not UTF-8 over as `str`
with lone surrogates (os.fsdecode, PEP 383), which SQLite and the terminal refuse. The index
keys files by a *repository path* instead: the file-system name itself when it is valid UTF-8
and has no backslash (nearly every file), else an escaped form:

- a backslash is written `\\\\`;
- a byte that is not UTF-8 is written `\\xHH` (two lower-case hex digits).

A repository path with a backslash is always the escaped form, so the mapping is one-to-one and
`fs_path(repo_path(name)) == name` for every name (`caf\\xe9.py` indexes, displays as
`caf\\xe9.py` and opens again as the byte name b"caf\\xe9.py").
"""

from __future__ import annotations

import os
import re

_ESCAPE_RE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def repo_path(name: str) -> str:
    """The repository path of a relative file-system name (os.fsdecode form)."""
    if "\\" not in name:
        if name.isascii():
            return name
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    raw = os.fsencode(name)
    out: list[str] = []
    i = 0
    while i < len(raw):
        # decode the longest valid UTF-8 run, escape the byte that stops it
        try:
            out.append(raw[i:].decode("utf-8").replace("\\", "\\\\"))
            break
        except UnicodeDecodeError as exc:
            good = raw[i : i + exc.start].decode("utf-8")
            out.append(good.replace("\\", "\\\\"))
            out.append(f"\\x{raw[i + exc.start]:02x}")
            i += exc.start + 1
    return "".join(out)


def fs_path(path: str) -> str:
    """The file-system name (os.fsdecode form) of a repository path: `repo_path` undone."""
    if "\\" not in path:
        return path
    raw = bytearray()
    pos = 0
    for m in _ESCAPE_RE.finditer(path):
        raw += path[pos : m.start()].encode("utf-8", "surrogateescape")
        token = m.group(1)
        raw += b"\\" if token == "\\" else bytes([int(token[1:], 16)])
        pos = m.end()
    raw += path[pos:].encode("utf-8", "surrogateescape")
    return os.fsdecode(bytes(raw))
