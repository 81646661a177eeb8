"""Walk a repository: honour .gitignore files (nested too), config globs and default excludes.

Discovery only stats files (cheap, so a no-change re-index stays fast); checks that need the
content (binary, minified, generated) happen when a changed file is read: see `classify`.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pathspec

from coderag_tui.config import DEFAULT_EXCLUDES, SECRET_TEMPLATES, IndexSettings
from coderag_tui.models import Excluded
from coderag_tui.paths import EXPORT_MARK
from coderag_tui.sources.generated import generated_header, generated_name
from coderag_tui.sources.names import fs_path, repo_path


@dataclass(frozen=True)
class Candidate:
    path: str  # relative, POSIX separators
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    files: list[Candidate]
    skips: dict[str, str]  # path -> reason (symlink, too-large, excluded dirs are not listed)
    warnings: list[str] = field(default_factory=list)  # ignore files not read, bad patterns skipped
    excluded: list[Excluded] = field(default_factory=list)  # per default rule, folders that may hold code


COUNT_BOUND = 10_000  # entries looked at per rule when counting an excluded folder's files
# default-excluded folders that never hold the repository's own code: not worth a notice
_NOT_CODE = re.compile(r"^\.|^__pycache__$|^site-packages$|^htmlcov$|^coverage$|^DerivedData$")


# every byte but the C0 controls text never holds (tab, newlines, form feed, backspace and ESC are text)
_TEXT_BYTES = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F or b in b"\t\n\r\f\b\x1b")

_OWN_MARK = EXPORT_MARK.encode()
# coderag's own folder is never indexed, even with the default excludes turned off
_ALWAYS_EXCLUDED = (".git", ".coderag")

_IgnoreSpecs = list[tuple[str, pathspec.PathSpec]]
IGNORE_FILES = (".gitignore", ".ignore", ".coderagignore")


def _excluded_dir(name: str, patterns: tuple[str, ...]) -> bool:
    return _dir_patterns(patterns).match(name) is not None


def _default_rule(name: str) -> str:
    """The default exclude pattern that matches a folder name."""
    return next((p for p in DEFAULT_EXCLUDES if fnmatch.fnmatchcase(name, p)), name)


def count_files(path: str, budget: int) -> tuple[int, int]:
    """Regular files under a folder (symlinks not followed), looking at no more than `budget`
    entries: (files, entries looked at). Unreadable folders count as empty."""
    files, seen, stack = 0, 0, [path]
    while stack and seen < budget:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        files += 1
                    if seen >= budget:
                        break
        except OSError:
            continue
    return files, seen


class _ExcludedCounter:
    """Counts the files of folders a default rule leaves out, so a repository whose code sits
    in `dist/` or `vendor/` can say why its index is empty. Bounded per rule: a huge
    `node_modules` costs COUNT_BOUND entries, not a walk of it."""

    def __init__(self) -> None:
        self.rules: dict[str, Excluded] = {}
        self.spent: dict[str, int] = {}

    def add(self, name: str, rel: str, path: str) -> None:
        if _NOT_CODE.match(name):
            return
        rule = _default_rule(name)
        budget = COUNT_BOUND - self.spent.get(rule, 0)
        files, seen = count_files(path, budget) if budget > 0 else (0, 0)
        self.spent[rule] = self.spent.get(rule, 0) + seen
        old = self.rules.get(rule)
        capped = seen >= budget
        if old is None:
            self.rules[rule] = Excluded(rule, repo_path(rel), files, 1, capped)
        else:
            self.rules[rule] = Excluded(rule, old.folder, old.files + files, old.folders + 1,
                                        old.capped or capped)

    def result(self) -> list[Excluded]:
        return sorted((e for e in self.rules.values() if e.files), key=lambda e: -e.files)


@functools.lru_cache(maxsize=8)
def _dir_patterns(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """any(fnmatch.fnmatchcase(name, p) for p in patterns), as one regex (a walk asks it of every
    folder: thousands in a repository with translations)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")


def secret_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """name -> True when a file of that name usually holds credentials (and is not a template)."""
    secret = _dir_patterns(patterns)
    template = _dir_patterns(SECRET_TEMPLATES)
    return lambda name: secret.match(name) is not None and template.match(name) is None


def _ignored(specs: _IgnoreSpecs, rel: str, is_dir: bool) -> bool:
    verdict = False
    for base, spec in specs:
        sub = rel[len(base) :] if base else rel
        if is_dir:
            sub += "/"
        result = spec.check_file(sub)
        if result.include is not None:
            verdict = bool(result.include)
    return verdict


