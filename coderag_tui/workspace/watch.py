"""Keeping a workspace current: one file watcher per repository, seen as one.

Each repository's `Watcher` re-indexes its own index; their events reach one callback, with
paths as the app's tree shows them (`repo/path`) when asked."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from coderag_tui.models import IndexSummary, WatchEvent


class WorkspaceWatcher:
    """The started watchers of several repositories; `stop()` stops them all."""

    def __init__(self, watchers: Sequence[Any]) -> None:
        self.watchers = list(watchers)

    def stop(self, timeout: float = 30.0) -> None:
        for watcher in self.watchers:
            watcher.stop(timeout)

    @property
    def running(self) -> bool:
        return any(w.running for w in self.watchers)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        return all([w.wait_idle(timeout) for w in self.watchers])

    def __enter__(self) -> WorkspaceWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def watch_all(chosen: Sequence[tuple[str, Any]], on_event: Callable[[WatchEvent], None] | None,
              tree_paths: bool, **kw: Any) -> WorkspaceWatcher:
    """Start a watcher on each (name, service); `tree_paths`: events name `repo/path`."""
    def relay(name: str) -> Callable[[WatchEvent], None] | None:
        if on_event is None:
            return None
        if not tree_paths:
            return on_event
        return lambda event: on_event(dataclasses.replace(event, paths=tuple(f"{name}/{p}" for p in event.paths)))

    started: list[Any] = []
    try:
        for name, service in chosen:
            started.append(service.watch(relay(name), **kw))
    except BaseException:
        WorkspaceWatcher(started).stop()
        raise
    return WorkspaceWatcher(started)


def merge_summaries(summaries: Sequence[tuple[str, IndexSummary]], tree_paths: bool) -> IndexSummary:
    """One summary of several repositories' runs: counts added up, error lines naming their
    repository (`repo/path: ...` for the tree, `repo:path: ...` otherwise)."""
    sep = "/" if tree_paths else ":"
    skips: dict[str, int] = {}
    for _, s in summaries:
        for reason, n in s.skips.items():
            skips[reason] = skips.get(reason, 0) + n
    return IndexSummary(
        files_seen=sum(s.files_seen for _, s in summaries),
        files_indexed=sum(s.files_indexed for _, s in summaries),
        files_unchanged=sum(s.files_unchanged for _, s in summaries),
        files_deleted=sum(s.files_deleted for _, s in summaries),
        files_failed=sum(s.files_failed for _, s in summaries),
        units=sum(s.units for _, s in summaries),
        chunks=sum(s.chunks for _, s in summaries),
        edges=None if any(s.edges is None for _, s in summaries) else sum(s.edges or 0 for _, s in summaries),
        skips=skips,
        seconds=sum(s.seconds for _, s in summaries),
        errors=tuple(f"{name}{sep}{line}" for name, s in summaries for line in s.errors),
        recovered="; ".join(f"{name}: {s.recovered}" for name, s in summaries if s.recovered),
        excluded=tuple(e for _, s in summaries for e in s.excluded),
    )
