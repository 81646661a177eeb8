"""The order chunks are embedded in: what searches use first comes first, so hybrid search
helps early in a long embedding run.

Library code comes before tests, and tests before documents, configuration and other text
(a question about behaviour is answered by the implementation first, and search demotes
tests and prose); within library code, the files most other files call, import or subclass
come first (what a question reaches most often). Inside each stretch of BLOCK chunks the
shortest go first, as before: texts of similar length batch with less padding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from coderag_tui.parsing.kinds import is_test_path
from coderag_tui.parsing.languages import is_prose

BLOCK = 512
_DATA_LANGUAGES = frozenset({"text", "", "json", "yaml", "toml", "ini", "xml", "csv", "properties"})
_DOC_DIRS = frozenset({"doc", "docs", "documentation", "examples", "example"})


def tier(path: str, language: str) -> int:
    """0 library code, 1 tests, 2 examples and documents, 3 data and configuration."""
    if language in _DATA_LANGUAGES:
        return 3
    if is_prose(language) or bool({p.lower() for p in PurePosixPath(path).parts[:-1]} & _DOC_DIRS):
        return 2
    return 1 if is_test_path(path) else 0


def expected_use_order(pending: Sequence[tuple[int, str]], facts: Mapping[int, tuple[str, str, int]],
                       references: Mapping[str, int]) -> list[tuple[int, str]]:
    """`pending` ((chunk id, hash), any order) re-ordered for embedding; `facts`: chunk id ->
    (path, language, length of its text); `references`: path -> files that refer to it."""
    def key(item: tuple[int, str]) -> tuple[int, int, str, int]:
        path, language, length = facts.get(item[0], ("", "", 0))
        return (tier(path, language), -references.get(path, 0), path, length)

    ordered = sorted(pending, key=key)
    out: list[tuple[int, str]] = []
    for start in range(0, len(ordered), BLOCK):
        out.extend(sorted(ordered[start:start + BLOCK], key=lambda item: facts.get(item[0], ("", "", 0))[2]))
    return out
