"""The frozen dataclasses of `models.py` as JSON and back: what the HTTP server sends and what
its client rebuilds, so that every interface renders the same objects either way."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union

from coderag_tui.errors import CoderagError

T = TypeVar("T")


class WireError(CoderagError):
    """A server's answer that is not the shape this client reads."""


def encode(obj: Any) -> Any:
    """A JSON-ready value of a dataclass (tuples become lists), or of a list of them."""
    if isinstance(obj, list | tuple):
        return [encode(o) for o in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj


def decode(cls: type[T], data: Any) -> T:
    """The dataclass `cls` rebuilt from `encode`'s JSON; WireError (one line) when it does not fit."""
    try:
        return typing.cast(T, _value(cls, data))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise WireError(f"the server sent a {cls.__name__} this client cannot read: {exc}",
                        "use a client of the server's version") from None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(members[0], value) if len(members) == 1 else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise TypeError(f"{hint.__name__} is not an object")
        hints = _hints(hint)
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: _value(hints[k], v) for k, v in value.items() if k in known})
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        return tuple(_value(a, v) for a, v in zip(args, value, strict=True))
    if origin is list:
        return [_value(typing.get_args(hint)[0], v) for v in value]
    if origin is dict:
        return dict(value)
    if hint is float:
        return float(value)
    if hint is int and not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value
