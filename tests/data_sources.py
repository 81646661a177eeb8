"""Real code for tests and benchmarks, fetched from PyPI (reachable in CI) and cached."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

CACHE = Path(os.environ.get("CODERAG_TEST_DATA", Path.home() / ".cache" / "coderag-test-data"))


def sdist(name: str, version: str) -> Path | None:
    """The unpacked source distribution of name==version, or None when PyPI is unreachable."""
    target = CACHE / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    downloads = CACHE / "downloads"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", f"{name}=={version}",
         "-d", str(downloads)],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        return None
    archives = [p for p in downloads.iterdir()
                if p.name.lower().replace("_", "-").startswith(f"{name}-{version}".lower())
                and p.name.endswith((".tar.gz", ".tgz"))]
    if not archives:
        return None
    tmp = CACHE / f".{name}-{version}.tmp"
    with tarfile.open(archives[0]) as tar:
        tar.extractall(tmp, filter="data")
    [inner] = list(tmp.iterdir())
    inner.rename(target)
    tmp.rmdir()
    (target / ".complete").write_text("ok\n")
    return target
