"""Which summaries a run makes: one count for `coderag summarize --estimate`, its progress, and
the background summaries of the app and `coderag watch`.

A summary is made when it is missing or out of date, and so is every summary above it (a
class's is made from its methods', a file's from its units', a folder's from its files'): a
run that would make a method's summary makes its class's again too. Counting those up front
gives a total that does not grow while the run goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from coderag_tui.indexing.profiles import folder_of
from coderag_tui.store import descriptions as store

if TYPE_CHECKING:
    from coderag_tui.answering.summarize import Summarizer, Target


def due(summarizer: Summarizer, targets: Sequence[Target]) -> list[Target]:
    """The targets whose summary a run over `targets` makes, in their order."""
    from coderag_tui.answering.summarize import LEVELS, bottom_up

    units = summarizer.tree.units
    marked: set[str] = set()
    for t in bottom_up(targets):  # children before their parents
        if t.key not in marked and not summarizer.needs(t):
            continue
        marked.add(t.key)
        if t.unit is None:
            continue  # a folder: nothing above it
        if t.kind == "file":
            folder = folder_of(t.path)
            marked.add(store.summary_key(folder, "folder", folder))
            continue
        parent = units.get(t.unit.parent_id) if t.unit.parent_id is not None else None
        if parent is not None and parent.kind in LEVELS:
            marked.add(store.summary_key(parent.path, parent.kind, parent.qualname))
    return [t for t in targets if t.key in marked]
