"""Retrieval on code it was not tuned on: prose against code, bug reports, question words
against names. A small Flask-like repository with docs, a changelog and issue templates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.retrieval import focus, names, prose, report
from coderag_tui.service import CodeRag

_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike"]
_CHANGES = "".join(
    f"Version 1.{i}.0\n-------------\n\n- Fix {_WORDS[i % 13]} handling in {_WORDS[(i * 7) % 13]} mode.\n"
    + ("- The request context is pushed earlier when dispatching a request; documented.\n" if i % 20 == 3 else "")
    + "\n"
    for i in range(60)
)
FLASKISH: dict[str, str | bytes] = {
    "src/flaskish/__init__.py": "from .app import Flask\n",
    "src/flaskish/ctx.py": '''"""Contexts."""


class RequestContext:
    """Holds request-level information."""

    def __init__(self, app, environ):
        self.app = app
        self.environ = environ

    def push(self):
        """Bind the context to the current context."""
        app_ctx = self.app.app_context()
        app_ctx.push()
        self._cv_tokens = [app_ctx]

    def pop(self, exc=None):
        self._cv_tokens.pop()
''',
    "src/flaskish/app.py": '''"""The application object."""
from .ctx import RequestContext


class Flask:
    """The application: a WSGI callable."""

    def request_context(self, environ):
        return RequestContext(self, environ)

    def dispatch_request(self):
        """Match the URL and call the view function."""
        rule = self.url_map.match()
        return self.view_functions[rule.endpoint](**rule.args)

    def full_dispatch_request(self):
        """Preprocess, dispatch and handle errors."""
        rv = self.preprocess_request()
        if rv is None:
            rv = self.dispatch_request()
        return self.finalize_request(rv)

    def make_response(self, rv):
        if rv is None:
            raise TypeError("The view function did not return a valid response.")
        return rv

    def wsgi_app(self, environ, start_response):
        ctx = self.request_context(environ)
        ctx.push()
        return self.full_dispatch_request()
''',
    "docs/reqcontext.rst": "The Request Context\n===================\n\n"
    + "The request context is pushed when a request is dispatched to a view function.\n" * 30,
    "docs/views.md": "# Views\n\n" + "A view function is called when a request is dispatched.\n" * 30,
    "CHANGES.rst": _CHANGES,
    ".github/ISSUE_TEMPLATE/bug_report.md": """---
name: Bug report
about: Report a bug in Flaskish (not other projects which depend on Flaskish)
---

Describe the bug. Include a minimal reproducible example.

To Reproduce: the steps to reproduce the behavior and the full traceback.

Expected behavior: describe what you expected to happen.

Environment:
- Python version:
- Flaskish version:
""",
}

BUG_REPORT = """**Describe the bug**
Returning None from a view function raises an error.

**To Reproduce**
Steps to reproduce the behavior:

```
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.12/site-packages/flaskish/app.py", line 27, in make_response
    raise TypeError("The view function did not return a valid response.")
TypeError: The view function did not return a valid response.
```

**Expected behavior**
A clear error.

