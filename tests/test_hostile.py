"""A hostile repository, generated here: nothing in it stops, hangs or breaks the index.

Every case is a real file (FIFOs, a socket, a symlink to /dev/zero, file names that are not
UTF-8, files that segfault or hang a grammar's scanner...) beside normal code; the real CLI, the
service, the MCP server and the watcher run on it. The acceptance test counts its cases.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import coderag_tui.parsing.extract as extract
import coderag_tui.parsing.guard as guard
from coderag_tui.config import ChunkSettings, EmbedSettings, IndexSettings, Settings, WatchSettings
from coderag_tui.indexing.workers import PARALLEL_MIN_FILES
from coderag_tui.parsing.extract import parse_source
from coderag_tui.parsing.guard import ParseLimit, check_nesting
from coderag_tui.parsing.languages import detect_language
from coderag_tui.service import CodeRag
from coderag_tui.sources.discovery import classify, compile_patterns, stat_paths, walk
from coderag_tui.sources.names import fs_path, repo_path

# ---------------------------------------------------------------------------- the corpus

CAFE = os.fsdecode(b"caf\xe9.py")  # a file name that is not UTF-8
CAFE_PATH = "caf\\xe9.py"  # its repository path: shown and stored like this
BACKSLASH = "back\\slash.py"
BACKSLASH_PATH = "back\\\\slash.py"
BAD_PATTERNS = ("[z-a]*.py", "a[b-a]", "\\", "!")

NORMAL: dict[str, str] = {
    "app/core.py": "from app.rates import helper_rate\n\n\ndef compute_total(amount):\n"
                   '    """The total with the rate applied."""\n    return amount * helper_rate()\n',
    "app/rates.py": "def helper_rate():\n    return 1.5\n",
    "web/page.js": "function renderPage(title) {\n  return '<h1>' + title + '</h1>';\n}\n",
    "srv/main.go": "package main\n\nfunc ServeIndex(w int) int {\n\treturn w + 1\n}\n",
    "docs/guide.md": "# Guide\n\nHow to compute the total.\n",
    # ignored by the good patterns of the .gitignore that also holds bad ones
    "debug.log": "compute_total was here\n",
    "build/out.py": "def built_artifact():\n    pass\n",
}

# one file per language, each with a known definition: Haskell, Elixir, OCaml and SQL had none
DEFINITIONS: dict[str, tuple[str, str]] = {
    "lang/Shapes.hs": ("area_of_shape", "module Shapes where\n\ndata Shape = Circle Int\n\n"
                                        "area_of_shape :: Shape -> Int\narea_of_shape (Circle r) = 3 * r * r\n"),
    "lang/billing.ex": ("charge_card", "defmodule Billing do\n  def charge_card(card, amount) do\n"
                                       "    Gateway.post(card, amount)\n    charge_card(card, 0)\n  end\nend\n"),
    "lang/geometry.ml": ("perimeter_of", "let perimeter_of w h = 2 * (w + h)\n\ntype point = { x : int }\n"),
    "lang/schema.sql": ("invoices_table", "CREATE TABLE invoices_table (id INT PRIMARY KEY, total INT);\n"),
}

# 20 languages, each file a valid definition followed by broken syntax: indexed, never fatal
SYNTAX_ERRORS: dict[str, str] = {
    "py": "def ok_py():\n    return 1\n\ndef broken(:\n    return (]\n",
    "js": "function okJs() { return 1; }\nfunction broken( { return [1, 2; }\n",
    "ts": "function okTs(): number { return 1; }\nclass Broken { method(: string { }\n",
    "go": "package x\n\nfunc OkGo() int { return 1 }\n\nfunc broken( {\n",
    "rs": "fn ok_rs() -> i32 { 1 }\nfn broken( -> { let x = ; }\n",
    "java": "class OkJava { int ok() { return 1; } void broken( { int x = ; }\n",
    "c": "int ok_c(void) { return 1; }\nint broken( { return ; \n",
    "cpp": "int ok_cpp() { return 1; }\nclass Broken { void m( { };\n",
    "cs": "class OkCs { int Ok() { return 1; } void Broken( { }\n",
    "rb": "def ok_rb\n  1\nend\ndef broken(\n  [1, 2\n",
    "php": "<?php\nfunction ok_php() { return 1; }\nfunction broken( { return [1, ; }\n",
    "kt": "fun okKt(): Int = 1\nfun broken( { val x = }\n",
    "swift": "func okSwift() -> Int { return 1 }\nfunc broken( -> { let x = }\n",
    "scala": "object OkScala { def ok(): Int = 1\n def broken( = { }\n",
    "sh": "ok_sh() { echo 1; }\nbroken() { if then fi; ((\n",
    "lua": "function ok_lua() return 1 end\nfunction broken( return end end\n",
    "hs": "okHs :: Int\nokHs = 1\nbroken = (1 +\n",
    "ex": "defmodule OkEx do\n  def ok, do: 1\n  def broken(, do: [\nend\n",
    "ml": "let ok_ml = 1\nlet broken = (1 +\n",
    "sql": "CREATE TABLE ok_sql (id INT);\nCREATE TABLE broken (id INT,,;\n",
}


def _nested(open_: str, close: str, depth: int, inner: str = "1") -> str:
    """`depth` levels, one per line (so the file is not taken for minified code)."""
    return "".join(open_ + "\n" for _ in range(depth)) + inner + "\n" + "".join(close + "\n" for _ in range(depth))


# deeply nested code in many languages: each indexes (fully, or as plain text with its reason)
DEEP: dict[str, str] = {
    "deep/parens.py": "x = " + _nested("(", ")", 3000),
    "deep/lists.py": "x = " + _nested("[", "]", 3000),
    "deep/dicts.py": "x = " + _nested("{'k':", "}", 2000),
    "deep/ifs.py": "".join("    " * i + "if x:\n" for i in range(100)) + "    " * 100 + "pass\n",
    "deep/lambdas.py": "f = " + "lambda: (\n" * 1500 + "1" + ")\n" * 1500,
    "deep/calls.py": "x = " + "f(\n" * 3000 + "1" + ")\n" * 3000,
    "deep/chain.py": "x = (a\n" + "    .f()\n" * 10000 + ")\n",
    "deep/binop.py": "x = (1\n" + "    + 1\n" * 10000 + ")\n",
    "deep/braces.js": _nested("{", "}", 5000),
    "deep/arrays.js": "const x = " + _nested("[", "]", 5000) + ";\n",
    "deep/callbacks.js": "".join("f(function () {\n" for _ in range(1000)) + "".join("});\n" for _ in range(1000)),
    "deep/array.json": _nested("[", "]", 5000),
    "deep/parens.c": "int x = " + _nested("(", ")", 5000) + ";\n",
    "deep/blocks.rs": "fn f() " + _nested("{", "}", 3000, "1"),
    "deep/blocks.go": "package x\n\nfunc f() " + _nested("{", "}", 3000, ""),
    "deep/blocks.java": "class A { void f() " + _nested("{", "}", 3000, "") + "}\n",
    "deep/nested.rb": "".join("if x\n" for _ in range(2000)) + "1\n" + "".join("end\n" for _ in range(2000)),
    "deep/tables.lua": "x = " + _nested("{", "}", 3000),
    "deep/nested.html": "".join("<div>\n" for _ in range(3000)) + "x\n" + "".join("</div>\n" for _ in range(3000)),
    "deep/quotes.md": "".join("> " * i + f"quote level {i}\n" for i in range(1, 301)),  # segfaulted the parse
    "deep/indent.yaml": "".join(" " * i + "a:\n" for i in range(300)) + " " * 300 + "b: 1\n",  # segfaulted
}


@dataclass
class Tally:
    """Cases tried and passed, with what failed (the acceptance test asserts none did)."""

    tried: int = 0
    failed: list[str] = field(default_factory=list)

    def check(self, name: str, ok: object, detail: object = "") -> None:
        self.tried += 1
        if not ok:
            self.failed.append(f"{name}: {detail}")

    @property
    def passed(self) -> int:
        return self.tried - len(self.failed)


def make_corpus(root: Path) -> dict[str, str]:
    """Write the hostile repository; returns path -> what the index must say about it:
    "indexed", "partial" (indexed as plain text, reported) or "skip:REASON"."""
    expect: dict[str, str] = {}
    files = {**NORMAL, **{p: src for p, (_, src) in DEFINITIONS.items()}, **DEEP,
             **{f"broken/broken.{ext}": src for ext, src in SYNTAX_ERRORS.items()}}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        expect[rel] = "indexed"
    del expect["debug.log"], expect["build/out.py"]
    expect["deep/quotes.md"] = expect["deep/indent.yaml"] = "partial"

    (root / ".gitignore").write_text("\n".join((*BAD_PATTERNS, "*.log", "build/")) + "\n")
    expect[".gitignore"] = "indexed"
    # a FIFO named .gitignore (reading it blocked forever) and one that is a symlink to /dev/zero
    (root / "fifo_ignore").mkdir()
    os.mkfifo(root / "fifo_ignore" / ".gitignore")
    (root / "fifo_ignore" / "kept.py").write_text("def kept_beside_fifo():\n    pass\n")
    (root / "zero_ignore").mkdir()
    os.symlink("/dev/zero", root / "zero_ignore" / ".gitignore")
    (root / "zero_ignore" / "kept.py").write_text("def kept_beside_zero():\n    pass\n")
    expect.update({"fifo_ignore/.gitignore": "skip:fifo", "fifo_ignore/kept.py": "indexed",
                   "zero_ignore/.gitignore": "skip:symlink", "zero_ignore/kept.py": "indexed"})

    (root / CAFE).write_text("def cafe_function():\n    return 'au lait'\n")
    (root / BACKSLASH).write_text("def backslash_function():\n    pass\n")
    expect[CAFE] = expect[BACKSLASH] = "indexed"

    (root / "late_nul.py").write_bytes(b"x = 1\n" * 1500 + b"\x00" + b"y = 2\n")  # first NUL after 8 KB
    (root / "noise.txt").write_bytes(bytes(range(1, 9)) * 600)  # control bytes, no NUL
    expect["late_nul.py"] = expect["noise.txt"] = "skip:binary"

    os.mkfifo(root / "pipe.py")
    expect["pipe.py"] = "skip:fifo"
    with _cwd(root):  # a relative name: a socket path is limited to ~100 bytes
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("sock.py")
        sock.close()
    expect["sock.py"] = "skip:socket"
    return expect


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hostile") / "repo"
    root.mkdir()
    return root, make_corpus(root)


def _settings() -> Settings:
    return Settings(embed=EmbedSettings(enabled=False), watch=WatchSettings(debounce_ms=200))


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coderag_tui", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


# ---------------------------------------------------------------------------- the acceptance test


@pytest.mark.slow  # every command, as processes, over the whole hostile corpus
def test_hostile_repository_end_to_end(corpus: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, expect = corpus
    db = tmp_path / "index.db"
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    common = ("--db", str(db), "--config", str(config))
    tally = Tally()

    out = _cli("index", str(root), "--json", *common)
    tally.check("index completes", out.returncode == 0, out.stderr[-500:])
    summary = json.loads(out.stdout)
    errors = "\n".join(summary["errors"])
    for pattern in BAD_PATTERNS:
        tally.check(f"bad ignore pattern {pattern!r} reported", f"bad ignore pattern {pattern!r}" in errors, errors)
    tally.check("a FIFO .gitignore is not read", "fifo_ignore/.gitignore: not read" in errors, errors)
    tally.check("a .gitignore symlink is not read", "zero_ignore/.gitignore: not read" in errors, errors)
    tally.check("no file failed", summary["files_failed"] == 0, summary)
    tally.check("no RecursionError", "Recursion" not in errors, errors)

    status = json.loads(_cli("status", "--json", "--repo", str(root), *common).stdout)
    problems = dict(status["problems"])
    service = CodeRag(root, _settings(), db)
    try:
        indexed = {r[0] for r in service.db.execute("SELECT path FROM files")}
        skips = dict(service.db.rows("SELECT path, reason FROM skips"))
        for rel, want in sorted(expect.items()):
            shown = repo_path(rel)
            if want == "indexed":
                tally.check(f"{shown} indexed", shown in indexed, skips.get(shown, "missing"))
            elif want == "partial":
                tally.check(f"{shown} indexed as text, reported",
                            shown in indexed and problems.get(shown, "").startswith("partial: "), problems)
            else:
                tally.check(f"{shown} skipped: {want[5:]}", skips.get(shown) == want[5:], skips.get(shown))
        for rel in ("debug.log", "build/out.py"):
            tally.check(f"{rel} still ignored", rel not in indexed and rel not in skips)

        # definitions, in the new languages and behind the hostile names
        for rel, (name, _) in DEFINITIONS.items():
            tally.check(f"definition in {rel}", rel in [u.path for u in service.symbols(name, 5) if u.name == name])
        for name, path in (("cafe_function", CAFE_PATH), ("backslash_function", BACKSLASH_PATH),
                           ("kept_beside_fifo", "fifo_ignore/kept.py"), ("compute_total", "app/core.py")):
            tally.check(f"symbol {name}", [u.path for u in service.symbols(name, 5) if u.name == name] == [path])
        tally.check("a non-UTF-8 name opens again", service.read_lines(CAFE_PATH, 1, 1) == ["def cafe_function():"])
        callers = [(e.unit or e.source) for e in service.callers("helper_rate")]
        tally.check("the graph resolves", [u.qualname for u in callers if u] == ["compute_total"], callers)
    finally:
        service.close()

    # the other commands on the same index
    sym = _cli("symbol", "cafe_function", "--json", "--repo", str(root), *common)
    tally.check("symbol (CLI)", sym.returncode == 0 and json.loads(sym.stdout)[0]["path"] == CAFE_PATH, sym.stderr)
    search = _cli("search", "cafe_function", "--json", "--repo", str(root), *common)
    tally.check("search (CLI)", search.returncode == 0 and json.loads(search.stdout)[0]["path"] == CAFE_PATH,
                search.stderr[-300:])
    repo_map = _cli("map", "--repo", str(root), *common)
    tally.check("map (CLI)", repo_map.returncode == 0 and "compute_total" in repo_map.stdout, repo_map.stderr[-300:])
    context = _cli("context", "how is the total computed", "--repo", str(root), *common)
    tally.check("context (CLI)", context.returncode == 0 and "app/core.py" in context.stdout, context.stderr[-300:])
    again = _cli("index", str(root), "--json", *common)
    tally.check("a second index run", again.returncode == 0 and json.loads(again.stdout)["files_indexed"] == 0,
                again.stdout[-300:] + again.stderr[-300:])

    print(f"\nhostile corpus: {tally.tried} cases tried, {tally.passed} passed")
    assert not tally.failed, "\n".join(tally.failed)


def test_mcp_tools_on_the_hostile_repository(corpus: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio

    from tests.helpers.mcp import _session_calls, _text
    root, _ = corpus
    service = CodeRag(root, _settings(), tmp_path / "mcp.db")
    service.index()
    service.close()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lookup_symbol", {"name": "cafe_function"}),
        ("search_codebase", {"query": "cafe_function", "limit": 5}),
        ("get_file_summary", {"path": CAFE_PATH}),
        ("find_callers", {"name": "helper_rate"}),
        ("repo_map", {"max_tokens": 400}),
        ("get_context", {"task": "how is the total computed", "max_tokens": 800}),
    ]
    _, results = anyio.run(_session_calls, root, tmp_path / "mcp.db", calls)
    texts = {key: _text(r) for key, r in results.items()}
    assert not [k for k, r in results.items() if r.is_error], texts
    assert CAFE_PATH in texts["0:lookup_symbol"] and CAFE_PATH in texts["1:search_codebase"]
    assert "cafe_function" in texts["2:get_file_summary"]
    assert "compute_total" in texts["3:find_callers"] and "compute_total" in texts["4:repo_map"]


def test_watch_keeps_working_on_the_hostile_repository(corpus: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from tests.helpers.watch import Recorder, wait_for
    root, _ = corpus
    service = CodeRag(root, _settings(), tmp_path / "watch.db")
    service.index()
    events = Recorder()
    watcher = service.watch(events)
    name = os.fsdecode(b"new\xff.py")
    try:
        (root / "fresh").mkdir()
        (root / "fresh" / "added.py").write_text("def added_while_watching():\n    pass\n")
        (root / "fresh" / name).write_text("def added_with_bad_name():\n    pass\n")
        os.mkfifo(root / "fresh" / "another_pipe.py")
        (root / "fresh" / "deep.md").write_text(DEEP["deep/quotes.md"])
        wait_for(lambda: [u.path for u in service.symbols("added_while_watching", 5)] == ["fresh/added.py"])
        wait_for(lambda: [u.path for u in service.symbols("added_with_bad_name", 5)] == ["fresh/new\\xff.py"])
        watcher.wait_idle()
        assert not events.phase("error"), events.phase("error")
        assert service.db.one("SELECT reason FROM skips WHERE path = 'fresh/another_pipe.py'") == ("fifo",)
        assert service.db.one("SELECT 1 FROM files WHERE path = 'fresh/deep.md'") is not None
    finally:
        watcher.stop()
        service.close()
        for leftover in ("added.py", name, "another_pipe.py", "deep.md"):
            with contextlib.suppress(OSError):
                (root / "fresh" / leftover).unlink()
        with contextlib.suppress(OSError):
            (root / "fresh").rmdir()


# ---------------------------------------------------------------------------- one file, one worker


def test_a_parser_that_segfaults_costs_its_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real segfault of the Markdown scanner, in a parse worker: the guard that refuses the
    file before tree-sitter sees it is switched off (forked workers inherit that)."""
    monkeypatch.setattr(extract, "check_nesting", lambda source, language: None)
    root = tmp_path / "repo"
    root.mkdir()
    for i in range(PARALLEL_MIN_FILES + 60):
        (root / f"m{i:03}.py").write_text(f"def func_{i}(x):\n    return x + {i}\n")
    (root / "quotes.md").write_text(DEEP["deep/quotes.md"])
    settings = Settings(index=IndexSettings(workers=2), embed=EmbedSettings(enabled=False))
    service = CodeRag(root, settings, tmp_path / "index.db")
    try:
        summary = service.index()
        assert summary.files_indexed == PARALLEL_MIN_FILES + 61 and summary.files_failed == 0
        assert summary.errors == ("quotes.md: the parser crashed its process (or passed the time or memory "
                                  "limit): indexed as plain text",)
        assert [u.path for u in service.symbols("func_359", 5) if u.name == "func_359"] == ["m359.py"]
        # the next run does not parse it again
        assert service.index().files_indexed == 0
    finally:
        service.close()


