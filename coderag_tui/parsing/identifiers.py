"""Identifier splitting for keyword search: `parseURLString` -> parse url string."""

from __future__ import annotations

import functools
import re

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PATH_SPLIT = re.compile(r"[/\\._\-]+")
MODULE_SPLIT = re.compile(r"::|[./\\]")  # module path separators: a::b, a.b, a/b, a\\b
_GENERIC = re.compile(r"<.*>|\[.*\]|\(.*\)")


@functools.lru_cache(maxsize=65536)
def split_identifier(name: str) -> tuple[str, ...]:
    """The lower-cased words of a camelCase / snake_case / kebab identifier."""
    words: list[str] = []
    for part in name.replace("-", "_").split("_"):
        if part:
            words.extend(w.lower() for w in _CAMEL.findall(part))
    return tuple(words)


def expand_identifiers(text: str) -> str:
    """Sub-words of the camelCase identifiers in text (to append to it for FTS).

    FTS5's unicode61 tokenizer already splits snake_case at `_`; only case changes need help.
    The identifiers are found with `bytes.translate` and `split` (C loops over the text, several
    times faster than a regex scan): each run of ASCII letters, digits and `_` without its
    leading digits is an identifier, as `[A-Za-z_][A-Za-z0-9_]*` finds them.
    """
    # a set difference in C drops the tokens already known to add nothing (`-`, not `-=`, which
    # would walk all of _PLAIN)
    tokens = set(text.encode("utf-8", "replace").translate(_IDENT_BYTES).split()) - _PLAIN
    if not tokens:
        return ""
    cache = _TOKEN_WORDS
    found: dict[str, tuple[str, ...]] = {}
    for token in tokens:
        entry = cache.get(token)
        if entry is None:
            ident = token.lstrip(b"0123456789").decode("ascii")
            words = _sub_words(ident) if ident else ()
            if not words:
                _PLAIN.add(token)
                continue
            entry = cache[token] = (ident, words)
        found[entry[0]] = entry[1]  # `x1Ab` and `9x1Ab` are one identifier
    if len(cache) > 200_000 or len(_PLAIN) > 500_000:
        cache.clear()
        _PLAIN.clear()
    return " ".join([word for words in found.values() for word in words])


# bytes.translate table: ASCII letters, digits and `_` stay, every other byte becomes a space
_IDENT_BYTES = bytes(c if c == 95 or (c < 128 and chr(c).isalnum()) else 32 for c in range(256))
_TOKEN_WORDS: dict[bytes, tuple[str, tuple[str, ...]]] = {}  # token -> (identifier, its sub-words)
_PLAIN: set[bytes] = set()  # tokens whose identifier adds no sub-words (most of them)


def _sub_words(ident: str) -> tuple[str, ...]:
    """The words expand_identifiers adds for one identifier (none for most)."""
    # no case change inside (lower, UPPER, Capitalized, snake_case): the tokenizer copes
    if ident.islower() or ident.isupper() or ident[1:].islower():
        return ()
    words = split_identifier(ident)
    return words if len(words) > 1 else ()


def name_words(*names: str) -> str:
    """Names as written plus their sub-words."""
    out: list[str] = []
    for name in names:
        if not name:
            continue
        out.append(name)
        words = split_identifier(name)
        if len(words) > 1 or (words and words[0] != name):
            out.extend(words)
    return " ".join(out)


def path_words(path: str) -> str:
    """The words of a path: `src/auth/userService.ts` -> src auth user service ts."""
    words: list[str] = []
    for part in _PATH_SPLIT.split(path):
        if part:
            words.append(part.lower())
            sub = split_identifier(part)
            if len(sub) > 1:
                words.extend(sub)
    return " ".join(words)


@functools.lru_cache(maxsize=1 << 16)
def base_name(text: str) -> str:
    """`pkg.Base[T]` -> Base: the name a base class text refers to."""
    name = _GENERIC.sub("", text).strip()
    return MODULE_SPLIT.split(name)[-1].strip() if name else ""
