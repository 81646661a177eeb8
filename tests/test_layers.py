"""The core never imports the terminal app's toolkit: everything but coderag_tui.tui works,
and imports, without textual (a subprocess, so nothing else has imported it already)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import coderag_tui


def non_tui_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(coderag_tui.__path__, "coderag_tui.")]
    # __main__ runs the CLI when imported: everything it imports is covered by the cli modules
    return sorted(n for n in names if not n.startswith("coderag_tui.tui") and not n.endswith("__main__"))


def test_every_non_tui_module_imports_without_textual() -> None:
    modules = non_tui_modules()
    assert {"coderag_tui.service", "coderag_tui.cli", "coderag_tui.models", "coderag_tui.config"} <= set(modules)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "assert not loaded, loaded\n"
        "print(len(sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_cli_runs_without_the_app() -> None:
    code = ("import sys\nfrom coderag_tui.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'textual' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
