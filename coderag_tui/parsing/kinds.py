"""The vocabulary of units: which kinds are class-like or function-like, which paths hold
tests, and every kind of unit parsing can produce."""

from __future__ import annotations

import functools
import re

from coderag_tui.parsing.languages import query_source

CLASS_LIKE = frozenset(
    {"class", "struct", "interface", "trait", "impl", "enum", "object", "protocol",
     "extension", "record", "union", "namespace", "module", "mixin"}
)
FUNCTION_LIKE = frozenset({"function", "method", "constructor", "macro"})
NAMESPACE_LIKE = frozenset({"namespace", "module"})  # functions inside stay functions
TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$|"
    r"\.(test|spec)\.[a-z]+$|(^|/)[^/]*Tests?\.[a-z]+$|(^|/)conftest\.py$",
    re.IGNORECASE,
)

GENERIC_KINDS = (    ("class", "class"), ("struct", "struct"), ("interface", "interface"), ("trait", "trait"),
    ("enum", "enum"), ("impl", "impl"), ("module", "module"), ("namespace", "namespace"),
    ("method", "method"), ("function", "function"), ("func", "function"), ("def", "function"),
    ("proc", "function"), ("macro", "macro"), ("type", "type"), ("section", "section"),
    ("rule", "rule"), ("const", "constant"), ("var", "variable"),
)



@functools.lru_cache(maxsize=65536)
def is_test_path(path: str) -> bool:
    low = path.lower()
    if "test" not in low and "spec" not in low:  # every pattern names one: skip the regex scan
        return False
    return bool(TEST_PATH.search(path))


def generic_kind(node_type: str) -> str:
    t = node_type.lower()
    for word, kind in GENERIC_KINDS:
        if word in t:
            return kind
    return "definition"


@functools.cache
def unit_kinds() -> frozenset[str]:
    """Every kind of unit parsing can produce: the `@definition.KIND` captures of the tag
    queries, the kinds of the generic fallback, and `file`."""
    from coderag_tui.parsing.languages import registry

    kinds = {"file", "method", "definition"}
    kinds.update(k for _, k in GENERIC_KINDS)
    for name in registry():
        source = query_source(name)
        if source:
            kinds.update(re.findall(r"@definition\.(\w+)", source))
    kinds.discard("decorated")  # a wrapper capture, never a unit's kind
    return frozenset(kinds)