**Environment**
- Python version: 3.12
- Flaskish version: 3.0.3
"""


@pytest.fixture
def flaskish(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(FLASKISH))


def _top(service: CodeRag, query: str, k: int = 5) -> list[str]:
    return [f"{h.unit.path}:{h.unit.qualname}" for h in service.search(query, k=k)]


def test_a_behaviour_question_ranks_code_before_docs(flaskish: CodeRag) -> None:
    top = _top(flaskish, "where is the request context pushed")
    assert top[0].startswith("src/"), top
    assert "src/flaskish/ctx.py:RequestContext.push" in top, top
    files = [h.unit.path for h in flaskish.search_files("where is the request context pushed", k=3)]
    assert files[0].startswith("src/"), files


def test_a_docs_question_still_finds_the_docs(flaskish: CodeRag) -> None:
    files = [h.unit.path for h in flaskish.search_files("where is the request context documented", k=5)]
    assert files[0] in ("docs/reqcontext.rst", "CHANGES.rst"), files
    assert "docs/reqcontext.rst" in files


def test_question_words_find_joined_names(flaskish: CodeRag) -> None:
    top = _top(flaskish, "How does Flask dispatch a request to a view function?")
    assert "src/flaskish/app.py:Flask.dispatch_request" in top[:3], top
    assert "src/flaskish/app.py:Flask.full_dispatch_request" in top, top


def test_bug_report_finds_the_code_not_the_template(flaskish: CodeRag) -> None:
    files = [h.unit.path for h in flaskish.search_files(BUG_REPORT, k=3)]
    assert files[0] == "src/flaskish/app.py", files
    top = _top(flaskish, BUG_REPORT, k=3)
    assert top[0] == "src/flaskish/app.py:Flask.make_response", top
    assert all(".github" not in t for t in top)


def test_report_signals() -> None:
    sig = report.signals(BUG_REPORT)
    assert "Describe the bug" not in sig.text and "Expected behavior" not in sig.text
    assert "Returning None" in sig.text
    assert sig.frames == (report.Frame("/home/me/venv/lib/python3.12/site-packages/flaskish/app.py", 27,
                                       "make_response"),)
    assert sig.errors == ("TypeError",)
    stdlib = report.signals('File "/usr/lib/python3.12/threading.py", line 1, in run')
    assert stdlib.frames == ()
    assert report.path_suffixes("/a/b/c.py") == ["a/b/c.py", "b/c.py", "c.py"]


def test_name_pairs_and_forms() -> None:
    pairs = names.name_pairs("how is the request context pushed")
    assert ("context", "push") in pairs and ("request", "context") in pairs
    assert names.forms("retries") == ("retries", "retry")
    assert "configure" in names.forms("configured")
    assert names.name_pairs("what does the function code do") == []


@pytest.mark.parametrize(("query", "docs"), [
    ("how do I install it", True), ("where is the changelog", True), ("what does the documentation say", True),
    ("where is the request context pushed", False), ("how are retries configured", False),
    # a pasted report is judged by its title: its body mentions installs and docs in passing
    ("Trailing whitespace in DatasetGroupBy text representation\nWhen displaying a DatasetGroupBy the "
     "first line of output contains a trailing whitespace. The first example in the documentation shows "
     "it, and it breaks doctests.\n\nINSTALLED VERSIONS\n pip install xarray==0.18 on Python 3.8, Linux.", False),
    ("Docs: the tutorial's install section names the wrong extra\nThe tutorial says to run pip install "
     "with the fast extra, but that extra was renamed two releases ago and the command fails for new "
     "users who copy it from the page.", True),
])
def test_about_docs(query: str, docs: bool) -> None:
    assert prose.about_docs(query) is docs


def test_prose_units() -> None:
    assert prose.is_prose_unit("docs/index.rst", "rst")
    assert prose.is_prose_unit("CHANGES.rst", "rst")
    assert prose.is_prose_unit("HISTORY", "text")
    assert prose.is_prose_unit(".github/ISSUE_TEMPLATE/bug_report.md", "markdown")
    assert prose.is_prose_unit(".github/ISSUE_TEMPLATE/config.yml", "yaml")
    assert not prose.is_prose_unit("src/flaskish/app.py", "python")


_LONG_DOC = "\n".join(f"        Paragraph {i} of the documentation about middlewares and WSGI servers." for i in range(40))
LONG_UNIT: dict[str, str | bytes] = {
    "app.py": f'''class App:
    def wsgi_app(self, environ, start_response):
        """The actual WSGI application.

