"""Query routing: symbol, structural, similarity (a pasted snippet) or semantic (the rest).

Each route uses the index as fits: structural questions are answered from graph edges, symbols
from the definitions table (plus search), snippets mostly from vectors, the rest from hybrid search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SYMBOL = "symbol"
STRUCTURAL = "structural"
SIMILARITY = "similarity"
SEMANTIC = "semantic"

_NAME = r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|/)[A-Za-z_$][\w$.\-]*)*(?:\(\))?"
# (operation, pattern); the target is the group named "t"
_STRUCTURAL: list[tuple[str, re.Pattern[str]]] = [
    ("callers", re.compile(rf"^(?:callers|call\s*sites|usages|uses)\s+(?:of|for|to)\s+(?:the\s+)?(?:function\s+|method\s+)?`?(?P<t>{_NAME})`?$", re.I)),
    ("callers", re.compile(rf"^(?:who|what|which\s+\w+)\s+(?:calls|uses|invokes)\s+(?:the\s+)?(?:function\s+|method\s+)?`?(?P<t>{_NAME})`?$", re.I)),
    ("callers", re.compile(rf"^where\s+is\s+`?(?P<t>{_NAME})`?\s+(?:called|used|invoked)$", re.I)),
    ("callees", re.compile(rf"^(?:callees|calls)\s+(?:of|from|in)\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("callees", re.compile(rf"^what\s+(?:does|do)\s+`?(?P<t>{_NAME})`?\s+call$", re.I)),
    ("members", re.compile(rf"^(?:methods|members|functions|classes|definitions|symbols)\s+(?:of|in|on|defined\s+in)\s+(?:the\s+)?(?:class\s+|file\s+|module\s+)?`?(?P<t>{_NAME})`?$", re.I)),
    ("importers", re.compile(rf"^(?:what|who|which\s+files?)\s+imports?\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("importers", re.compile(rf"^(?:importers|imports)\s+of\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("imports", re.compile(rf"^what\s+does\s+`?(?P<t>{_NAME})`?\s+import$", re.I)),
    ("tests", re.compile(rf"^(?:tests?|test\s+cases)\s+(?:for|of|covering)\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("tests", re.compile(rf"^(?:what|which\s+tests?)\s+tests?\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("subclasses", re.compile(rf"^(?:subclasses|children|implementations|implementors|descendants)\s+of\s+`?(?P<t>{_NAME})`?$", re.I)),
    ("subclasses", re.compile(rf"^(?:what|which\s+classes|who)\s+(?:inherits?|extends?|implements?|subclass(?:es)?)\s+(?:from\s+)?`?(?P<t>{_NAME})`?$", re.I)),
    ("subclasses", re.compile(rf"^classes\s+(?:that|which)\s+(?:inherit|extend|implement)\s+(?:from\s+)?`?(?P<t>{_NAME})`?$", re.I)),
]
_DEFINITION = re.compile(
    rf"^(?:where\s+is\s+|definition\s+of\s+|find\s+|go\s+to\s+|show\s+(?:me\s+)?)?(?:the\s+)?"
    rf"(?:class|function|method|def|fn|func|struct|interface|trait|file|module|symbol)?\s*`?(?P<t>{_NAME})`?"
    rf"(?:\s+(?:defined|definition|declared))?\??$",
    re.I,
)
_SYMBOL_SHAPE = re.compile(rf"^`?{_NAME}`?$")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |async def |function |fn |func |pub |impl |import |from \S+ import |return\b|"
    r"if\s*\(|for\s*\(|while\s*\(|const |let |var |public |private |#include|@\w+)"
)
_WORDS = re.compile(r"\b[A-Za-z]{2,}\b")
_CODE_CHARS = set("(){}[];=<>:.,'\"")
_PROSE = re.compile(r"^(?:[A-Za-z][a-z']*[,;]?\s+){5,}.*[.?!]$|^(?:[A-Za-z][\w'-]*[,;]?\s+){8,}")


@dataclass(frozen=True)
class Route:
    kind: str  # symbol, structural, similarity, semantic
    op: str = ""  # structural: callers, callees, members, importers, imports, tests, subclasses
    target: str = ""  # the symbol or path the route is about


def looks_like_symbol(token: str) -> bool:
    """An identifier that is plainly code: CamelCase, snake_case, dotted, a path or `name()`."""
    t = token.strip().strip("`")
    if not _SYMBOL_SHAPE.match(t):
        return False
    if t.endswith("()") or "::" in t or "/" in t or "#" in t or "_" in t.strip("_") or t.startswith("__"):
        return True
    if "." in t:
        return not t.replace(".", "").isdigit()
    core = t.lstrip("_$")
    return any(c.isupper() for c in core[1:])


def looks_like_code(text: str) -> bool:
    """A pasted snippet: several lines, most of them code, few of them sentences. (A bug report
    that quotes code or a traceback among its sentences is a semantic question.)"""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    if any(ln.lstrip().startswith("```") for ln in lines):  # markdown: a report quoting code
        inside, words = False, 0
        for ln in lines:
            if ln.lstrip().startswith("```"):
                inside = not inside
            elif not inside:
                words += len(_WORDS.findall(ln))
        if words >= 4:
            return False
        lines = [ln for ln in lines if not ln.lstrip().startswith("```")]
        if not lines:
            return False
    codey = sum(1 for ln in lines if _CODE_LINE.match(ln) or ln.startswith(("    ", "\t"))
                or ln.rstrip().endswith((":", "{", "}", ";", ")", ",", "(", "[", "]")))
    prose = sum(1 for ln in lines if _PROSE.match(ln.strip()))
    body = "".join(lines)
    punct = sum(1 for c in body if c in _CODE_CHARS) / max(len(body), 1)
    return codey >= 0.6 * len(lines) and prose <= 0.2 * len(lines) and punct > 0.03


def classify(query: str) -> Route:
    q = query.strip()
    if not q:
        return Route(SEMANTIC)
    if "\n" in q and looks_like_code(q):
        return Route(SIMILARITY)
    one_line = " ".join(q.split()).rstrip("?").strip()
    for op, pattern in _STRUCTURAL:
        m = pattern.match(one_line)
        if m:
            return Route(STRUCTURAL, op, m.group("t").strip("`"))
    if _SYMBOL_SHAPE.match(one_line) and (looks_like_symbol(one_line) or len(one_line.split()) == 1
                                          and one_line[:1].isupper()):
        return Route(SYMBOL, target=one_line.strip("`"))
    m = _DEFINITION.match(one_line)
    if m and looks_like_symbol(m.group("t")) and len(one_line.split()) <= 4:
        return Route(SYMBOL, target=m.group("t").strip("`"))
    return Route(SEMANTIC)


# --------------------------------------------------------------------------- question kinds
LOOKUP = "lookup"
ARCHITECTURE = "architecture"
DEBUGGING = "debugging"
GENERAL = "general"

_DEBUGGING = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|\b\w+(?:Error|Exception|Warning)\b"
    r"|\bpanic:|\bstack ?trace\b|\bsegfault|\bexception\b|\b(?:crash(?:es|ed)?|fails?|failing|failed|broken"
    r"|raises?|raised|throws?|thrown|bug|error|wrong result|doesn'?t work|not working)\b",
    re.I | re.M,
)
_ARCHITECTURE = re.compile(
    r"\b(?:architecture|architectural|overall|overview|design(?:ed)?|structure[ds]?|organi[sz]ed|layers?"
    r"|components?|subsystems?|modules? (?:fit|relate|interact)|relationship between|interact(?:s|ion)?"
    r"|big picture|high[- ]level|responsib(?:le|ilities)|how (?:is|are) .* (?:built|laid out|split))\b",
    re.I,
)
_LOOKUP = re.compile(
    r"^(?:where\s+(?:is|are)|what\s+(?:is|are|does)\s+\S+\s+(?:return|take|mean)|which\s+(?:function|method"
    r"|class|file)|what\s+(?:function|method|class|file)|find|show|definition\s+of|what\s+is\s+the\s+"
    r"(?:default|value|type|name))\b",
    re.I,
)


def question_kind(question: str) -> str:
    """lookup (where/what is one thing), architecture (how the parts fit), debugging (a traceback
    or an error in the question) or general: they get different context budgets."""
    q = question.strip()
    if not q:
        return GENERAL
    if _DEBUGGING.search(q):
        return DEBUGGING
    if _ARCHITECTURE.search(q):
        return ARCHITECTURE
    one_line = " ".join(q.split())
    if classify(q).kind in (SYMBOL, STRUCTURAL) or (_LOOKUP.match(one_line) and len(one_line.split()) <= 12):
        return LOOKUP
    return GENERAL
