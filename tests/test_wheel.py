"""A wheel built from this checkout, installed into a fresh venv as pipx or uv would, indexes,
searches and answers a question about a small repository with no network at all and nothing
from the source tree on its path.

The venv is built with this machine's pip configuration and pip's cache, so llama-cpp-python
(a source package) comes from the wheel pip built for the project's own venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.marks import needs
from tests.helpers.shop import FILES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parent.parent
# Read at import, before the autouse fixture points XDG_CACHE_HOME at a temporary folder: pip
# must find its real cache (and PIP_* settings) or it builds llama-cpp-python again (~8 min).
_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
_NOT_COPIED = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
               ".mypy_cache", ".ruff_cache", ".coderag", "*.db", "*.db-wal", "*.db-shm")
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json")


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} exited {out.returncode}:\n{out.stderr[-3000:]}"
    return out


def offline_prefix() -> tuple[list[str], str]:
    """A command prefix that leaves a process no network: a new network namespace (only a
    loopback, down) through `unshare`, as root or as a user mapped to root. Where neither is
    allowed the caller falls back on proxies pointing at a closed port."""
    unshare = shutil.which("unshare")
    for flags in (["-n"], ["-rn"]):
        if unshare and subprocess.run([unshare, *flags, "true"], capture_output=True).returncode == 0:
            return [unshare, *flags], "network namespace"
    return [], "proxies"


@pytest.fixture(scope="module")
@needs("slow")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, a fresh venv with it installed)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"  # building in place would leave build/ and *.egg-info in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*_NOT_COPIED))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(src)],
         env=_ENV)
    [wheel] = (work / "dist").glob("coderag_tui-*.whl")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env=_ENV)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], env=_ENV)
    return wheel, venv


def test_wheel_carries_its_data_and_consistent_dependencies(wheel_venv: tuple[Path, Path]) -> None:
    wheel, venv = wheel_venv
    names = set(zipfile.ZipFile(wheel).namelist())
    folder = "coderag_tui/data/all-minilm-l6-v2/"
    assert {folder + f for f in (*TOKENIZER, "LICENSE", "NOTICE")} <= names
    assert "coderag_tui/tui/app.tcss" in names and "coderag_tui/parsing/languages.toml" in names
    assert "coderag_tui/data/ranker/model.json" in names  # the learned ranker's trees
    assert any(n.startswith("coderag_tui/parsing/queries/") for n in names)
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True,
                           text=True, env=_ENV)
    assert check.returncode == 0, check.stdout


def test_wheel_indexes_searches_and_answers_offline(wheel_venv: tuple[Path, Path], tmp_path: Path) -> None:
    _, venv = wheel_venv
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    home = tmp_path / "home"
    config = home / ".config" / "coderag" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[llm]\nmax_tokens = 32\nn_ctx = 2048\n\n[context]\nmax_tokens = 1000\n")
    env = {k: v for k, v in _ENV.items()
           if not k.startswith(("PYTHON", "CODERAG_", "XDG_", "VIRTUAL_ENV", "HF_", "ORT_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local" / "share"), PYTHONNOUSERSITE="1")
    prefix, how = offline_prefix()
    if not prefix:
        warnings.warn("unshare is not allowed here: the offline run only has proxies to a closed port",
                      stacklevel=1)
        closed = "http://127.0.0.1:9"
        env.update({k: closed for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                        "ALL_PROXY", "all_proxy")}, NO_PROXY="", no_proxy="")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _run([*prefix, *args], cwd=repo, env=env, timeout=1200)

    python = str(venv / "bin" / "python")
    if how == "network namespace":  # the sandbox really has no way out
        probe = "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=5)\nexcept OSError:\n" \
                "    print('no network')\n"
        assert run(python, "-c", probe).stdout.strip() == "no network"
    where = run(python, "-c", "import coderag_tui; print(coderag_tui.__file__)").stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the installed wheel, not the checkout

    coderag = str(venv / "bin" / "coderag")
    index = json.loads(run(coderag, "index", "--json").stdout)
    assert index["files_indexed"] == 2 and index["units"] > 0
    search = run(coderag, "search", "total price including tax", "--json").stdout
    json.loads(search)
    assert "shop/cart.py" in search and "vector#" in search  # vectors came from the bundled model
    answer = json.loads(run(coderag, "ask", "what does tax_for return?", "--json").stdout)
    assert answer["answer"].strip()
    assert any(s["path"] == "shop/tax.py" for s in answer["sources"])
