"""Both sides of every changed file: from git (`git diff BASE` + `git show BASE:path`), or
from a unified diff alone (the other side rebuilt from the file on disk, or from the hunks)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from coderag_tui.config import IndexSettings, Settings
from coderag_tui.errors import RepoError
from coderag_tui.parsing.extract import parse_source
from coderag_tui.parsing.languages import detect_language
from coderag_tui.review import gitio
from coderag_tui.review.changes import FileSides
from coderag_tui.review.diff import (
    FileDiff,
    Hunk,
    forward_apply,
    parse_unified_diff,
    reverse_apply,
    sparse_side,
)
from coderag_tui.sources.safe_read import check_rules, read_repo_file


def _decode(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _read(root: Path, rel: str | None, rules: IndexSettings | None = None) -> bytes | None:
    """A working-tree file's bytes (None when there is none). With `rules` (a server's review),
    only a file discovery would read, reached through no symbolic link (sources/safe_read.py)."""
    if not rel:
        return None
    if rules is not None:
        try:
            return read_repo_file(root, rel, rules)
        except RepoError:
            return None
    path = (root / rel).resolve()
    if root not in path.parents or not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def make_sides(diff: FileDiff, old: bytes | None, new: bytes | None, settings: Settings,
               partial: bool = False) -> FileSides:
    """Parse both sides of one file (no units for binary, too large or unknown files)."""
    path = diff.path
    head = (new or old or b"")[:256]
    spec = detect_language(path, head)
    language = spec.name if spec is not None else "text"
    note = ""
    if diff.binary or any(b"\0" in side[:8192] for side in (old, new) if side):
        note = "binary"
    elif any(len(side) > settings.index.max_file_bytes for side in (old, new) if side):
        note = "too large"
    elif spec is None or not spec.parseable or spec.kind != "code":
        note = f"no functions to compare ({language})"
    old_text, new_text = _decode(old), _decode(new)
    if note:
        return FileSides(diff, language, old_text, new_text, None, None, partial, note)
    old_pf = parse_source(diff.old_path or path, old, spec, settings.chunk) if old is not None else None
    new_pf = parse_source(diff.new_path or path, new, spec, settings.chunk) if new is not None else None
    return FileSides(diff, language, old_text, new_text, old_pf, new_pf, partial)


def _whole_file_hunk(data: bytes) -> tuple[Hunk, ...]:
    lines = data.decode("utf-8", "replace").splitlines()
    return (Hunk(0, 0, 1, len(lines), tuple("+" + s for s in lines)),) if lines else ()


def readable(root: Path, d: FileDiff, rules: IndexSettings) -> bool:
    """Whether discovery would read every path of a file's diff: inside the repository, not a
    secret's name, not excluded or ignored (what a server's review keeps)."""
    for path in (d.old_path, d.new_path):
        if not path:
            continue
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or "\\" in path:
            return False
        try:
            check_rules(root, path, rules)
        except RepoError:
            return False
    return True


def from_git(root: Path, base: str, settings: Settings, rules: IndexSettings | None = None,
             left_out: list[str] | None = None) -> list[FileSides]:
    """The working tree (and its untracked files) against BASE. With `rules` (a server's
    review), a file discovery would not read is left out (its path added to `left_out`)."""
    if not gitio.is_git_repo(root):
        raise _not_git(root)
    commit = gitio.verify_rev(root, base)
    out: list[FileSides] = []
    diffs = parse_unified_diff(gitio.diff_text(root, commit))
    seen = {d.path for d in diffs}
    for d in diffs:
        if rules is not None and not readable(root, d, rules):
            _leave_out(left_out, d)
            continue
        old = gitio.show(root, commit, d.old_path) if d.old_path else None
        new = _read(root, d.new_path, rules)
        out.append(make_sides(d, old, new, settings))
    for rel in gitio.untracked(root):
        if rel in seen:
            continue
        if rules is not None and not readable(root, FileDiff(None, rel), rules):
            _leave_out(left_out, FileDiff(None, rel))
            continue
        data = _read(root, rel, rules)
        if data is None:
            continue
        out.append(make_sides(FileDiff(None, rel, _whole_file_hunk(data)), None, data, settings))
    return out


def _leave_out(left_out: list[str] | None, d: FileDiff) -> None:
    if left_out is not None:
        left_out.append(d.path)


def _not_git(root: Path) -> Exception:
    from coderag_tui.errors import RepoError

    return RepoError(f"{root} is not a git repository", "pass the changes with --diff FILE (or - for stdin)")


def _strip(path: str, n: int) -> str:
    parts = PurePosixPath(path).parts
    return "/".join(parts[n:]) if len(parts) > n else path


def _resolve_prefix(root: Path, d: FileDiff) -> int:
    """How many leading folders to drop from a plain diff's paths (like `patch -p`)."""
    for path in (d.new_path, d.old_path):
        if not path:
            continue
        parts = PurePosixPath(path).parts
        for n in range(len(parts)):
            if (root / "/".join(parts[n:])).exists():
                return n
    return 0


