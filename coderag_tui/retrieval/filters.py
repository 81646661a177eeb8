"""Search filters checked before searching: a misspelt kind or language is an error naming the
closest valid value, not a silent "nothing matches"."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import replace

from coderag_tui.errors import CoderagError
from coderag_tui.models import SearchFilters
from coderag_tui.store import filters as sql_filters
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend


class FilterError(CoderagError):
    """A filter value that no unit or file can have."""


def _canonical(what: str, value: str, valid: Iterable[str], hint: str) -> str:
    names = sorted(set(valid))
    by_lower = {n.lower(): n for n in names}
    found = by_lower.get(value.strip().lower())
    if found is not None:
        return found
    close = difflib.get_close_matches(value.strip().lower(), list(by_lower), n=1, cutoff=0.6)
    suggestion = f"did you mean {by_lower[close[0]]!r}?" if close else hint
    raise FilterError(f"unknown {what} {value!r}", suggestion)


def check_filters(db: StoreBackend, filters: SearchFilters | None) -> SearchFilters | None:
    """`filters` with kind and language spelt as the index spells them; FilterError when one
    names no kind or language that parsing knows or the index holds, or a path under which no
    file is indexed."""
    if filters is None:
        return None
    from coderag_tui.parsing.extract import unit_kinds
    from coderag_tui.parsing.languages import registry

    if filters.kind:
        kinds = unit_kinds() | read.unit_kinds(db)
        some = ", ".join(k for k in ("function", "method", "class", "struct", "interface") if k in kinds)
        filters = replace(filters, kind=_canonical("kind", filters.kind, kinds, f"e.g. {some}"))
    if filters.language:
        languages = set(registry()) | read.languages(db)
        filters = replace(filters, language=_canonical(
            "language", filters.language, languages, "`coderag status` lists the repository's languages"))
    if filters.path_prefix and not sql_filters.has_path_prefix(db, filters.path_prefix):
        prefix = filters.path_prefix.strip()
        folders = sorted(sql_filters.folders(db))
        close = difflib.get_close_matches(prefix.rstrip("/") + "/", folders, n=1, cutoff=0.6)
        top = [f for f in folders if f.count("/") == 1][:6]
        raise FilterError(f"no indexed file is under {prefix!r}", f"did you mean {close[0]!r}?" if close
                          else "folders: " + ", ".join(top) if top else "the index holds no folder")
    return filters
