"""TESTS edges, derived from the resolved graph: a test unit that calls a unit tests it, and a
test file tests the file its name points at (test_foo.py, foo_test.go, Foo.spec.ts -> foo).
Redone for the test files an update touched and for the test calls whose target moved."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from coderag_tui.indexing.lookup import Lookup
from coderag_tui.indexing.modpaths import closest
from coderag_tui.parsing.kinds import is_test_path
from coderag_tui.store import graph_edges
from coderag_tui.store.backend import StoreBackend

_TEST_NAME = [
    (re.compile(r"^test_(.+)$"), r"\1"),
    (re.compile(r"^(.+)_tests?$"), r"\1"),
    (re.compile(r"^(.+)\.(test|spec)$"), r"\1"),
    (re.compile(r"^(.+?)Tests?$"), r"\1"),
    (re.compile(r"^tests?_?(.+)$"), r"\1"),
]


def _test_target_stem(path: str) -> str | None:
    p = PurePosixPath(path)
    name = p.name.split(".")[0] if ".test." in p.name or ".spec." in p.name else p.stem
    for pattern, repl in _TEST_NAME:
        if pattern.match(name):
            stem = pattern.sub(repl, name)
            return stem if stem and stem != name else None
    return None


def _retest_calls(db: StoreBackend, lk: Lookup, done_files: set[int],
                  updated_calls: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """The TESTS edges of test-file calls whose target changed (outside `done_files`, which are
    redone whole): delete those at each such (unit, line) and return every call there to derive
    them again."""
    spots: set[tuple[int, int]] = set()
    for src, fid, line in graph_edges.call_spots(db, list(updated_calls)):
        if fid not in done_files and is_test_path(lk.file_path.get(fid, "")):
            spots.add((src, line))
    if not spots:
        return []
    graph_edges.delete_tests_edges_at(db, sorted(spots))
    return graph_edges.resolved_calls_at(db, sorted(spots))


def derive_tests(db: StoreBackend, lk: Lookup, files: set[int] | None, files_changed: bool = True,
                 updated_calls: Sequence[int] = ()) -> None:
    """TESTS edges: from test units to the code they call (for `files`, and for the calls of
    `updated_calls` elsewhere), and from test files to the file their name points at (for every
    test file when files were added or removed)."""
    if files is None:
        graph_edges.delete_tests_edges(db)
        rows = graph_edges.resolved_calls(db)
        file_ids = list(lk.file_path)
    else:
        files = {f for f in files if is_test_path(lk.file_path.get(f, ""))}  # only tests test
        graph_edges.delete_tests_edges(db, sorted(files))
        rows = graph_edges.resolved_calls(db, sorted(files))
        file_ids = [f for f in files if f in lk.file_path]
        rows += _retest_calls(db, lk, files, updated_calls)
        if files_changed:
            # the file -> file edges from test file names (not those of calls made at file level)
            graph_edges.delete_file_tests_edges(db)
            file_ids = list(lk.file_path)
    lk.preload_units((x for r in rows for x in (r[0], r[2])), db)
    graph_edges.insert_tests_edges(db, tests_rows(lk, rows, file_ids))


def tests_rows(lk: Lookup, calls: Iterable[tuple[int, int, int, int]], file_ids: list[int]
               ) -> list[tuple[int, int, int, str, int]]:
    """TESTS rows from resolved calls (src, src_file, dst, line; their units loaded) and from
    the names of the test files among `file_ids`."""
    new: set[tuple[int, int, int, str, int]] = set()
    unit = dict.get  # loaded: skip a lazy map's per-key check
    for src, fid, dst, line in calls:
        s, d = unit(lk.units, src), unit(lk.units, dst)
        if s is None or d is None or d.is_test or not is_test_path(lk.file_path.get(fid, "")):
            continue
        if is_test_path(lk.file_path.get(d.file_id, "")):
            continue
        new.add((src, fid, dst, d.name, line))
    if file_ids:
        lk.ensure_stems()
    for fid in file_ids:
        path = lk.file_path[fid]
        if not is_test_path(path):
            continue
        stem = _test_target_stem(path)
        if not stem:
            continue
        targets = [f for f in lk.stems.get(stem, ()) if not is_test_path(lk.file_path[f])]
        if targets:
            target = closest(targets, path, lk.file_path)
            new.add((lk.file_unit[fid], fid, lk.file_unit[target], lk.file_path[target], 1))
    return sorted(new)
