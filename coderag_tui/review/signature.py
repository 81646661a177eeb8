"""Call sites whose arguments no longer fit a changed signature.

A parameter list (as `parse_source` gives it: one text per parameter) becomes a `ParamSpec`;
a call site is re-parsed from its file to count its positional and keyword arguments and to
see splats (`*args`, `**kw`, `...xs`). Only a clear mismatch is reported: any splat, an
unknown decorator, an overload, or a language whose calls may omit or add arguments (JS, Lua)
means "cannot tell", never a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from coderag_tui.parsing.records import ParsedUnit

# languages whose compilers/runtimes reject a call with the wrong number of arguments
STRICT = frozenset({"python", "typescript", "tsx", "java", "go", "rust", "c", "cpp", "c_sharp",
                    "csharp", "kotlin", "scala", "swift", "ruby", "dart", "php", "elixir"})
TOO_FEW_ONLY = frozenset({"php"})  # extra arguments are allowed there
RECEIVERS = frozenset({"self", "cls", "this", "&self", "&mut self", "mut self"})
# Python decorators that keep the parameter list as written
SAFE_DECORATORS = frozenset({"staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod",
                             "override", "typing.override", "typing_extensions.override",
                             "functools.cache", "cache", "functools.lru_cache", "lru_cache",
                             "functools.wraps", "property", "cached_property",
                             "functools.cached_property"})
_NAME_RE = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional_only, positional, keyword_only, var_positional, var_keyword
    default: bool


@dataclass(frozen=True)
class ParamSpec:
    params: tuple[Param, ...]
    language: str

    @property
    def positional(self) -> list[Param]:
        return [p for p in self.params if p.kind in ("positional_only", "positional")]

    @property
    def var_positional(self) -> bool:
        return any(p.kind == "var_positional" for p in self.params)

    @property
    def var_keyword(self) -> bool:
        return any(p.kind == "var_keyword" for p in self.params)

    @property
    def min_args(self) -> int:
        return sum(1 for p in self.params if not p.default and p.kind not in ("var_positional", "var_keyword"))

    @property
    def max_args(self) -> int | None:
        if self.var_positional or self.var_keyword:
            return None
        return len(self.params)

    def describe(self) -> str:
        lo, hi = self.min_args, self.max_args
        if hi is None:
            return f"at least {lo}"
        return f"{lo}" if lo == hi else f"{lo} to {hi}"


@dataclass(frozen=True)
class CallArgs:
    positional: int
    keywords: tuple[str, ...]
    splat: bool  # *xs, **kw, ...xs: the count is unknown

    @property
    def count(self) -> int:
        return self.positional + len(self.keywords)


def _top_level(text: str) -> Iterator[tuple[int, str]]:
    """(index, character) of each character outside quotes and brackets (the quote marks and
    brackets themselves left out)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i, ch


def _split_top(text: str, sep: str = ",") -> list[str]:
    out, start = [], 0
    for i, ch in _top_level(text):
        if ch == sep:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _has_default(text: str) -> bool:
    for i, ch in _top_level(text):
        if ch == "=":
            nxt = text[i + 1 : i + 2]
            prev = text[i - 1 : i] if i else ""
            if nxt != "=" and prev not in "=!<>":
                return True
    return False


def _decorator_name(text: str) -> str:
    return text.lstrip("@").split("(", 1)[0].strip()


def param_spec(unit: ParsedUnit, language: str, *, drop_receiver: bool) -> ParamSpec | None:
    """The parameters a caller must fill (None when arity cannot be judged for this unit)."""
    if language not in STRICT:
        return None
    if language == "python":
        return _python_spec(unit, drop_receiver)
    params: list[Param] = []
    texts = list(unit.params)
    if language == "go":  # `a, b int` is one declaration of two parameters
        texts = [t for text in texts for t in _split_top(text)]
    for i, raw in enumerate(texts):
        t = " ".join(raw.split())
        if i == 0 and t in RECEIVERS and drop_receiver:
            continue
        if t in ("void", ""):
            continue
        if t.startswith("&") and language == "ruby":
            continue  # a block parameter
        if "..." in t or t.startswith(("params ", "vararg ")) or (language == "ruby" and t.startswith("*")):
            kind = "var_keyword" if t.startswith("**") else "var_positional"
            params.append(Param(t, kind, True))
            continue
        optional = _has_default(t) or bool(re.match(r"^[\w$]+\?\s*:", t))
        if language == "ruby" and re.match(r"^\w+:", t):
            params.append(Param(t.split(":")[0], "keyword_only", True))  # keyword: not counted
            continue
        m = _NAME_RE.findall(t.split("=")[0])
        params.append(Param(m[-1] if m else t, "positional", optional))
    return ParamSpec(tuple(params), language)


