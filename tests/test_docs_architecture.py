"""docs/architecture.md names every module, and every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "coderag_tui"
DOC = ROOT / "docs" / "architecture.md"


def named(text: str) -> set[str]:
    """What the doc writes in backticks that looks like a path: `x.py`, `a/b.py`, `folder/`."""
    return {t for t in re.findall(r"`([\w./-]+)`", text) if t.endswith((".py", "/", ".toml"))}


def exists(token: str) -> bool:
    """A name as the doc writes it: relative to the repository, to the package, or the end of
    some path in the package (`store.py` in the store's row)."""
    token = token.rstrip("/")
    if (ROOT / token).exists() or (PACKAGE / token).exists():
        return True
    return any(p.as_posix().endswith("/" + token) for p in PACKAGE.rglob("*") if "__pycache__" not in p.parts)


def test_every_path_the_architecture_names_exists():
    missing = sorted(t for t in named(DOC.read_text()) if not exists(t))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_module_is_named_in_the_architecture():
    text = DOC.read_text()
    tokens = named(text)
    ends = {t.rstrip("/").rsplit("/", 1)[-1] for t in tokens}
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(PACKAGE)
        if path.name not in ends and rel.as_posix() not in tokens:
            unnamed.append(rel.as_posix())
    for folder in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        if f"{folder.name}/" not in tokens:
            unnamed.append(f"{folder.name}/")
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"


def test_the_path_check_sees_a_missing_path():
    assert not exists("store/no_such_module.py")
    assert exists("store/backend.py") and exists("postgres/") and exists("tests/test_contract.py")
