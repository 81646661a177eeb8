"""Walk a repository: honour .gitignore files (nested too), config globs and default excludes.

Discovery only stats files (cheap, so a no-change re-index stays fast); checks that need the
content (binary, minified, generated) happen when a changed file is read: see `classify`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from coderag_tui.config import DEFAULT_EXCLUDES, IndexSettings
from coderag_tui.paths import EXPORT_MARK


@dataclass(frozen=True)
class Candidate:
    path: str  # relative, POSIX separators
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    files: list[Candidate]
    skips: dict[str, str]  # path -> reason (symlink, too-large, excluded dirs are not listed)


_GENERATED_NAMES = (
    "*.min.js", "*.min.css", "*.min.mjs", "*.map", "*.bundle.js", "*-lock.json", "package-lock.json",
    "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock", "composer.lock", "Gemfile.lock",
    "*_pb2.py", "*_pb2_grpc.py", "*.pb.go", "*.pb.cc", "*.pb.h", "*.designer.cs", "go.sum",
    "*.pyc", "*.so", "*.dylib", "*.dll", "*.exe", "*.o", "*.a", "*.class", "*.jar",
)
# the same test as any(fnmatch.fnmatchcase(name, p) for p in _GENERATED_NAMES), in one regex
_GENERATED_RE = re.compile("|".join(fnmatch.translate(p) for p in _GENERATED_NAMES))
_GENERATED_MARK = re.compile(rb"@generated|DO NOT EDIT|Code generated .* DO NOT EDIT|auto-generated", re.I)


_OWN_MARK = EXPORT_MARK.encode()
# coderag's own folder is never indexed, even with the default excludes turned off
_ALWAYS_EXCLUDED = (".git", ".coderag")

_IgnoreSpecs = list[tuple[str, pathspec.PathSpec]]
IGNORE_FILES = (".gitignore", ".ignore", ".coderagignore")


def _excluded_dir(name: str, patterns: tuple[str, ...]) -> bool:
    return _dir_patterns(patterns).match(name) is not None


@functools.lru_cache(maxsize=8)
def _dir_patterns(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """any(fnmatch.fnmatchcase(name, p) for p in patterns), as one regex (a walk asks it of every
    folder: thousands in a repository with translations)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")


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


def _load_ignore(dir_path: Path, base: str, names: Iterable[str] = IGNORE_FILES) -> tuple[str, pathspec.PathSpec] | None:
    """The folder's ignore rules; `names`: those of IGNORE_FILES known to be there (a walk
    has listed the folder, so it does not try to open files that are not)."""
    lines: list[str] = []
    for name in names:
        p = dir_path / name
        try:
            lines.extend(p.read_text("utf-8", "replace").splitlines())
        except OSError:
            continue
    if not base:
        with contextlib.suppress(OSError):
            lines.extend((dir_path / ".git" / "info" / "exclude").read_text("utf-8", "replace").splitlines())
    if not lines:
        return None
    return base, pathspec.GitIgnoreSpec.from_lines(lines)


