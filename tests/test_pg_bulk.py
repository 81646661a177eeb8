"""A bulk build into PostgreSQL runs without parallel workers from the drop of its indexes to
their creation again (one process does the same sorts and scans with less CPU in all), on the
writer's connection alone; a build killed in between is finished by the next run the same way."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing.indexer import _BULK_MIN_FILES, Indexer
from coderag_tui.models import Progress
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import defer_indexes, restore_indexes
from tests.helpers.files import write_tree

SETTINGS = Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))
FILES = {f"mod{n}/api_{n}.py": f"def call_{n}(value, shared):\n    return shared.send(value * {n})\n"
         for n in range(_BULK_MIN_FILES + 5)}
SETTINGS_NAMES = ("max_parallel_maintenance_workers", "max_parallel_workers_per_gather")


def workers(store: StoreBackend) -> tuple[int, ...]:
    return tuple(int(store.scalar(f"SHOW {name}")) for name in SETTINGS_NAMES)


def test_a_bulk_build_loads_and_builds_its_indexes_without_parallel_workers(pg_url: str, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    store = open_store(pg_url, source=str(root), create=True)
    other = open_store(pg_url, repo=store.repo.name)  # type: ignore[attr-defined]
    seen: list[tuple[int, ...]] = []
    try:
        usual = workers(store)
        assert all(usual)  # (the server's defaults allow them)

        def progress(p: Progress) -> None:
            if p.phase == "resolve" and p.done == 0:  # (loaded; its indexes not yet made)
                seen.extend([workers(store), workers(other)])
        Indexer(store, root, SETTINGS).run(progress=progress)
        assert seen == [(0, 0), usual]  # the writer's connection, another one
        assert workers(store) == usual and not store.get_meta("deferred_indexes")
    finally:
        other.close()
        store.close()


def test_a_killed_bulk_build_is_finished_without_parallel_workers(pg_url: str, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    store = open_store(pg_url, source=str(root), create=True)
    try:
        usual = workers(store)
        with store.transaction():  # as a bulk build starts, then nothing more (killed)
            defer_indexes(store)
        assert workers(store) == (0, 0)
    finally:
        store.close()
    store = open_store(pg_url, source=str(root))
    try:
        assert workers(store) == usual  # a new connection: outside it
        built: list[tuple[int, ...]] = []
        execute = store.execute

        def spy(sql: str, params: tuple[object, ...] = ()) -> object:
            if sql.startswith("CREATE INDEX"):
                built.append(workers(store))
            return execute(sql, params)
        store.execute = spy  # type: ignore[method-assign]
        with store.transaction():
            restore_indexes(store)
        assert built and set(built) == {(0, 0)}
        assert workers(store) == usual and not store.get_meta("deferred_indexes")
    finally:
        store.close()