def from_diff_text(root: Path, text: str, settings: Settings, rules: IndexSettings | None = None,
                   left_out: list[str] | None = None) -> list[FileSides]:
    """The files of a unified diff; each one's other side is rebuilt from the disk or hunks.
    With `rules` (a server's review), a file discovery would not read is left out (its path
    added to `left_out`), and no path of the diff reaches outside the repository."""
    out: list[FileSides] = []
    for d in parse_unified_diff(text):
        if rules is not None and not _inside(d):  # not even looked for on the disk
            _leave_out(left_out, d)
            continue
        n = _resolve_prefix(root, d)
        old_path = _strip(d.old_path, n) if d.old_path else None
        new_path = _strip(d.new_path, n) if d.new_path else None
        if old_path and new_path and old_path != new_path and PurePosixPath(old_path).name == \
                PurePosixPath(new_path).name and not (root / old_path).exists() and n == 0:
            # `diff -u old/x.py new/x.py`: two trees, one file
            common = _strip(new_path, 1)
            if (root / common).exists():
                old_path = new_path = common
        d = FileDiff(old_path, new_path, d.hunks, d.binary)
        if rules is not None and not readable(root, d, rules):
            _leave_out(left_out, d)
            continue
        out.append(_rebuild(root, d, settings, rules))
    return out


def _inside(d: FileDiff) -> bool:
    return all(not PurePosixPath(p).is_absolute() and ".." not in PurePosixPath(p).parts and "\\" not in p
               for p in (d.old_path, d.new_path) if p)


def _rebuild(root: Path, d: FileDiff, settings: Settings, rules: IndexSettings | None = None) -> FileSides:
    if d.binary:
        return make_sides(d, None, None, settings)
    new_disk = _read(root, d.new_path, rules)
    old_disk = _read(root, d.old_path, rules) if d.old_path != d.new_path else new_disk
    if d.status == "added":
        if new_disk is not None and (forward_apply("", d.hunks) or "") == _norm_text(new_disk):
            return make_sides(d, None, new_disk, settings)
        return make_sides(d, None, sparse_side(d.hunks, new=True).encode(), settings)
    if d.status == "deleted":
        return make_sides(d, sparse_side(d.hunks, new=False).encode(), None, settings)
    if new_disk is not None:  # the diff is applied: rebuild the old side
        old = reverse_apply(new_disk.decode("utf-8", "replace"), d.hunks)
        if old is not None:
            return make_sides(d, old.encode(), new_disk, settings)
    if old_disk is not None:  # not applied yet: rebuild the new side
        new = forward_apply(old_disk.decode("utf-8", "replace"), d.hunks)
        if new is not None:
            return make_sides(d, old_disk, new.encode(), settings)
    return make_sides(d, sparse_side(d.hunks, new=False).encode(),
                      sparse_side(d.hunks, new=True).encode(), settings, partial=True)


def _norm_text(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines) + ("\n" if lines else "")
