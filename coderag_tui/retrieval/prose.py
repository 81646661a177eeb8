"""Prose against code: documentation, changelogs and issue templates compete with code only when
the question is about them.

A question about behaviour ("where is the request context pushed") shares words with the pages
that explain that behaviour, and long pages share many; the code is what such a question wants.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from coderag_tui.parsing.languages import is_prose
from coderag_tui.retrieval.filerank import is_report

PROSE_WEIGHT = 0.5  # a prose unit's fused score is scaled by this unless the question is about docs
_ABOUT_DOCS = re.compile(
    r"\b(?:docs?|documentation|documented|document|readme|changelog|change\s*log|changes|release\s+notes?|"
    r"history|news|install(?:ed|ing|ation)?|tutorials?|guides?|faq|docstrings?|manual|howto|"
    r"upgrad(?:e|ing)|migrat(?:e|ion|ing)|deprecat(?:ed|ion)s?|licen[cs]e|contribut(?:e|ing|ors?))\b",
    re.I,
)
_PROSE_NAMES = re.compile(
    r"^(?:changes|changelog|history|news|authors|contributors|contributing|readme|license|licence|"
    r"copying|notice|code_of_conduct|security|support|todo|install|upgrading|migration)(?:\.\w+)?$",
    re.I,
)


def about_docs(query: str) -> bool:
    """The question is about documentation, release notes or installation. A pasted report is
    judged by its title (first line) only: its body mentions docs, installs and licences in
    passing ("pip install", "INSTALLED VERSIONS", "as documented") while the bug is in code."""
    text = query.strip().split("\n", 1)[0] if is_report(query) else query
    return bool(_ABOUT_DOCS.search(text))


@functools.lru_cache(maxsize=65536)
def is_prose_unit(path: str, language: str) -> bool:
    """Documents (Markdown, reST, plain text...), changelog-like files and the repository's
    templates (`.github/`): words written for people, not code."""
    if is_prose(language) or language in ("text", ""):
        return True
    p = PurePosixPath(path)
    if p.parts[:1] == (".github",) and p.suffix.lower() in (".md", ".yml", ".yaml", ".txt", ""):
        return True
    return bool(_PROSE_NAMES.match(p.name))