def _python_spec(unit: ParsedUnit, drop_receiver: bool) -> ParamSpec | None:
    decorators = [_decorator_name(d) for d in unit.decorators]
    if any(d not in SAFE_DECORATORS and not d.endswith(".setter") for d in decorators):
        return None  # a decorator may change what the callers pass
    if "property" in decorators or "cached_property" in decorators:
        return None
    static = "staticmethod" in decorators
    classmethod = "classmethod" in decorators
    params: list[Param] = []
    kw_only = False
    texts = [" ".join(p.split()) for p in unit.params]
    is_method = unit.kind in ("method", "constructor") or bool(unit.scope) and unit.kind != "function"
    if texts and not static and (is_method or unit.name == "__init__"):
        first = texts[0].split(":")[0].split("=")[0].strip()
        if first in ("self", "cls") and (drop_receiver or classmethod):
            texts = texts[1:]
    for t in texts:
        if t == "/":
            params = [Param(p.name, "positional_only", p.default) for p in params]
            continue
        if t == "*":
            kw_only = True
            continue
        if t.startswith("**"):
            params.append(Param(t[2:].split(":")[0].strip(), "var_keyword", True))
            continue
        if t.startswith("*"):
            params.append(Param(t[1:].split(":")[0].strip(), "var_positional", True))
            kw_only = True
            continue
        name = t.split(":")[0].split("=")[0].strip()
        params.append(Param(name, "keyword_only" if kw_only else "positional", _has_default(t)))
    return ParamSpec(tuple(params), "python")


def mismatch(spec: ParamSpec, args: CallArgs) -> str | None:
    """Why a call clearly cannot bind to the parameters, or None (fits, or cannot tell)."""
    if args.splat:
        return None
    if spec.language == "python":
        return _python_mismatch(spec, args)
    n = args.count
    hi = spec.max_args
    if n < spec.min_args:
        return f"passes {n} argument{'s' if n != 1 else ''}; the new signature needs {spec.describe()}"
    if hi is not None and n > hi and spec.language not in TOO_FEW_ONLY:
        return f"passes {n} argument{'s' if n != 1 else ''}; the new signature takes {spec.describe()}"
    return None


def _passes(args: CallArgs) -> str:
    n = args.positional
    text = f"passes {n} positional argument{'s' if n != 1 else ''}"
    if args.keywords:
        words = "keywords" if len(args.keywords) > 1 else "keyword"
        text += f" and the {words} " + ", ".join(args.keywords)
    return text


def _python_mismatch(spec: ParamSpec, args: CallArgs) -> str | None:
    positional = spec.positional
    n = args.positional
    if n > len(positional) and not spec.var_positional:
        return f"{_passes(args)}; the new signature takes {len(positional)} positionally"
    filled = {p.name for p in positional[:n]}
    by_name = {p.name: p for p in spec.params if p.kind in ("positional", "keyword_only")}
    for kw in args.keywords:
        if kw in filled:
            return f"{_passes(args)}: {kw!r} is given twice (by position and by keyword)"
        if kw not in by_name and not spec.var_keyword:
            return f"{_passes(args)}; the new signature has no parameter {kw!r}"
        filled.add(kw)
    missing = [p.name for p in spec.params
               if not p.default and p.kind in ("positional_only", "positional", "keyword_only")
               and p.name not in filled]
    if missing:
        return f"{_passes(args)}; missing {', '.join(repr(m) for m in missing)}"
    return None


# ---------------------------------------------------------------------------- call sites

_CALLEE_FIELDS = ("function", "name", "method", "constructor", "type", "macro")


def _walk_row(node: Any, row: int) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.start_point[0] > row or n.end_point[0] < row:
            continue
        if n.start_point[0] == row:
            yield n
        stack.extend(reversed(n.children))


def _callee_name(node: Any, source: bytes) -> str:
    for field in _CALLEE_FIELDS:
        child = node.child_by_field_name(field)
        if child is not None:
            text = source[child.start_byte : child.end_byte].decode("utf-8", "replace")
            names = _NAME_RE.findall(text)
            return names[-1] if names else ""
    return ""


def _args_of(node: Any, source: bytes) -> CallArgs:
    args = node.child_by_field_name("arguments")
    assert args is not None
    if "argument" not in args.type and args.type not in ("arguments", "value_arguments"):
        return CallArgs(1, (), False)  # f(x for x in y): a generator as the only argument
    positional = 0
    keywords: list[str] = []
    splat = False
    for child in args.named_children:
        t = child.type
        if "comment" in t or t in ("block_argument", "block", "lambda_literal", "annotated_lambda"):
            continue
        text = source[child.start_byte : child.end_byte].decode("utf-8", "replace").lstrip()
        if "splat" in t or "spread" in t or "variadic" in t or "unpack" in t or text.startswith(("...", "*")):
            splat = True
            continue
        name = child.child_by_field_name("name")
        if t in ("keyword_argument", "pair", "named_argument") or (name is not None and "argument" in t):
            key = name if name is not None else child.child_by_field_name("key")
            label = source[key.start_byte : key.end_byte].decode() if key is not None else text.split(":")[0]
            keywords.append(label.strip().rstrip(":="))
            continue
        positional += 1
    return CallArgs(positional, tuple(keywords), splat)


def call_args_at(tree_root: Any, source: bytes, line: int, name: str) -> list[CallArgs]:
    """The arguments of every call of `name` that starts on `line` (1-based)."""
    out = []
    for node in _walk_row(tree_root, line - 1):
        if node.child_by_field_name("arguments") is None:
            continue
        if _callee_name(node, source) != name:
            continue
        out.append(_args_of(node, source))
    return out
