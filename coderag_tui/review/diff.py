"""Unified diffs: parse them (git or plain `diff -u`) and rebuild one side from the other.

A `FileDiff` is one file's change: its old and new path (None when the file was added or
deleted) and its hunks. `reverse_apply` rebuilds the old text from the new one (a diff given
with `--diff` whose new side is on disk); `forward_apply` does the opposite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK_RE = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$")
_GIT_HEADER_RE = re.compile(r"^diff --git (\"?a/.+?\"?) (\"?b/.+\"?)$")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[str, ...]  # each starts with " ", "-" or "+"
    header: str = ""  # the text after the second @@ (often the enclosing function)

    def deleted_lines(self) -> list[int]:
        """Old-side line numbers this hunk removes."""
        out, line = [], self.old_start
        for text in self.lines:
            if text.startswith("-"):
                out.append(line)
            if not text.startswith("+"):
                line += 1
        return out

    def added_lines(self) -> list[int]:
        """New-side line numbers this hunk adds."""
        out, line = [], self.new_start
        for text in self.lines:
            if text.startswith("+"):
                out.append(line)
            if not text.startswith("-"):
                line += 1
        return out

    def old_side(self) -> list[str]:
        return [t[1:] for t in self.lines if not t.startswith("+")]

    def new_side(self) -> list[str]:
        return [t[1:] for t in self.lines if not t.startswith("-")]

    def touch_points(self) -> tuple[set[int], set[int]]:
        """(old lines, new lines) this hunk changes; a pure insertion or deletion also marks the
        line it happens after on the other side, so a unit that only gained lines is found
        on both sides."""
        old = set(self.deleted_lines())
        new = set(self.added_lines())
        o, n = self.old_start, self.new_start
        for text in self.lines:
            if text.startswith("-"):
                new.add(max(n - 1, 1))
                new.add(n)
                o += 1
            elif text.startswith("+"):
                old.add(max(o - 1, 1))
                old.add(o)
                n += 1
            else:
                o += 1
                n += 1
        return old, new


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None: the file was added
    new_path: str | None  # None: the file was deleted
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        if self.old_path != self.new_path:
            return "renamed"
        return "modified"

    def changed_lines(self) -> tuple[set[int], set[int]]:
        old: set[int] = set()
        new: set[int] = set()
        for h in self.hunks:
            o, n = h.touch_points()
            old |= o
            new |= n
        return old, new

    def stats(self) -> tuple[int, int]:
        """(lines added, lines deleted)."""
        added = sum(1 for h in self.hunks for t in h.lines if t.startswith("+"))
        deleted = sum(1 for h in self.hunks for t in h.lines if t.startswith("-"))
        return added, deleted


def _unquote(path: str) -> str:
    path = path.strip()
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        body = path[1:-1]
        try:
            raw = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
            return raw.encode("latin-1").decode("utf-8", "replace")
        except (UnicodeDecodeError, UnicodeEncodeError):
            return body
    return path


def _header_path(text: str, prefix: str) -> str | None:
    """The path of a `---`/`+++` line: None for /dev/null; a/ and b/ prefixes dropped."""
    text = text.split("\t", 1)[0].rstrip("\r")
    text = _unquote(text)
    if text == "/dev/null":
        return None
    if text.startswith(prefix):
        return text[len(prefix) :]
    return text


def parse_unified_diff(text: str) -> list[FileDiff]:
    """Every file of a unified diff (git's, `diff -u`'s, or a bare ---/+++ patch)."""
    lines = text.splitlines()
    out: list[FileDiff] = []
    i = 0
    n = len(lines)

    while i < n:
        line = lines[i]
        git = _GIT_HEADER_RE.match(line)
        if git is None and not line.startswith("--- "):
            i += 1
            continue
        old_path: str | None = None
        new_path: str | None = None
        binary = False
        created = deleted = False
        if git is not None:
            old_path = _unquote(git.group(1))[2:]
            new_path = _unquote(git.group(2))[2:]
            i += 1
            while i < n and not lines[i].startswith(("--- ", "diff --git ", "@@")):
                meta = lines[i]
                if meta.startswith("new file mode"):
                    created = True
                elif meta.startswith("deleted file mode"):
                    deleted = True
                elif meta.startswith("rename from "):
                    old_path = _unquote(meta[len("rename from ") :])
                elif meta.startswith("rename to "):
                    new_path = _unquote(meta[len("rename to ") :])
                elif meta.startswith("Binary files") or meta.startswith("GIT binary patch"):
                    binary = True
                i += 1
        if i < n and lines[i].startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            a = _header_path(lines[i][4:], "a/")
            b = _header_path(lines[i + 1][4:], "b/")
            if git is None:
                # plain diff -u: keep the paths as written (prefixes are resolved by the caller)
                a = _header_path(lines[i][4:], "")
                b = _header_path(lines[i + 1][4:], "")
            created = created or a is None
            deleted = deleted or b is None
            old_path = a if a is not None else old_path
            new_path = b if b is not None else new_path
            i += 2
        elif git is None:
            i += 1
            continue
        hunks: list[Hunk] = []
        while i < n:
            m = _HUNK_RE.match(lines[i])
            if m is None:
                break
            old_start, new_start = int(m.group(1)), int(m.group(3))
            old_count = int(m.group(2)) if m.group(2) is not None else 1
            new_count = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            body: list[str] = []
            need_old, need_new = old_count, new_count
            while i < n and (need_old > 0 or need_new > 0):
                t = lines[i]
                if t.startswith("\\"):
                    i += 1
                    continue
                if t == "":
                    t = " "  # some tools strip the space of empty context lines
                tag = t[0]
                if tag == "-":
                    need_old -= 1
                elif tag == "+":
                    need_new -= 1
                elif tag == " ":
                    need_old -= 1
                    need_new -= 1
                else:
                    break
                body.append(t)
                i += 1
            while i < n and lines[i].startswith("\\"):
                i += 1
            hunks.append(Hunk(old_start, old_count, new_start, new_count, tuple(body), m.group(5).strip()))
        out.append(
            FileDiff(
                old_path=None if created else old_path,
                new_path=None if deleted else new_path,
                hunks=tuple(hunks),
                binary=binary,
            )
        )
    return out


def _apply(base: list[str], hunks: tuple[Hunk, ...], reverse: bool) -> list[str] | None:
    """Rebuild the other side of `base` (None when the hunks do not fit `base`)."""
    out: list[str] = []
    pos = 0  # next unread index into base
    for h in hunks:
        start = (h.new_start if reverse else h.old_start) - 1
        count = h.new_count if reverse else h.old_count
        if count == 0:
            start += 1  # an empty side names the line before the change
        expect = h.new_side() if reverse else h.old_side()
        produce = h.old_side() if reverse else h.new_side()
        if start < pos or start + len(expect) > len(base):
            return None
        if [s.rstrip("\r") for s in base[start : start + len(expect)]] != [s.rstrip("\r") for s in expect]:
            return None
        out.extend(base[pos:start])
        out.extend(produce)
        pos = start + len(expect)
    out.extend(base[pos:])
    return out


def reverse_apply(new_text: str, hunks: tuple[Hunk, ...]) -> str | None:
    """The old text, given the new text and the hunks between them."""
    res = _apply(new_text.splitlines(), hunks, reverse=True)
    return None if res is None else "\n".join(res) + ("\n" if res else "")


def forward_apply(old_text: str, hunks: tuple[Hunk, ...]) -> str | None:
    """The new text, given the old text and the hunks between them."""
    res = _apply(old_text.splitlines(), hunks, reverse=False)
    return None if res is None else "\n".join(res) + ("\n" if res else "")


def sparse_side(hunks: tuple[Hunk, ...], new: bool) -> str:
    """One side rebuilt from the hunks alone, lines outside them left blank: line numbers stay
    right, so what the hunks show in full can still be parsed (best effort)."""
    lines: list[str] = []
    for h in hunks:
        start = h.new_start if new else h.old_start
        side = h.new_side() if new else h.old_side()
        while len(lines) < start - 1:
            lines.append("")
        lines[start - 1 :] = side
    return "\n".join(lines) + "\n"


def unit_diff(old: str, new: str, old_start: int, new_start: int, context: int = 2) -> str:
    """A unified diff of two snippets, with the line numbers of the files they came from."""
    import difflib

    a = old.splitlines()
    b = new.splitlines()
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{old_start + i1},{i2 - i1} +{new_start + j1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(" " + s for s in a[a1:a2])
                continue
            out.extend("-" + s for s in a[a1:a2])
            out.extend("+" + s for s in b[b1:b2])
    return "\n".join(out)
