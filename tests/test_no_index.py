"""No answer from an empty or missing index: a folder never indexed, or whose index holds no
file, says so in one line and exits 2 on every command that reads an index, `ask` included
(no model is asked without code), and creates no index file; a subfolder of an indexed
repository uses the repository's index. Real CLI (in process), real index files, a real user
cache folder (isolated by conftest)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.cli.main import main as run_cli
from coderag_tui.service import CodeRag
from tests.helpers.shop import FILES

READS = [
    ("search", "total price"), ("symbol", "Cart"), ("callers", "tax_for"), ("callees", "Cart.total"),
    ("context", "how is tax computed"), ("map",), ("similar", "Cart"), ("ask", "what does tax_for return?"),
]


def _all_files(*roots: Path) -> set[Path]:
    return {p for root in roots if root.exists() for p in root.rglob("*")}


def test_a_folder_never_indexed_says_so_on_every_command_and_writes_nothing(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(FILES)
    cache = Path(os.environ["XDG_CACHE_HOME"])
    config = tmp_path / "cfg.toml"
    # a model that does not exist: were it loaded before the index is checked, that would be the error
    config.write_text(f'[llm]\nmodel = "{tmp_path / "no-such-model.gguf"}"\n')
    before = _all_files(repo, cache)
    for command in READS:
        code = run_cli([*command, "--repo", str(repo), "--config", str(config)])
        err = capsys.readouterr().err
        assert code == 2, (command, err)
        assert err.count("\n") == 1 and "has no index yet" in err and f"coderag index {repo}" in err, (command, err)
        assert "no-such-model" not in err
    assert _all_files(repo, cache) == before  # no index file, no folder


def test_an_empty_index_says_so_and_ask_calls_no_model(make_repo: Callable[..., Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo({"logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4})
    db = tmp_path / "empty.db"
    assert run_cli(["index", str(repo), "--no-embed", "--db", str(db)]) == 0
    capsys.readouterr()
    config = tmp_path / "cfg.toml"
    config.write_text(f'[llm]\nmodel = "{tmp_path / "no-such-model.gguf"}"\n')
    for command in (("ask", "what does this do?"), ("search", "anything"), ("symbol", "main")):
        code = run_cli([*command, "--repo", str(repo), "--db", str(db), "--config", str(config)])
        err = capsys.readouterr().err
        assert code == 2 and "holds no file" in err and "no-such-model" not in err, (command, err)
    # the service says so to every interface: the ask flow's first event is the error
    service = CodeRag.open(repo, db_path=db)
    [event] = list(service.ask("what does this do?"))
    assert event.kind == "error" and "holds no file" in event.text
    service.close()


def test_a_subfolder_of_an_indexed_repository_uses_its_index(make_repo: Callable[..., Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo({**FILES, "shop/extra/__init__.py": ""})
    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert run_cli(["index", str(repo), "--no-embed"]) == 0
    capsys.readouterr()
    before = _all_files(repo, cache)
    assert run_cli(["search", "tax owed on an amount", "--repo", str(repo / "shop" / "extra")]) == 0
    assert "shop/tax.py:4-6" in capsys.readouterr().out  # the repository's paths, from its index
    assert run_cli(["symbol", "Cart", "--repo", str(repo / "shop")]) == 0
    assert "shop/cart.py" in capsys.readouterr().out
    assert CodeRag.open(repo / "shop" / "extra").root == repo.resolve()
    assert _all_files(repo, cache) == before  # no second index


def test_a_query_that_matches_nothing_finds_nothing(make_repo: Callable[..., Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """No keyword, no symbol: the nearest vectors to nonsense are still some chunks, and noise."""
    repo = make_repo(FILES)
    db = tmp_path / "vectors.db"
    assert run_cli(["index", str(repo), "--db", str(db)]) == 0  # with vectors (the bundled model)
    capsys.readouterr()
    for nonsense in ("qwertyuiopzxcv", "asdkjh qwpoeiru zmxncb"):
        assert run_cli(["search", nonsense, "--repo", str(repo), "--db", str(db)]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and f"nothing matches {nonsense!r}" in captured.err
        assert run_cli(["search", nonsense, "--repo", str(repo), "--db", str(db), "--json"]) == 1
        assert capsys.readouterr().out.strip() == "[]"
    assert run_cli(["search", "tax owed on an amount", "--repo", str(repo), "--db", str(db)]) == 0
    assert "shop/tax.py" in capsys.readouterr().out


def test_an_index_being_built_answers_from_the_files_it_holds(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    """The app indexes a new repository in the background: a question asked meanwhile is
    answered from the files indexed so far, not refused."""
    service = CodeRag.open(make_repo(FILES), db_path=tmp_path / "i.db")
    service.index()
    with service.db.transaction():
        service.db.execute("DELETE FROM meta WHERE key = 'last_update'")  # as before the first run ends
    assert not service.has_index()
    service.require_index()  # no error: it holds files
    assert service.search("tax owed", k=3)
    service.close()


def test_a_question_nothing_matches_asks_no_model(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    from tests.helpers.loopback import Loopback, openai_sse
    repo = make_repo(FILES)
    db = tmp_path / "vectors.db"
    assert run_cli(["index", str(repo), "--db", str(db)]) == 0  # with vectors
    server = Loopback(lambda h, n: openai_sse(h, ["An invented answer."]))
    try:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}/v1"\nmodel = "m"\nretries = 0\n'
                          'n_ctx = 4096\ntools = "off"\n')
        service = CodeRag.open(repo, config=config, db_path=db)
        [*_, last] = list(service.ask("qwertyuiopzxcv"))
        assert last.kind == "error" and "no model was asked" in last.text
        assert not [r for r in server.requests if r["method"] == "POST"]
        [*_, answered] = list(service.ask("How is the tax on an amount computed?"))
        assert answered.kind == "done" and [r for r in server.requests if r["method"] == "POST"]
        service.close()
    finally:
        server.close()
