"""Nothing phones home: onnxruntime's telemetry (on by default in its Linux wheels) is switched
off before it loads, in every command. Each run has a fresh HOME and XDG folders, where
onnxruntime would leave its device id and its queue of events."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.files import write_tree

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def _coderag(home: Path, *args: str, ort: str | None = None,
             trace: Path | None = None) -> subprocess.CompletedProcess[str]:
    # onnxruntime records nothing where it sees a CI variable: run as on a user's machine
    ci = {"CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "RUN_ID", "GITHUB_ACTIONS", "TF_BUILD"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ORT_")) and k not in ci}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
               HF_HUB_OFFLINE="1", PYTHONPATH=PACKAGE_ROOT)
    if ort is not None:
        env["ORT_DISABLE_TELEMETRY"] = ort
    command = [sys.executable, "-m", "coderag_tui", *args]
    if trace is not None:  # every connect() of the command and its children, to a file
        command = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


_ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


def _remote_connects(trace: Path) -> list[str]:
    """connect() calls of a strace log to an address that is not this machine's loopback."""
    out = []
    for line in trace.read_text().splitlines():
        if "connect(" not in line:
            continue
        for v4, v6 in _ADDRESS.findall(line):
            address = ipaddress.ip_address(v4 or v6)
            if not address.is_loopback and not (address.version == 6 and address.ipv4_mapped
                                                 and address.ipv4_mapped.is_loopback):
                out.append(line.strip())
    return out


def _telemetry_files(home: Path) -> list[str]:
    words = ("microsoft", "onnxruntime", "deviceid", "telemetry")
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")
                  if any(w in p.name.lower() for w in words))


@pytest.mark.usefixtures("bundled_gguf")  # `ask` answers with it
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


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.usefixtures("bundled_gguf")
def test_index_embed_search_and_ask_connect_nowhere(tmp_path: Path) -> None:
    """No command opens a connection beyond this machine: no telemetry, no model hub, no update
    check (loopback is allowed: looking for a local model server is loopback only)."""
    repo = write_tree(tmp_path / "repo", {"calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n'})
    db = tmp_path / "index.db"
    home = tmp_path / "home"
    small = tmp_path / "small.toml"
    small.write_text("[llm]\nmax_tokens = 8\nn_ctx = 1024\n")
    runs = {
        "index": ("index", str(repo), "--db", str(db)),
        "search": ("search", "add two numbers", "--repo", str(repo), "--db", str(db)),
        "ask": ("ask", "what does add return?", "--repo", str(repo), "--db", str(db), "--no-stream",
                "--config", str(small)),
    }
    for name, args in runs.items():
        trace = tmp_path / f"{name}.strace"
        proc = _coderag(home, *args, trace=trace)
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
        assert trace.exists() and trace.stat().st_size >= 0
        assert _remote_connects(trace) == [], name
    # the check itself sees a connection beyond loopback in strace's words (no packet is sent)
    sample = tmp_path / "sample.strace"
    sample.write_text(
        '7 connect(3, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("20.42.65.92")}, 16) = 0\n'
        '7 connect(4, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}, 16) = -1\n'
        '7 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), inet_pton(AF_INET6, "2001:db8::1", '
        '&sin6_addr), sin6_scope_id=0}, 28) = 0\n')
    assert len(_remote_connects(sample)) == 2
