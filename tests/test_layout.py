"""The tests' own layout: helpers live in tests/helpers/ (a package), never in a test module,
and no test module (conftest.py included) imports from another; every mark a test can carry is
declared in tests/helpers/marks.py, where `make test-fast` finds the ones it leaves out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers.marks import MARKS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def test_no_test_module_imports_from_a_test_module() -> None:
    problems = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, name in _imported_modules(path):
            last = [p for p in name.split(".") if p]
            if any(part.startswith("test_") for part in last[:-1]) or (
                    name.lstrip(".").startswith(("tests.test_", "test_")) or name.startswith(".test_")):
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
            if name.lstrip(".") in ("conftest", "tests.conftest") or name.startswith(("tests.conftest.", ".conftest.")):
                problems.append(f"{path.relative_to(ROOT)}:{line} imports from conftest.py")
    assert not problems, "helpers belong in tests/helpers/:\n" + "\n".join(problems)


def test_the_tests_folder_holds_test_modules_and_the_helpers_package_only() -> None:
    stray = [p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_")
             and p.name not in ("conftest.py", "__init__.py")]
    assert not stray, f"move these into tests/helpers/: {stray}"
    assert (TESTS / "helpers" / "__init__.py").is_file()


def test_make_test_fast_leaves_out_every_declared_mark() -> None:
    makefile = (ROOT / "Makefile").read_text()
    fast = re.search(r"^FAST = (.*)$", makefile, re.M)
    assert fast, "the Makefile has no FAST selection"
    left_out = set(re.findall(r"\b(\w+)\b", fast.group(1))) - {"not", "or", "and"}
    assert left_out == set(MARKS), (left_out, set(MARKS))