{_LONG_DOC}
        """
        ctx = self.request_context(environ)
        error = None
        try:
            ctx.push()
            response = self.full_dispatch_request()
        finally:
            ctx.pop(error)
        return response(environ, start_response)

    def request_context(self, environ):
        return environ
''',
}


def test_a_shortened_unit_keeps_the_lines_the_question_is_about(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(LONG_UNIT))
    ctx = service.context("where does wsgi_app push the request context", max_tokens=500)
    text = ctx.render()
    assert "def wsgi_app(self, environ, start_response):" in text
    assert "ctx.push()" in text, text
    assert "Paragraph 39" not in text  # the docstring gave way
    assert ctx.tokens <= 500


def test_matching_lines_put_code_before_comments() -> None:
    lines = list(enumerate(['    """Push the context."""', "    # push it", "    x = 1", "    ctx.push()"], 1))
    order = focus.matching_lines(lines, focus.question_stems("pushed context"), context=0)
    assert order[0] == 4 and set(order) == {1, 2, 4}
    assert focus.comment_lines(lines) == {1, 2}


def test_a_parent_that_is_a_primary_has_no_outline_too(flaskish: CodeRag) -> None:
    ctx = flaskish.context("RequestContext push pop", max_tokens=4000)
    primaries = {(p.path, p.start_line) for p in ctx.pieces if p.role == "primary"}
    for p in ctx.pieces:
        if p.role == "parent":
            assert (p.path, p.start_line) not in primaries, p.citation


def test_rst_is_chunked_by_its_headings() -> None:
    from coderag_tui.config import ChunkSettings
    from coderag_tui.parsing.extract import parse_source
    from coderag_tui.parsing.languages import registry

    text = "".join(f"Version 1.{i}.0\n-------------\n\n" + "".join(
        f"- Fixed the {w} option of the {_WORDS[(i + j) % 13]} command.\n" for j, w in enumerate(_WORDS[: 4 + i % 20]))
        + "\n" for i in range(40))
    pf = parse_source("CHANGES.rst", text.encode(), registry()["rst"], ChunkSettings())
    sections = [u for u in pf.units if u.kind == "section"]
    assert len(sections) == 40
    assert [u.name for u in sections[:2]] == ["Version 1.0.0", "Version 1.1.0"]
    assert sections[0].start_line == 1 and sections[0].end_line < sections[1].start_line
    starts = {u.start_line for u in sections}
    assert len(pf.chunks) >= 40
    for c in pf.chunks:  # no chunk runs across a heading, and none is larger than a code chunk
        assert not any(c.start_line < s <= c.end_line for s in starts), (c.start_line, c.end_line)
        assert c.nws <= ChunkSettings().max


def test_a_prose_hit_cites_its_chunk_not_the_whole_page(flaskish: CodeRag) -> None:
    ctx = flaskish.context("changelog: when is the request context pushed", max_tokens=4000)
    pages = [p for p in ctx.pieces if p.path in ("CHANGES.rst", "docs/reqcontext.rst", "docs/views.md")]
    assert pages
    # (a parent outline and a file note at the end describe the page; they quote none of it)
    assert all(p.end_line - p.start_line < 60 for p in pages if p.role not in ("parent", "metadata")), \
        [(p.citation, p.role) for p in pages]


CONTEXTVAR: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/globals.py": 'from contextvars import ContextVar\n\n_cv_app = ContextVar("app_ctx")\n',
    "pkg/helpers.py": "def make_name(x):\n    return str(x)\n",
    "pkg/ctx.py": '''from pkg.globals import _cv_app
from pkg.helpers import make_name


class _AppCtxGlobals:
    def get(self, name, default=None):
        return self.__dict__.get(name, default)


class AppContext:
    def push(self):
        ctx = _cv_app.get(None)
        self._check(ctx)
        local_helper()
        return make_name(ctx)

    def _check(self, ctx):
        return ctx


def local_helper():
    return 1
''',
    "pkg/config.py": "class Config:\n    def get(self, key):\n        return key\n",
}


def test_a_call_on_an_object_of_unknown_type_is_not_resolved_by_name(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(CONTEXTVAR))
    callees = {e.name: e for e in service.callees("AppContext.push")}
    assert callees["get"].unit is None  # not _AppCtxGlobals.get, not Config.get
    assert (callees["_check"].how, callees["_check"].confidence) == ("scope", 1.0)
    assert callees["make_name"].how == "import" and callees["make_name"].unit is not None
    assert callees["local_helper"].how == "same file"
    assert callees["_check"].confidence > callees["make_name"].confidence == callees["local_helper"].confidence
    callers = service.callers("make_name")
    assert callers and callers[0].how == "import"


def test_markdown_setext_headings_inside_a_section_get_sections() -> None:
    from coderag_tui.config import ChunkSettings
    from coderag_tui.parsing.extract import parse_source
    from coderag_tui.parsing.languages import registry

    text = "Release History\n===============\n\n" + "".join(
        f"2.{i}.0 (2024-01-{i + 1:02d})\n-----------------\n\n" + "".join(
            f"- Fixed the {w} option of the {_WORDS[(i + j) % 13]} command.\n" for j, w in enumerate(_WORDS[: 4 + i]))
        + "\n" for i in range(9))
    pf = parse_source("HISTORY.md", text.encode(), registry()["markdown"], ChunkSettings())
    top = [u for u in pf.units if u.name == "Release History"]
    subs = [u for u in pf.units if u.kind == "section" and u.name.startswith("2.")]
    assert len(top) == 1 and len(subs) == 9
    assert all(pf.units[u.parent].name == "Release History" for u in subs if u.parent is not None)
    assert [u.start_line for u in pf.units[1:]] == sorted(u.start_line for u in pf.units[1:])
    starts = {u.start_line for u in subs}
    for c in pf.chunks:  # a chunk belongs to the version it is in, never spans two
        assert not any(c.start_line < s <= c.end_line for s in starts), (c.start_line, c.end_line)
        assert pf.units[c.unit_index].name != "Release History" or c.end_line < min(starts)


# a report whose steps run the tests: it is still about the view's code
REPORT_RUNNING_TESTS = BUG_REPORT.replace("**To Reproduce**", "**To Reproduce**\nRun `pytest tests/test_views.py`")


@pytest.mark.parametrize(("query", "tests"), [
    ("where are the tests of make_response", True),
    ("how does make_response handle None", False),
    (REPORT_RUNNING_TESTS, False),
    ("Tests fail when a view returns None\n" + REPORT_RUNNING_TESTS, True),
])
def test_about_tests(query: str, tests: bool) -> None:
    from coderag_tui.retrieval.search import about_tests

    assert about_tests(query) is tests
