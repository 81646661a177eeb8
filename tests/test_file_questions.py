"""Questions that ask for files ("which file handles X") are answered by the file ranking: in
`coderag search`, in the MCP search tool, and with file pieces in the composed context."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering.toolbox import CodeRagTools
from coderag_tui.cli.main import main
from coderag_tui.config import Settings
from coderag_tui.retrieval.intent import is_file_question
from coderag_tui.service import CodeRag

FILE_QUESTIONS = [
    "Which file handles authentication?",
    "where in the codebase is logging configured",
    "What module implements the retry logic?",
    "Which files would I change to add a new command-line flag?",
    "In which file is the session created?",
    "what python modules deal with cookies",
    "Which source files parse the settings?",
    "what files should I edit to support a new database backend",
]
UNIT_QUESTIONS = [
    "where is RequestContext.push defined",
    "Where is the session object created?",
    "which function handles redirects",
    "Which class implements retries?",
    "what files import requests.adapters",  # structural: the graph answers it
    "How does Flask dispatch a request to a view function?",
    "what does the file utils.py do",
    "What is the file size limit for uploads?",
    "callers of load_settings",
    "load_settings",
    "",
    "Which file handles this?\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\n"
    "ValueError: bad",  # a pasted report is not a one-line question about files
]


@pytest.mark.parametrize("question", FILE_QUESTIONS)
def test_questions_that_ask_for_files(question: str) -> None:
    assert is_file_question(question)


@pytest.mark.parametrize("question", UNIT_QUESTIONS)
def test_questions_about_units_are_not_file_questions(question: str) -> None:
    assert not is_file_question(question)


# settings.py has many units about loading settings; one function elsewhere names them all
FILES = {
    "app/settings.py": '''"""Loading the application's settings."""
import json
import os


def read_settings_file(path):
    """Read the settings file (JSON) and return its values."""
    with open(path) as f:
        return json.load(f)


def settings_from_environment(prefix="APP_"):
    """Settings given as environment variables override the settings file."""
    return {k[len(prefix):].lower(): v for k, v in os.environ.items() if k.startswith(prefix)}


def merge_settings(*layers):
    """Later settings layers win over earlier ones."""
    merged = {}
    for layer in layers:
        merged.update(layer)
    return merged


def load_settings(path):
    """Load the settings: the file, then the environment."""
    return merge_settings(read_settings_file(path), settings_from_environment())
''',
    "app/server.py": '''from app.settings import load_settings


class Server:
    """Serves requests on a port."""

    def __init__(self, port):
        self.port = port

    def start(self):
        return f"listening on {self.port}"


def start_server_with_loaded_configuration_settings_handling(path):
    """Start a server after loading the configuration settings (see settings)."""
    return Server(load_settings(path)["port"]).start()
''',
    "app/db.py": '''def connect(url):
    """Open a database connection."""
    return url.split("://", 1)[0]


def close(conn):
    return None
''',
    "app/cli.py": '''def show(values):
    """Print the loaded settings, one per line."""
    for key, value in sorted(values.items()):
        print(key, value)
''',
    "app/logs.py": '''import logging


def configure_logging(level):
    """Set the root logger's level."""
    logging.basicConfig(level=level)
''',
}
QUESTION = "Which file handles loading the settings?"


@pytest.fixture
def indexed(make_repo: Callable[..., Path], tmp_path: Path) -> list[str]:
    root = make_repo(FILES)
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    return common


def _search(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[list[dict[str, Any]], str]:
    assert main(["search", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_search_switches_to_files_for_a_file_question(
        indexed: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    hits, err = _search([QUESTION, *indexed], capsys)
    assert "a question about files: files ranked by their matching code" in err
    assert [h["kind"] for h in hits] == ["file"] * len(hits)
    assert hits[0]["path"] == "app/settings.py", hits
    assert main(["search", QUESTION, *indexed]) == 0  # the same in lines
    assert "app/settings.py" in capsys.readouterr().out.splitlines()[0]

    hits, err = _search([QUESTION, "--units", *indexed], capsys)
    assert "a question about files" not in err
    assert "function" in {h["kind"] for h in hits}  # code units, not the file list
    hits, err = _search(["where is load_settings defined", *indexed], capsys)
    assert "a question about files" not in err and hits[0]["name"] == "load_settings"


def test_the_search_tool_lists_files_first(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    tools = CodeRagTools(open_service(make_repo(FILES)))
    tools.start()
    text = tools.search_codebase(QUESTION)
    head, _, units = text.partition("\n\n")
    assert head.startswith(f"Files for {QUESTION!r}") and head.splitlines()[1].startswith("1. app/settings.py")
    assert "result" in units.splitlines()[0]  # the code units follow
    assert not tools.search_codebase("where is load_settings defined").startswith("Files for")


def test_a_file_question_gets_outlines_of_the_best_files_it_would_not_show(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    settings = Settings()  # one primary hit: the context shows settings.py and what it calls
    settings = replace(settings, context=replace(settings.context, primary_results=1))
    service = open_service(make_repo(FILES), settings)
    budget = 2000
    ctx = service.context(QUESTION, max_tokens=budget)
    files = [p for p in ctx.pieces if p.role == "file"]
    others = {p.path for p in ctx.pieces if p.role not in ("file", "metadata")}
    assert ctx.pieces[0].role == "file", [(p.citation, p.role) for p in ctx.pieces]  # they lead it
    ranked = [h.unit.path for h in service.search_files(QUESTION, k=3)]
    assert ranked[0] == "app/settings.py" and ranked[0] in others
    assert [p.path for p in files] == [p for p in ranked if p not in others]  # the rest, in rank order
    assert "start_server_with_loaded_configuration_settings_handling" in files[0].text  # an outline
    assert sum(p.tokens for p in files) <= budget * 0.1 and ctx.tokens <= budget
    plain = service.context("How are the settings loaded?", max_tokens=budget)
    assert not [p for p in plain.pieces if p.role == "file"]
