"""The language registry: which tree-sitter grammar parses a file, and its tag query.

The registry is data (`languages.toml`), queries are data (`queries/<language>.scm`).
Grammars come from tree-sitter-language-pack 0.13.0, which bundles them (no download).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    kind: str  # code, data, doc
    extensions: tuple[str, ...]
    filenames: tuple[str, ...]
    shebang: tuple[str, ...]
    query: str = ""  # the query file it shares with another grammar (tsx -> typescript)

    @property
    def parseable(self) -> bool:
        return self.name in supported_languages()

    @property
    def structured(self) -> bool:
        return query_source(self.name) is not None


@functools.cache
def supported_languages() -> frozenset[str]:
    """Names of every grammar tree-sitter-language-pack ships."""
    import typing

    from tree_sitter_language_pack import SupportedLanguage

    return frozenset(typing.get_args(SupportedLanguage))


@functools.cache
def registry() -> dict[str, LanguageSpec]:
    text = resources.files("coderag_tui.parsing").joinpath("languages.toml").read_text("utf-8")
    data = tomllib.loads(text)
    specs = {}
    for name, entry in data.items():
        specs[name] = LanguageSpec(
            name=name,
            kind=entry.get("kind", "code"),
            extensions=tuple(entry.get("extensions", ())),
            filenames=tuple(entry.get("filenames", ())),
            shebang=tuple(entry.get("shebang", ())),
            query=entry.get("query", ""),
        )
    return specs


@functools.cache
def _lookup_tables() -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, str]]:
    by_ext: dict[str, str] = {}
    by_ext_lower: dict[str, str] = {}
    by_name: dict[str, str] = {}
    by_shebang: dict[str, str] = {}
    for spec in registry().values():
        for ext in spec.extensions:
            by_ext.setdefault(ext, spec.name)
            by_ext_lower.setdefault(ext.lower(), spec.name)
        for fname in spec.filenames:
            by_name.setdefault(fname, spec.name)
        for prog in spec.shebang:
            by_shebang.setdefault(prog, spec.name)
    return by_ext, by_ext_lower, by_name, by_shebang


def detect_language(path: str, head: bytes = b"") -> LanguageSpec | None:
    """The language of a file from its name, extension or shebang line; None if unknown."""
    by_ext, by_ext_lower, by_name, by_shebang = _lookup_tables()
    pure = PurePosixPath(path)
    name = by_name.get(pure.name)
    if name is None:
        suffix = pure.suffix
        name = by_ext.get(suffix) or by_ext_lower.get(suffix.lower())
    if name is None and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("ascii", "ignore").split()
        if first:
            prog = first[0].rsplit("/", 1)[-1]
            if prog == "env" and len(first) > 1:
                prog = first[1]
            name = by_shebang.get(prog.rstrip("0123456789.") or prog) or by_shebang.get(prog)
    if name is None:
        return None
    return registry().get(name)


@functools.cache
def is_prose(language: str) -> bool:
    """Documents and translations: words, not identifiers (no camelCase to split for search)."""
    spec = registry().get(language)
    return spec is not None and spec.kind == "doc"


def query_source(language: str) -> str | None:
    """The tag query for a language, or None when it has none."""
    spec = registry().get(language)
    return _query_sources().get(spec.query if spec is not None and spec.query else language)


@functools.cache
def _query_sources() -> dict[str, str]:
    out = {}
    folder = resources.files("coderag_tui.parsing").joinpath("queries")
    for entry in folder.iterdir():
        if entry.name.endswith(".scm"):
            out[entry.name[:-4]] = entry.read_text("utf-8")
    return out


@functools.cache
def get_parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser as _get_parser

    return _get_parser(language)  # type: ignore[arg-type]


@functools.cache
def get_query(language: str) -> Any:
    """The compiled tag query of a language (None when it has none)."""
    source = query_source(language)
    if source is None:
        return None
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(language), source)  # type: ignore[arg-type]