def _big_python(n: int) -> str:
    return "".join(f"def big_{i}(x):\n    return helper_{i}(x) + {i}\n\n" for i in range(n))


@pytest.mark.slow  # waits out the worker's time limit
def test_a_file_past_the_worker_time_limit_costs_its_file_only(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's alarm, made tiny (forked workers inherit it): the big file cannot finish."""
    import coderag_tui.indexing.workers as workers

    monkeypatch.setattr(workers, "FILE_SECONDS", 0.001)
    root = tmp_path / "repo"
    root.mkdir()
    for i in range(PARALLEL_MIN_FILES + 10):
        (root / f"m{i:03}.py").write_text(f"def func_{i}(x):\n    return x + {i}\n")
    (root / "big.py").write_text(_big_python(12000))  # under max_file_bytes
    settings = Settings(index=IndexSettings(workers=2), embed=EmbedSettings(enabled=False))
    service = CodeRag(root, settings, tmp_path / "index.db")
    try:
        summary = service.index()
        assert summary.files_indexed == PARALLEL_MIN_FILES + 11 and summary.files_failed == 0
        # ended by its alarm (or, on a starved machine, by the wait for a fresh worker)
        assert [e for e in summary.errors if e.startswith("big.py: ") and e.endswith(": indexed as plain text")]
        assert service.db.one("SELECT reason FROM skips WHERE path = 'big.py'")[0].startswith("partial: ")
    finally:
        service.close()


def test_an_in_process_parse_has_a_time_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _big_python(5000).encode()
    with pytest.raises(ParseLimit):
        guard.parse_tree("python", source, seconds=1e-6)
    assert guard.parse_tree("python", b"def ok():\n    pass\n").root_node.type == "module"  # reset
    monkeypatch.setattr(guard, "_TIMED", [1e-6])
    root = tmp_path / "repo"
    root.mkdir()
    (root / "big.py").write_text(_big_python(5000))
    (root / "small.md").write_text("# Title\n\nText.\n")
    service = CodeRag(root, _settings(), tmp_path / "index.db")
    try:
        summary = service.index()
        assert summary.files_indexed == 2 and summary.files_failed == 0
        assert "big.py: parse took longer than 1e-06 s: indexed as plain text" in summary.errors
        hits = [h.unit.path for h in service.search("big_4999")]
        assert "big.py" in hits  # searchable as text
    finally:
        service.close()


# ---------------------------------------------------------------------------- the units


@pytest.mark.parametrize("name", [b"plain.py", b"caf\xc3\xa9.py", b"caf\xe9.py", b"a\\b.py", b"a\\x41.py",
                                  b"\xff\xfe/\\\\x/\xc3", b"d\xc3/\xa9.py", b"tab\tname.py"])
def test_repository_paths_round_trip(name: bytes) -> None:
    fs_name = os.fsdecode(name)
    stored = repo_path(fs_name)
    stored.encode("utf-8")  # always storable and printable
    assert fs_path(stored) == fs_name


def test_repository_paths_are_one_to_one() -> None:
    names = [b"caf\xe9.py", b"caf\\xe9.py", b"caf\\\\xe9.py", b"caf\xc3\xa9.py", b"cafe.py"]
    stored = {repo_path(os.fsdecode(n)) for n in names}
    assert len(stored) == len(names)
    assert repo_path("caf\xe9.py") == "caf\xe9.py"  # valid UTF-8 (é) is kept as is


def test_bad_ignore_patterns_are_skipped_with_a_warning() -> None:
    warnings: list[str] = []
    spec = compile_patterns([(".gitignore", ["*.log", "[z-a]*.py", "a[b-a]", "\\", "!", "build/"])], warnings)
    assert spec.match_file("x.log") and spec.match_file("build/a.py") and not spec.match_file("zebra.py")
    assert [w.split(":")[1] for w in warnings] == ["2", "3", "4", "5"]


def test_walk_reports_special_files_and_never_reads_them(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "a.py").write_text("x = 1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    os.symlink("/dev/zero", sub / ".ignore")
    result = walk(tmp_path, IndexSettings())
    assert [c.path for c in result.files] == ["a.py"]
    assert result.skips == {".gitignore": "fifo", "pipe.py": "fifo", "sub/.ignore": "symlink"}
    assert [w.split(":")[0] for w in result.warnings] == [".gitignore", "sub/.ignore"]


def test_stat_paths_never_goes_through_a_symlinked_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 1\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    os.symlink(outside, repo / "linked")
    result = stat_paths(repo, ["a.py", "linked/secret.py", "linked"], IndexSettings())
    assert [c.path for c in result.files] == ["a.py"] and result.skips == {"linked": "symlink"}
    assert "linked/secret.py" not in {c.path for c in walk(repo, IndexSettings()).files}


def test_binary_detection_looks_past_the_first_block() -> None:
    settings = IndexSettings()
    assert classify(b"x = 1\n" * 2000 + b"\x00", settings) == "binary"
    assert classify(bytes(range(1, 32)) * 40, settings) == "binary"
    assert classify("naïve = 'café'\tok\r\n".encode() * 100, settings) == ""
    assert classify(b"\x1b[31mred\x1b[0m\n" * 100, settings) == ""  # ANSI colours are text


def test_nesting_a_scanner_cannot_take_is_refused_before_parsing() -> None:
    with pytest.raises(ParseLimit):
        check_nesting(DEEP["deep/quotes.md"].encode(), "markdown")
    with pytest.raises(ParseLimit):
        check_nesting(("- " * 200 + "x\n").encode(), "markdown")  # nested lists on one line
    with pytest.raises(ParseLimit):
        check_nesting(DEEP["deep/indent.yaml"].encode(), "yaml")
    check_nesting(("> " * 50 + "x\n").encode(), "markdown")  # deep, but fine
    check_nesting(NORMAL["app/core.py"].encode(), "python")


def test_a_long_call_chain_parses_and_keeps_its_definitions() -> None:
    source = ("def head():\n    return 1\n\nx = (a\n" + "    .f()\n" * 10000 + ")\n").encode()
    parsed = parse_source("chain.py", source, detect_language("chain.py"), ChunkSettings())
    assert [u.name for u in parsed.units[1:]] == ["head"]
    assert parsed.chunks and parsed.chunks[-1].end_line == 10005


@pytest.mark.parametrize("path", sorted(DEFINITIONS))
def test_new_languages_have_definitions(path: str) -> None:
    name, source = DEFINITIONS[path]
    parsed = parse_source(path, source.encode(), detect_language(path), ChunkSettings())
    assert parsed.structured and name in [u.name for u in parsed.units]


def test_new_language_details() -> None:
    def units(path: str, source: str) -> list[tuple[str, str, tuple[str, ...]]]:
        parsed = parse_source(path, source.encode(), detect_language(path), ChunkSettings())
        return [(u.kind, u.qualname, tuple(c.name for c in u.calls)) for u in parsed.units[1:]]

    assert units("a.ex", DEFINITIONS["lang/billing.ex"][1]) == [
        ("module", "Billing", ()), ("function", "Billing.charge_card", ("post", "charge_card"))]
    assert units("a.ml", "let add x y = helper x + y\nmodule M = struct\n  let f () = add 1 2\nend\n") == [
        ("function", "add", ("helper",)), ("module", "M", ()), ("function", "M.f", ("add",))]
    assert units("a.hs", "class Box f where\n  empty :: f a\ninstance Show T where\n  show _ = render 1\n") == [
        ("interface", "Box", ()), ("method", "Box.empty", ()), ("impl", "Show", ()),
        ("method", "Show.show", ("render",))]
    assert units("a.mli", "val make_point : int -> int -> t\ntype t = { x : int }\n") == [
        ("signature", "make_point", ()), ("type", "t", ())]
    assert [k for k, _, _ in units("a.sql", "CREATE VIEW v AS SELECT 1;\nCREATE INDEX i ON t(c);\n")] == [
        "view", "index"]
