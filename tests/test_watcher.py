"""The file watcher: a real folder, real watchdog events, a real index.

Every change is made on disk and the test polls the index (bounded) until it shows it.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coderag_tui.config import EmbedSettings, Settings, WatchSettings
from coderag_tui.indexing.watcher import Watcher
from coderag_tui.service import CodeRag
from coderag_tui.sources.discovery import IgnoreMatcher, walk
from tests.helpers.watch import DEBOUNCE_MS, WAIT_S, Recorder, _settings, ctrl_c_stops_it, wait_for


def defined(service: CodeRag, name: str) -> list[str]:
    """Paths that define exactly `name` (symbols() also returns fuzzy matches)."""
    return sorted(u.path for u in service.symbols(name, 50) if u.name == name)


def searchable(service: CodeRag, word: str) -> list[str]:
    """Paths of search hits for a word, when the service has search (else [])."""
    search = getattr(service, "search", None)
    if search is None:
        return []
    hits = search(word)
    hits = getattr(hits, "hits", hits)
    return sorted({h.unit.path for h in hits})




@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Callable[..., tuple[CodeRag, Watcher, Recorder]]]:
    """watched(repo, db_path=None, embed=False) -> an indexed service, its started watcher, its events."""
    started: list[tuple[CodeRag, Watcher]] = []

    def make(repo: Path, db_path: Path | None = None, embed: bool = False) -> tuple[CodeRag, Watcher, Recorder]:
        service = CodeRag(repo, _settings(embed), db_path or tmp_path / f"index-{len(started)}.db")
        service.index()
        events = Recorder()
        watcher = service.watch(events)
        started.append((service, watcher))
        time.sleep(0.1)  # let inotify settle before the test changes files
        return service, watcher, events

    yield make
    for service, watcher in started:
        watcher.stop()
        service.close()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ---------------------------------------------------------------------------- changes are seen


def test_create_modify_move_delete_are_searchable(make_repo, watched) -> None:
    root = make_repo({"core.py": "def existing_function():\n    return 1\n"})
    service, watcher, events = watched(root)
    assert defined(service, "existing_function") == ["core.py"]

    # create
    _write(root / "fresh.py", "def brand_new_alpha():\n    return existing_function()\n")
    wait_for(lambda: defined(service, "brand_new_alpha") == ["fresh.py"])
    if hasattr(service, "search"):
        wait_for(lambda: "fresh.py" in searchable(service, "brand_new_alpha"), what="search")

    # modify: the old name goes, the new one comes
    _write(root / "fresh.py", "def renamed_beta():\n    return existing_function()\n")
    wait_for(lambda: defined(service, "renamed_beta") == ["fresh.py"])
    assert defined(service, "brand_new_alpha") == []

    # move (into a folder that does not exist yet): delete of src + create of dest
    (root / "pkg").mkdir()
    os.replace(root / "fresh.py", root / "pkg" / "moved.py")
    wait_for(lambda: defined(service, "renamed_beta") == ["pkg/moved.py"])
    assert service.outline("fresh.py") == []

    # delete
    (root / "pkg" / "moved.py").unlink()
    wait_for(lambda: defined(service, "renamed_beta") == [])
    assert service.outline("pkg/moved.py") == []
    assert defined(service, "existing_function") == ["core.py"]

    watcher.wait_idle()
    assert not events.phase("error")
    indexed = events.phase("indexed")
    assert indexed and all(e.summary is not None for e in indexed if e.paths)


def test_editor_style_atomic_save(make_repo, watched) -> None:
    """Editors write a temporary file and rename it over the target."""
    root = make_repo({"mod.py": "def before_save():\n    pass\n"})
    service, watcher, _ = watched(root)
    tmp = root / ".mod.py.swp-tmp"
    tmp.write_text("def after_save():\n    pass\n")
    os.replace(tmp, root / "mod.py")
    wait_for(lambda: defined(service, "after_save") == ["mod.py"])
    assert defined(service, "before_save") == []
    assert service.outline(".mod.py.swp-tmp") == []


def test_folder_moved_out_and_back_in(make_repo, watched, tmp_path: Path) -> None:
    """A folder moved out of the repository reports only itself: its files must still go."""
    files = {f"pkg/sub/m{i}.py": f"def in_folder_{i}():\n    pass\n" for i in range(5)}
    root = make_repo({"top.py": "x = 1\n", **files})
    service, watcher, events = watched(root)
    assert defined(service, "in_folder_3") == ["pkg/sub/m3.py"]

    outside = tmp_path / "elsewhere"
    shutil.move(str(root / "pkg"), str(outside))
    wait_for(lambda: all(defined(service, f"in_folder_{i}") == [] for i in range(5)))

    shutil.move(str(outside), str(root / "lib"))
    wait_for(lambda: all(defined(service, f"in_folder_{i}") == [f"lib/sub/m{i}.py"] for i in range(5)))

    shutil.rmtree(root / "lib")
    wait_for(lambda: all(defined(service, f"in_folder_{i}") == [] for i in range(5)))
    assert service.status().files == 1
    assert not events.phase("error")


# ---------------------------------------------------------------------------- ignored files


def test_ignored_files_never_trigger_indexing(make_repo, watched) -> None:
    root = make_repo(
        {".gitignore": "*.log\ngenerated/\n", "app.py": "def app_main():\n    pass\n"}, git=True
    )
    # the index lives inside the repository: its own writes must not trigger batches
    service, watcher, events = watched(root, db_path=root / "index.db")
    watcher.wait_idle()
    time.sleep(DEBOUNCE_MS / 1000 * 3)
    events.clear()

    _write(root / "debug.log", "def not_code():\n    pass\n")
    _write(root / "generated" / "gen.py", "def ignored_generated():\n    pass\n")
    _write(root / "node_modules" / "lib" / "index.py", "def ignored_vendor():\n    pass\n")
    _write(root / "__pycache__" / "x.py", "def ignored_cache():\n    pass\n")
    _write(root / ".git" / "scratch", "anything\n")
    time.sleep(DEBOUNCE_MS / 1000 * 5)
    assert events.events == [], [e.phase + ": " + ",".join(e.paths) for e in events.events]

    # still alive: a real change is one batch with only that path, and nothing follows it
    _write(root / "app.py", "def app_main_v2():\n    pass\n")
    wait_for(lambda: defined(service, "app_main_v2") == ["app.py"])
    watcher.wait_idle()
    time.sleep(DEBOUNCE_MS / 1000 * 5)
    watcher.wait_idle()
    batches = events.phase("indexing")
    assert [e.paths for e in batches] == [("app.py",)]
    for name in ("not_code", "ignored_generated", "ignored_vendor", "ignored_cache"):
        assert defined(service, name) == []


def test_gitignore_change_rescans(make_repo, watched) -> None:
    root = make_repo({"keep.py": "def kept():\n    pass\n", "out/gen.py": "def later_ignored():\n    pass\n"})
    service, watcher, events = watched(root)
    assert defined(service, "later_ignored") == ["out/gen.py"]
    _write(root / ".gitignore", "out/\n")
    wait_for(lambda: defined(service, "later_ignored") == [])
    assert defined(service, "kept") == ["keep.py"]
    # and the matcher follows the new rules: a change under out/ is now dropped
    watcher.wait_idle()
    events.clear()
    _write(root / "out" / "gen.py", "def still_ignored():\n    pass\n")
    time.sleep(DEBOUNCE_MS / 1000 * 4)
    assert events.events == []


def test_ignore_matcher_agrees_with_walk(make_repo) -> None:
    root = make_repo({
        ".gitignore": "*.tmp\n/build_dir/\n!keep.tmp\n",
        "src/.gitignore": "secret.py\n",
        "src/a.py": "a = 1\n", "src/secret.py": "s = 1\n", "x.tmp": "t", "keep.tmp": "k",
        "build_dir/b.py": "b = 1\n", "node_modules/n.js": "n", "lib/x.min.js": "m",
        "deep/er/c.py": "c = 1\n",
    })
    settings = Settings().index
    result = walk(root, settings)
    listed = {c.path for c in result.files} | set(result.skips)
    matcher = IgnoreMatcher(root, settings)
    every = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    for path in every:
        assert matcher.is_ignored(path) == (path not in listed), path
    assert matcher.is_ignored("build_dir", is_dir=True)
    assert not matcher.is_ignored("deep/er", is_dir=True)


# ---------------------------------------------------------------------------- bursts


def test_a_save_waits_less_than_a_burst(make_repo, tmp_path: Path) -> None:
    """A few changed files (an editor's save) wait save_debounce_ms of quiet; more files, a
    folder or a rescan wait the full debounce_ms, so a burst stays one batch."""
    root = make_repo({"a.py": "x = 1\n"})
    settings = Settings(watch=WatchSettings(debounce_ms=1000, save_debounce_ms=150),
                        embed=EmbedSettings(enabled=False))
    service = CodeRag(root, settings, tmp_path / "index.db")
    try:
        watcher = Watcher(service)  # not started: only its bookkeeping is exercised
        assert watcher.quiet_period() == 0.15
        for name in ("a.py", "a.py~", ".a.py.swp"):
            watcher.notice(root / name)
        assert watcher.quiet_period() == 0.15
        watcher.notice(root / "b.py")
        assert watcher.quiet_period() == 1.0
        folder = Watcher(service)
        folder.notice(root / "pkg", is_dir=True)
        assert folder.quiet_period() == 1.0
        # the short period never exceeds the debounce given (`coderag watch --debounce-ms 50`)
        assert Watcher(service, debounce_ms=50).quiet_period() == 0.05
        assert Watcher(service, save_debounce_ms=400).quiet_period() == 0.4
    finally:
        service.close()


def test_burst_of_writes_is_one_batch(make_repo, watched) -> None:
    root = make_repo({"base.py": "def base():\n    pass\n"})
    service, watcher, events = watched(root)
    n = 320
    for i in range(n):  # like a branch switch: hundreds of files, new folders among them
        _write(root / f"burst/part{i % 8}/file_{i}.py", f"def burst_fn_{i}():\n    return base()\n")
    wait_for(lambda: service.status().files == n + 1, timeout=60)
    assert watcher.wait_idle(30)
    batches = events.phase("indexing")
    assert 1 <= len(batches) <= 2, [len(e.paths) for e in batches]
    assert sum(len(e.paths) for e in batches) >= n
    assert defined(service, "burst_fn_0") == ["burst/part0/file_0.py"]
    assert defined(service, f"burst_fn_{n - 1}") == [f"burst/part{(n - 1) % 8}/file_{n - 1}.py"]

    # a burst of deletes too
    events.clear()
    shutil.rmtree(root / "burst")
    wait_for(lambda: service.status().files == 1, timeout=60)
    assert watcher.wait_idle(30)
    assert 1 <= len(events.phase("indexing")) <= 2


def test_changes_during_a_batch_go_to_the_next(make_repo, tmp_path: Path) -> None:
    """Batches never overlap: a change seen while one runs is indexed by the following one."""
    root = make_repo({"a.py": "def first_one():\n    pass\n"})
    service = CodeRag(root, _settings(), tmp_path / "idx.db")
    service.index()
    running = threading.Event()
    release = threading.Event()
    overlap: list[bool] = []
    active = threading.Lock()
    original = service.index

    def slow_index(**kw):  # type: ignore[no-untyped-def]
        if not active.acquire(blocking=False):
            overlap.append(True)
            return original(**kw)
        try:
            running.set()
            release.wait(5)
            return original(**kw)
        finally:
            active.release()

    service.index = slow_index  # type: ignore[method-assign]
    events = Recorder()
    watcher = service.watch(events)
    try:
        time.sleep(0.1)
        _write(root / "a.py", "def second_one():\n    pass\n")
        assert running.wait(WAIT_S)
        _write(root / "b.py", "def during_batch():\n    pass\n")
        time.sleep(DEBOUNCE_MS / 1000 * 3)
        release.set()
        wait_for(lambda: defined(service, "during_batch") == ["b.py"])
        assert watcher.wait_idle()
        assert not overlap
        assert [e.paths for e in events.phase("indexing")] == [("a.py",), ("b.py",)]
    finally:
        release.set()
        watcher.stop()
        service.close()


def test_a_failed_batch_is_reported_and_retried(make_repo, tmp_path: Path) -> None:
    root = make_repo({"a.py": "def one():\n    pass\n"})
    service = CodeRag(root, _settings(), tmp_path / "idx.db")
    service.index()
    original = service.index
    calls: list[int] = []

    def flaky_index(**kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is busy")
        return original(**kw)

    service.index = flaky_index  # type: ignore[method-assign]
    events = Recorder()
    watcher = service.watch(events)
    try:
        time.sleep(0.1)
        _write(root / "a.py", "def two():\n    pass\n")
        wait_for(lambda: defined(service, "two") == ["a.py"])
        assert watcher.wait_idle()
        errors = events.phase("error")
        assert len(errors) == 1 and "database is busy" in errors[0].message
        assert errors[0].paths == ("a.py",)
        assert watcher.running
    finally:
        watcher.stop()
        service.close()


# ---------------------------------------------------------------------------- breaking changes


def test_removed_function_lists_its_caller_as_orphaned(make_repo, watched) -> None:
    root = make_repo({
        "lib.py": "def helper(x):\n    return x + 1\n\n\ndef other():\n    return 2\n",
        "app.py": "from lib import helper\n\n\ndef use_helper():\n    return helper(41)\n",
    })
    service, watcher, events = watched(root)
    assert [e.source.qualname for e in service.callers("helper") if e.source] == ["use_helper"] or \
        [e.unit.qualname for e in service.callers("helper") if e.unit] == ["use_helper"]

    _write(root / "lib.py", "def other():\n    return 2\n")  # helper removed
    wait_for(lambda: any(e.orphaned for e in events.phase("indexed")))
    event = [e for e in events.phase("indexed") if e.orphaned][-1]
    assert event.paths == ("lib.py",)
    assert event.new_orphans == 1 and event.orphaned == 1
    orphan = event.orphans[0]
    assert orphan.source is not None and orphan.source.qualname == "use_helper"
    assert orphan.source.path == "app.py" and "helper" in orphan.name
    assert "orphaned caller" in event.message and "use_helper" in event.message
    assert [e.source.qualname for e in service.status().orphaned if e.source] == ["use_helper"]

    # renamed back into existence: the caller resolves again and is no longer orphaned
    events.clear()
    _write(root / "lib.py", "def helper(x):\n    return x + 1\n\n\ndef other():\n    return 2\n")
    wait_for(lambda: events.phase("indexed"))
    assert events.phase("indexed")[-1].orphaned == 0
    assert service.status().orphaned == ()


def test_renamed_function_orphans_callers_in_other_files(make_repo, watched) -> None:
    root = make_repo({
        "geo.py": "def area(w, h):\n    return w * h\n",
        "a.py": "from geo import area\n\n\ndef room():\n    return area(2, 3)\n",
        "b.py": "import geo\n\n\ndef house():\n    return geo.area(4, 5)\n",
    })
    service, watcher, events = watched(root)
    _write(root / "geo.py", "def surface(w, h):\n    return w * h\n")
    wait_for(lambda: any(e.orphaned for e in events.phase("indexed")))
    event = [e for e in events.phase("indexed") if e.orphaned][-1]
    assert sorted(e.source.qualname for e in event.orphans if e.source) == ["house", "room"]


# ---------------------------------------------------------------------------- vectors


def test_vectors_refreshed_when_embedding_exists(make_repo, watched) -> None:
    if not hasattr(CodeRag, "embed"):
        pytest.skip("the service has no embed() yet")
    root = make_repo({"core.py": "def existing():\n    return 1\n"}, name="vec")
    service, watcher, events = watched(root, embed=True)
    service.embed(progress=None)
    before = service.status().vectors
    _write(root / "new.py", "def compute_invoice_total(items):\n    return sum(i.price for i in items)\n")
    wait_for(lambda: defined(service, "compute_invoice_total") == ["new.py"], timeout=60)
    watcher.wait_idle(60)
    st = service.status()
    assert st.vectors == st.chunks and st.vectors > before
    if hasattr(service, "search"):
        assert "new.py" in searchable(service, "invoice total of items")


# ---------------------------------------------------------------------------- the command


def test_watch_command_prints_a_line_per_batch_and_stops_on_ctrl_c(make_repo, tmp_path: Path) -> None:
    root = make_repo({"svc.py": "def serve():\n    return 1\n"})
    cfg = tmp_path / "watch.toml"
    # (no background summaries either: loading a model beside a 10 s wait is flaky under load)
    cfg.write_text(f"[watch]\ndebounce_ms = {DEBOUNCE_MS}\n\n[embed]\nenabled = false\n\n[summaries]\nbackground = false\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coderag_tui", "watch", str(root), "--db", str(tmp_path / "cli.db"),
         "--config", str(cfg)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=ctrl_c_stops_it,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for text in proc.stdout:
            lines.put(text)

    threading.Thread(target=pump, daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert first.startswith("indexed 1 file ("), first
        _write(root / "svc.py", "def serve():\n    return 2\n\n\ndef shutdown():\n    pass\n")
        second = lines.get(timeout=WAIT_S)
        assert second.startswith("updated 1 file in "), second
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "stopping the watcher" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