_IGNORE_FILE_BYTES = 1 << 20  # bigger ignore files are not read (git has no use for them either)


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, never following a symlink and
    never opening a FIFO or device for more than the check (O_NONBLOCK: opening a FIFO with
    no writer would block). Raises OSError (with a strerror) for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > limit:
            raise OSError(0, f"larger than {limit} bytes")
        chunks = []
        left = limit + 1
        while left > 0:  # the size can grow between fstat and read
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            chunks.append(part)
            left -= len(part)
        data = b"".join(chunks)
        if len(data) > limit:
            raise OSError(0, f"larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def _ignore_lines(path: Path, warnings: list[str] | None, shown: str) -> list[str]:
    try:
        return read_regular(path, _IGNORE_FILE_BYTES).decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        if warnings is not None and not isinstance(exc, (NotADirectoryError, IsADirectoryError)):
            warnings.append(f"{shown}: not read ({exc.strerror or exc})")
        return []


def compile_patterns(parts: Iterable[tuple[str, list[str]]], warnings: list[str] | None = None) -> pathspec.PathSpec:
    """A gitignore spec of the lines of `parts` ((shown name, lines) in order); a line git
    tolerates but that cannot be compiled (`[z-a]`, a lone `\\` or `!`) is left out with a
    warning instead of failing the whole walk."""
    parts = list(parts)
    try:
        return pathspec.GitIgnoreSpec.from_lines([line for _, lines in parts for line in lines])
    except Exception:  # pathspec raises re.error, ValueError and its own errors
        pass
    good: list[str] = []
    for shown, lines in parts:
        for n, line in enumerate(lines, start=1):
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except Exception as exc:  # see above
                if warnings is not None:
                    warnings.append(f"{shown}:{n}: bad ignore pattern {line[:80]!r} skipped ({exc})")
                continue
            good.append(line)
    return pathspec.GitIgnoreSpec.from_lines(good)


def _load_ignore(dir_path: Path, base: str, names: Iterable[str] = IGNORE_FILES,
                 warnings: list[str] | None = None) -> tuple[str, pathspec.PathSpec] | None:
    """The folder's ignore rules; `names`: those of IGNORE_FILES known to be there (a walk
    has listed the folder, so it does not try to open files that are not). Only regular files
    are read (a FIFO, a device or a symlink named .gitignore is not); a bad pattern is skipped
    with a warning."""
    parts: list[tuple[str, list[str]]] = []
    for name in names:
        shown = repo_path(base + name)
        parts.append((shown, _ignore_lines(dir_path / name, warnings, shown)))
    if not base:
        parts.append((".git/info/exclude", _ignore_lines(dir_path / ".git" / "info" / "exclude", warnings,
                                                          ".git/info/exclude")))
    if not any(lines for _, lines in parts):
        return None
    return base, compile_patterns(parts, warnings)


def _special(mode: int) -> str:
    """The skip reason of a file that is not regular (never opened: reading a FIFO blocks)."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special"


def _config_spec(lines: Iterable[str], what: str, warnings: list[str] | None) -> pathspec.PathSpec | None:
    lines = list(lines)
    return compile_patterns([(what, lines)], warnings) if lines else None


def walk(root: Path, settings: IndexSettings,
         on_file: Callable[[Candidate], None] | None = None) -> WalkResult:
    """Every file worth considering under root, with stat info; skips with their reasons.

    `on_file` sees each file as soon as it is found (a fresh index starts parsing during the walk).
    Paths are repository paths (see sources/names.py); patterns match the file-system names.
    """
    root = root.resolve()
    dir_excludes = DEFAULT_EXCLUDES if settings.default_excludes else _ALWAYS_EXCLUDED
    files: list[Candidate] = []
    skips: dict[str, str] = {}
    warnings: list[str] = []
    include = _config_spec(settings.include, "[index] include", warnings)
    exclude = _config_spec(settings.exclude, "[index] exclude", warnings)
    max_bytes = settings.max_file_bytes
    counter = _ExcludedCounter()
    is_secret = secret_matcher(settings.secret_files)

    def visit(dir_path: Path, base: str, specs: _IgnoreSpecs) -> None:
        try:
            entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
        except OSError:
            skips[repo_path(base.rstrip("/")) or "."] = "unreadable"
            return
        found = {e.name for e in entries if e.name in IGNORE_FILES}
        present = [name for name in IGNORE_FILES if name in found]  # their order matters
        own = _load_ignore(dir_path, base, present, warnings) if present or not base else None
        if own is not None:
            specs = specs + [own]
        for entry in entries:
            rel = base + entry.name
            try:
                if entry.is_symlink():
                    if not _ignored(specs, rel, False):
                        skips[repo_path(rel)] = "symlink"
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if _ignored(specs, rel, True):
                        continue
                    if exclude is not None and exclude.match_file(rel + "/"):
                        continue
                    if _excluded_dir(entry.name, dir_excludes):
                        if settings.default_excludes:  # only a default rule hides it unasked
                            counter.add(entry.name, rel, entry.path)
                        continue
                    visit(Path(entry.path), rel + "/", specs)
                    continue
                if _ignored(specs, rel, False):
                    continue
                if exclude is not None and exclude.match_file(rel):
                    continue
                if include is not None and not include.match_file(rel):
                    continue
                if not entry.is_file(follow_symlinks=False):
                    skips[repo_path(rel)] = _special(entry.stat(follow_symlinks=False).st_mode)
                    continue
                if is_secret(entry.name):
                    skips[repo_path(rel)] = "secret"
                    continue
                if generated_name(entry.name):
                    skips[repo_path(rel)] = "generated"
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skips[repo_path(rel)] = "unreadable"
                continue
            if st.st_size > max_bytes:
                skips[repo_path(rel)] = "too-large"
                continue
            cand = Candidate(repo_path(rel), st.st_size, st.st_mtime_ns)
            files.append(cand)
            if on_file is not None:
                on_file(cand)

    visit(root, "", [])
    return WalkResult(files, skips, warnings, counter.result())


class IgnoreMatcher:
    """Answers "does walk() leave this path out?" for one path, without walking the tree.

    Built once per root: each folder's ignore files are read on first use and cached, so call
    `reset()` after an ignore file (.gitignore, .ignore, .coderagignore, .git/info/exclude)
    changes. Paths are relative to the root, with POSIX separators. A path walk() records as
    a skip (symlink, generated, too large) is *not* ignored here: the indexer records it.
    """

    def __init__(self, root: Path, settings: IndexSettings) -> None:
        self.root = root.resolve()
        self._dir_excludes = DEFAULT_EXCLUDES if settings.default_excludes else _ALWAYS_EXCLUDED
        self._include = _config_spec(settings.include, "[index] include", None)
        self._exclude = _config_spec(settings.exclude, "[index] exclude", None)
        self._own: dict[str, tuple[str, pathspec.PathSpec] | None] = {}

    def reset(self) -> None:
        self._own.clear()

    def _spec(self, base: str) -> tuple[str, pathspec.PathSpec] | None:
        if base not in self._own:
            self._own[base] = _load_ignore(self.root / base if base else self.root, base)
        return self._own[base]

    def is_ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        """True when walk() would not enter (a folder) or not consider (a file) this path
        (a repository path: see sources/names.py)."""
        parts = [p for p in fs_path(rel_path).replace(os.sep, "/").split("/") if p and p != "."]
        if not parts or ".." in parts:
            return True
        specs: _IgnoreSpecs = []
        base = ""
        for i, name in enumerate(parts):
            own = self._spec(base)
            if own is not None:
                specs = specs + [own]
            rel = base + name
            if i < len(parts) - 1 or is_dir:
                if _excluded_dir(name, self._dir_excludes) or _ignored(specs, rel, True):
                    return True
                if self._exclude is not None and self._exclude.match_file(rel + "/"):
                    return True
                base = rel + "/"
                continue
            if _ignored(specs, rel, False):
                return True
            if self._exclude is not None and self._exclude.match_file(rel):
                return True
            return self._include is not None and not self._include.match_file(rel)
        return False


def classify(data: bytes, settings: IndexSettings, path: str = "") -> str:
    """'' when the content is worth indexing, else the skip reason (binary, minified, generated).
    `path` (relative) tells prose from code: in Markdown a `#` line is a heading, not a comment."""
    # a NUL anywhere (memchr: ~1 ms for a 1 MB file), or a text start that is mostly control
    # bytes: a binary file's first NUL can come late (an archive, a database page)
    if b"\x00" in data:
        return "binary"
    head = data[:8192]
    if len(head) >= 32 and len(head.translate(None, _TEXT_BYTES)) * 20 > len(head):
        return "binary"
    if len(data) > 4096:
        lines = data.count(b"\n") + 1
        if len(data) / lines > settings.max_line_length:
            return "minified"
    if _OWN_MARK in data[:1024]:
        return "coderag"  # a file coderag wrote (an exported conversation)
    if generated_header(data, path):
        return "generated"
    return ""


def stat_paths(root: Path, paths: Iterable[str], settings: IndexSettings,
               matcher: IgnoreMatcher | None = None) -> WalkResult:
    """What walk() would say about just these repository paths (missing or ignored ones are left out)."""
    root = root.resolve()
    matcher = matcher or IgnoreMatcher(root, settings)
    files: list[Candidate] = []
    skips: dict[str, str] = {}
    is_secret = secret_matcher(settings.secret_files)
    for rel in sorted(set(paths)):
        if matcher.is_ignored(rel):
            continue
        full = root / fs_path(rel)
        if full.parent != root and os.path.realpath(full.parent) != str(full.parent):
            continue  # under a symlinked folder: walk() never enters one (it may lead out of the repo)
        try:
            st = full.lstat()
        except OSError:
            continue  # gone: the caller treats a known path that is not here as deleted
        if stat.S_ISLNK(st.st_mode):
            skips[rel] = "symlink"
            continue
        if not stat.S_ISREG(st.st_mode):
            if not stat.S_ISDIR(st.st_mode):
                skips[rel] = _special(st.st_mode)
            continue
        name = PurePosixPath(rel).name
        if is_secret(name):
            skips[rel] = "secret"
        elif generated_name(name):
            skips[rel] = "generated"
        elif st.st_size > settings.max_file_bytes:
            skips[rel] = "too-large"
        else:
            files.append(Candidate(rel, st.st_size, st.st_mtime_ns))
    return WalkResult(files, skips)
