"""Nothing phones home: onnxruntime's telemetry (on by default in its Linux wheels) is switched
off before it loads, in every command. Each run has a fresh HOME and XDG folders, where
onnxruntime would leave its device id and its queue of events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import write_tree

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def _coderag(home: Path, *args: str, ort: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ORT_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
               HF_HUB_OFFLINE="1", PYTHONPATH=PACKAGE_ROOT)
    if ort is not None:
        env["ORT_DISABLE_TELEMETRY"] = ort
    return subprocess.run([sys.executable, "-m", "coderag_tui", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def _telemetry_files(home: Path) -> list[str]:
    words = ("microsoft", "onnxruntime", "deviceid", "telemetry")
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")
                  if any(w in p.name.lower() for w in words))


def test_index_search_and_ask_leave_no_telemetry(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {
        "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n',
        "shapes.py": "class Circle:\n    def area(self, r):\n        return 3.14159 * r * r\n",
    })
    db = tmp_path / "index.db"
    home = tmp_path / "home"
    index = _coderag(home, "index", str(repo), "--db", str(db))
    assert index.returncode == 0, index.stderr
    assert "2 chunks embedded" in index.stdout  # onnxruntime ran
    search = _coderag(home, "search", "area of a circle", "--repo", str(repo), "--db", str(db))
    assert search.returncode == 0, search.stderr
    assert "shapes.py" in search.stdout
    small = tmp_path / "small.toml"  # a short answer in a small window: the bundled model is slow here
    small.write_text("[llm]\nmax_tokens = 8\nn_ctx = 1024\n")
    ask = _coderag(home, "ask", "what does add return?", "--repo", str(repo), "--db", str(db), "--no-stream",
                   "--config", str(small))
    assert ask.returncode == 0, ask.stderr
    assert _telemetry_files(home) == []

    # control: with the switch explicitly off, the same embedding leaves onnxruntime's files
    control = tmp_path / "control-home"
    proc = _coderag(control, "index", str(repo), "--db", str(tmp_path / "control.db"), ort="0")
    assert proc.returncode == 0, proc.stderr
    assert any("deviceid" in p for p in _telemetry_files(control))
