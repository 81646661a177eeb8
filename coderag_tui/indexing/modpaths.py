"""Paths and module names for import resolution: a file path's stems (`a/b/c.py` is `c`,
`b/c` and `a/b/c`; a package's `__init__`/`index`/`mod` is its folder), an import's text as
path segments (`a.b.c`, `./c`, `../c`, `a/b/c.h`, `crate::a::c`), and the closest of several
files that match."""

from __future__ import annotations

import functools

from coderag_tui.parsing.identifiers import MODULE_SPLIT

INDEX_STEMS = frozenset({"__init__", "index", "mod", "main", "lib"})


@functools.lru_cache(maxsize=1 << 17)
def split_path(path: str) -> tuple[tuple[str, ...], str, str]:
    """(folders, stem, suffix) of a POSIX path, without pathlib (this runs for every file; cached)."""
    parts = path.split("/")
    name = parts[-1]
    dot = name.rfind(".")
    if dot > 0:
        return tuple(parts[:-1]), name[:dot], name[dot:]
    return tuple(parts[:-1]), name, ""


def path_stems(path: str) -> list[str]:
    folders, stem, suffix = split_path(path)
    parts = [*folders, stem]
    stems = ["/".join(parts[i:]) for i in range(len(parts))]
    if stem in INDEX_STEMS and folders:
        stems.extend("/".join(folders[i:]) for i in range(len(folders)))
    # C/C++ includes name the file with its extension
    if suffix in (".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp"):
        full = [*folders, stem + suffix]
        stems.extend("/".join(full[i:]) for i in range(len(full)))
    return stems


def module_parts(module: str, src_path: str) -> list[str] | None:
    m = module.strip().strip("\"'<>")
    if not m:
        return None
    if not m.startswith("."):
        segs = absolute_parts(m)
        return list(segs) if segs else None
    src_dir = list(path_parts(src_path)[:-1])
    if m.startswith("./") or m.startswith("../"):
        parts = src_dir[:]
        for seg in m.split("/"):
            if seg == "..":
                if parts:
                    parts.pop()
            elif seg and seg != ".":
                parts.append(seg)
        last = parts[-1] if parts else ""
        if "." in last:
            parts[-1] = last.rsplit(".", 1)[0]
        return parts
    dots = len(m) - len(m.lstrip("."))
    parts = src_dir[: len(src_dir) - (dots - 1)] if dots > 1 else src_dir[:]
    rest = m[dots:]
    return parts + ([s for s in MODULE_SPLIT.split(rest) if s] if rest else [])


@functools.lru_cache(maxsize=1 << 16)
def absolute_parts(m: str) -> tuple[str, ...]:
    """The path segments of a module named from the repository's roots (`a.b`, `a/b.h`, `crate::a`)."""
    for prefix in ("crate::", "super::", "self::", "@/", "~/"):
        if m.startswith(prefix):
            m = m[len(prefix) :]
    segs = [s for s in MODULE_SPLIT.split(m) if s]
    if segs and "." in m and m.rsplit(".", 1)[-1] in ("h", "hpp", "hh", "js", "ts", "py", "rb", "php"):
        segs = [s for s in m.split("/") if s]
    return tuple(segs)


@functools.lru_cache(maxsize=65536)
def path_parts(path: str) -> tuple[str, ...]:
    """PurePosixPath(path).parts for the relative POSIX paths of the index, without pathlib."""
    return tuple(p for p in path.split("/") if p and p != ".")


def closest(files: list[int], src_path: str, paths: dict[int, str]) -> int:
    """The file sharing the most leading path parts with src_path; ties: fewer parts, then path."""
    if len(files) == 1:
        return files[0]
    best = [(fid, path_parts(paths[fid])) for fid in files]
    # keep those that share one more leading part, while any do (a stem like `django` names
    # ~1,000 translation files in Django's tree: one list pass per level, not a loop per file)
    for depth, part in enumerate(path_parts(src_path)):
        closer = [fp for fp in best if len(fp[1]) > depth and fp[1][depth] == part]
        if not closer:
            break
        best = closer
    return min(best, key=lambda fp: (len(fp[1]), paths[fp[0]]))[0]