def walk(root: Path, settings: IndexSettings,
         on_file: Callable[[Candidate], None] | None = None) -> WalkResult:
    """Every file worth considering under root, with stat info; skips with their reasons.

    `on_file` sees each file as soon as it is found (a fresh index starts parsing during the walk).
    """
    root = root.resolve()
    dir_excludes = DEFAULT_EXCLUDES if settings.default_excludes else _ALWAYS_EXCLUDED
    include = pathspec.GitIgnoreSpec.from_lines(settings.include) if settings.include else None
    exclude = pathspec.GitIgnoreSpec.from_lines(settings.exclude) if settings.exclude else None
    files: list[Candidate] = []
    skips: dict[str, str] = {}
    max_bytes = settings.max_file_bytes

    def visit(dir_path: Path, base: str, specs: _IgnoreSpecs) -> None:
        try:
            entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
        except OSError:
            skips[base.rstrip("/") or "."] = "unreadable"
            return
        found = {e.name for e in entries if e.name in IGNORE_FILES}
        present = [name for name in IGNORE_FILES if name in found]  # their order matters
        own = _load_ignore(dir_path, base, present) if present or not base else None
        if own is not None:
            specs = specs + [own]
        for entry in entries:
            rel = base + entry.name
            try:
                if entry.is_symlink():
                    if not _ignored(specs, rel, False):
                        skips[rel] = "symlink"
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if _excluded_dir(entry.name, dir_excludes) or _ignored(specs, rel, True):
                        continue
                    if exclude is not None and exclude.match_file(rel + "/"):
                        continue
                    visit(Path(entry.path), rel + "/", specs)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                if _ignored(specs, rel, False):
                    continue
                if exclude is not None and exclude.match_file(rel):
                    continue
                if include is not None and not include.match_file(rel):
                    continue
                if _GENERATED_RE.match(entry.name):
                    skips[rel] = "generated"
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skips[rel] = "unreadable"
                continue
            if st.st_size > max_bytes:
                skips[rel] = "too-large"
                continue
            cand = Candidate(rel, st.st_size, st.st_mtime_ns)
            files.append(cand)
            if on_file is not None:
                on_file(cand)

    visit(root, "", [])
    return WalkResult(files, skips)


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
        self._include = pathspec.GitIgnoreSpec.from_lines(settings.include) if settings.include else None
        self._exclude = pathspec.GitIgnoreSpec.from_lines(settings.exclude) if settings.exclude else None
        self._own: dict[str, tuple[str, pathspec.PathSpec] | None] = {}

    def reset(self) -> None:
        self._own.clear()

    def _spec(self, base: str) -> tuple[str, pathspec.PathSpec] | None:
        if base not in self._own:
            self._own[base] = _load_ignore(self.root / base if base else self.root, base)
        return self._own[base]

    def is_ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        """True when walk() would not enter (a folder) or not consider (a file) this path."""
        parts = [p for p in rel_path.replace(os.sep, "/").split("/") if p and p != "."]
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


def classify(data: bytes, settings: IndexSettings) -> str:
    """'' when the content is worth indexing, else the skip reason (binary, minified, generated)."""
    head = data[:8192]
    if b"\x00" in head:
        return "binary"
    if len(data) > 4096:
        lines = data.count(b"\n") + 1
        if len(data) / lines > settings.max_line_length:
            return "minified"
    start = data[:1024]
    if _OWN_MARK in start:
        return "coderag"  # a file coderag wrote (an exported conversation)
    low = start.lower()  # every marker has one of these words: most files skip the regex scan
    if (b"generated" in low or b"do not edit" in low) and _GENERATED_MARK.search(start):
        return "generated"
    return ""


def iter_paths(result: WalkResult) -> Iterator[str]:
    for c in result.files:
        yield c.path


def stat_paths(root: Path, paths: Iterable[str], settings: IndexSettings,
               matcher: IgnoreMatcher | None = None) -> WalkResult:
    """What walk() would say about just these paths (missing or ignored ones are left out)."""
    root = root.resolve()
    matcher = matcher or IgnoreMatcher(root, settings)
    files: list[Candidate] = []
    skips: dict[str, str] = {}
    for rel in sorted(set(paths)):
        if matcher.is_ignored(rel):
            continue
        full = root / rel
        try:
            st = full.lstat()
        except OSError:
            continue  # gone: the caller treats a known path that is not here as deleted
        if stat.S_ISLNK(st.st_mode):
            skips[rel] = "symlink"
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        name = PurePosixPath(rel).name
        if _GENERATED_RE.match(name):
            skips[rel] = "generated"
        elif st.st_size > settings.max_file_bytes:
            skips[rel] = "too-large"
        else:
            files.append(Candidate(rel, st.st_size, st.st_mtime_ns))
    return WalkResult(files, skips)
