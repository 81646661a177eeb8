"""Whether a follow-up question continues the previous one.

Retrieval for "and what calls it?" needs the previous question ("where is the session cookie
signed?") to know what "it" is; retrieval for a question on another subject must not get the
previous one, or its code crowds out the new topic's. A follow-up continues the previous
question when it has nothing of its own to search for, refers back to it (a pronoun, "what
about", a leading "and") with few words of its own, or shares most of its search words with it.
"""

from __future__ import annotations

import re

from coderag_tui.retrieval.lexical import query_terms

# words that point back at the previous question's subject
_REFERS = frozenset(
    ["it", "its", "it's", "they", "them", "their", "theirs", "this", "that", "these", "those", "there", "he", "she", "him", "her", "one", "ones", "same", "such", "former", "latter", "above"]
)
# openings of an elliptic question ("and the tests?", "what about flask.cli?")
_OPENINGS = ("and ", "also ", "but ", "so ", "then ", "what about ", "how about ", "and what ",
             "what else", "why?", "how?", "where?", "more")
# words that ask about a subject without naming one ("what calls it", "where is it tested")
_GENERIC = frozenset(
    ["call", "caller", "callers", "calls", "called", "return", "returns", "returned", "test", "tests", "tested", "testing", "work", "works", "do", "does", "done", "mean", "means", "example", "examples", "define", "defined", "definition", "happen", "happens", "handle", "handles", "handled", "implement", "implemented", "implementation", "change", "changed", "fail", "fails", "error", "errors", "file", "files", "function", "functions", "method", "methods", "class", "classes", "code", "value", "values", "type", "types", "argument", "arguments", "parameter", "parameters", "show", "explain", "more", "else", "instead", "where", "why", "how"]
)
_OWN_WORDS = 2  # a question referring back with up to this many words of its own continues
SHARED = 0.5  # the share of the question's words also in the previous one that means "same topic"
_WORDS = re.compile(r"[a-z']+")


def _stem(word: str) -> str:
    # plural and verb forms of one word ("cookies"/"cookie", "signed"/"sign") are one topic
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_GENERIC_STEMS = frozenset(_stem(w) for w in _GENERIC)


def continues(previous: str, question: str) -> bool:
    """True when `question` is about the same thing as `previous` (see the module doc)."""
    if not previous.strip():
        return False
    own = {_stem(t) for t in query_terms(question)}
    if not own:
        return True  # "why?", "and then?": nothing to search for but the previous subject
    text = " ".join(question.lower().split())
    refers = bool(_REFERS.intersection(_WORDS.findall(text))) or text.startswith(_OPENINGS)
    if refers and len(own - _GENERIC_STEMS) <= _OWN_WORDS:
        return True
    before = {_stem(t) for t in query_terms(previous)}
    return len(own & before) / len(own) >= SHARED
