"""Careless input to the store: huge names (an index file and a PostgreSQL store), a foreign
SQLite file, a --db in no folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import apsw
import pytest

from coderag_tui.cli.main import main
from coderag_tui.mcp_server import CodeRagTools
from coderag_tui.service import CodeRag
from tests.helpers.files import write_tree

FILES: dict[str, str | bytes] = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef twice(x):\n    return add(x, x)\n",
}


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    repo = write_tree(tmp_path / "repo", FILES)
    db = tmp_path / "index.db"
    assert main(["index", str(repo), "--db", str(db), "--no-embed"]) == 0
    return repo, db


HUGE = ["a" * 100_000, "x_%" * 40_000, "pkg." + "b" * 100_000, "dir/" * 25_000, "add" + "a" * 60]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_huge_names_find_nothing_without_an_error(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_tree(tmp_path / "repo", FILES)
    where = ["--db", str(tmp_path / "index.db")] if backend == "sqlite" else \
        ["--store", request.getfixturevalue("pg_url")]
    assert main(["index", str(repo), *where, "--no-embed"]) == 0
    capsys.readouterr()
    service = CodeRag.open(repo, db_path=where[1] if backend == "sqlite" else None,
                           store=where[1] if backend != "sqlite" else None)
    tools = CodeRagTools(service)  # the MCP tools
    tools.ready.set()
    try:
        for name in HUGE:
            for command in ("symbol", "callers", "callees"):
                assert main([command, name, "--repo", str(repo), *where]) == 1
                err = capsys.readouterr().err
                assert "error" not in err and err.startswith("no "), err[:300]
            assert tools.lookup_symbol(name).startswith("No definition matches")
            assert "No callers" in tools.find_callers(name)
            assert main(["search", name, "--repo", str(repo), *where]) in (0, 1)
            assert "error" not in capsys.readouterr().err
    finally:
        service.close()


def test_long_names_still_match_by_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_name = "f" * 200  # (the parser keeps 200 characters of a name)
    repo = write_tree(tmp_path / "repo", {"long.py": f"def {long_name}():\n    return 1\n"})
    db = tmp_path / "index.db"
    assert main(["index", str(repo), "--db", str(db), "--no-embed"]) == 0
    capsys.readouterr()
    assert main(["symbol", "f" * 150, "--repo", str(repo), "--db", str(db)]) == 0
    assert "long.py:1-2" in capsys.readouterr().out


def test_a_foreign_sqlite_file_is_refused_and_left_alone(indexed: tuple[Path, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = indexed
    other = tmp_path / "other.sqlite"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE contacts(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO contacts(name) VALUES('ann')")
    conn.close()
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    for command in (["status"], ["search", "add"], ["symbol", "add"], ["index"]):
        assert main([*command, "--repo", str(repo), "--db", str(other)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "is not a coderag index" in err, err
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before
    conn = apsw.Connection(str(other))
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["contacts"]
    conn.close()


def test_a_db_in_a_missing_folder_is_refused(indexed: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = indexed
    target = tmp_path / "nonexistent" / "dir" / "x.db"
    for command in (["status"], ["index", "--no-embed"], ["index", "--rebuild", "--no-embed"]):
        assert main([*command, "--repo", str(repo), "--db", str(target)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "does not exist" in err, err
    assert not (tmp_path / "nonexistent").exists()
