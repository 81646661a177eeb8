"""bench/ stays runnable: every entry point imports (as `python -m bench.NAME` would), none
reaches into tests/ or edits sys.path, the README lists each one, and the harness's shared
pieces (one percentile, the sdist cache, timed runs, another source tree) do what they say."""

from __future__ import annotations

import ast
import importlib
import io
import re
import statistics
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

from bench.harness import Unreachable, machine_line, p50_p95, percentile, sdist, timed
from bench.harness.trees import rerun_with_tree, without_option

BENCH = Path(__file__).resolve().parent.parent / "bench"
ENTRY_POINTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")
HELPERS = sorted(p.stem for p in (BENCH / "harness").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_imports_and_has_a_main(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert callable(module.main), f"bench/{name}.py has no main()"
    tree = ast.parse((BENCH / f"{name}.py").read_text())
    guards = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    assert guards, f"bench/{name}.py runs nothing under `if __name__ == \"__main__\"`"


@pytest.mark.parametrize("name", HELPERS)
def test_every_helper_imports(name: str) -> None:
    importlib.import_module(f"bench.harness.{name}")


def test_bench_neither_edits_sys_path_nor_imports_tests() -> None:
    problems = []
    for path in sorted(BENCH.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "path" and ast.unparse(node.value) == "sys":
                problems.append(f"{path.relative_to(BENCH)}:{node.lineno} uses sys.path")
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n == "tests" or n.startswith("tests.") for n in names):
                problems.append(f"{path.relative_to(BENCH)}:{node.lineno} imports from tests/")
    assert not problems, problems


def test_the_readme_lists_every_entry_point_as_a_module() -> None:
    readme = (BENCH / "README.md").read_text()
    missing = [n for n in ENTRY_POINTS if f"bench.{n}`" not in readme]
    assert not missing, f"bench/README.md does not list: {missing}"
    assert "python bench/" not in readme  # scripts run as modules


def test_the_makefile_runs_the_bench_as_a_module() -> None:
    makefile = (BENCH.parent / "Makefile").read_text()
    assert re.search(r"python -m bench\.bench_index", makefile)


# --------------------------------------------------------------------------- percentiles


def test_p95_of_twenty_samples_interpolates_below_the_maximum() -> None:
    samples = [float(v) for v in range(20, 0, -1)]  # 1..20, unsorted
    assert percentile(samples, 0.5) == pytest.approx(10.5)
    assert percentile(samples, 0.95) == pytest.approx(19.05)
    assert percentile(samples, 0.95) < max(samples)
    assert percentile(samples, 0.0) == 1.0
    assert percentile(samples, 1.0) == 20.0


def test_percentile_is_the_median_and_numpys_linear_quantile() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 20, 101):
        values = rng.exponential(size=n).tolist()
        assert percentile(values, 0.5) == pytest.approx(statistics.median(values))
        for q in (0.05, 0.5, 0.9, 0.95, 0.99):
            assert percentile(values, q) == pytest.approx(float(np.quantile(values, q)))


def test_percentile_refuses_no_values_and_quantiles_out_of_range() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)
    with pytest.raises(ValueError):
        percentile([1.0], 95)


def test_p50_p95_prints_milliseconds() -> None:
    assert p50_p95([0.001 * v for v in range(1, 21)]) == "p50 10.5 ms  p95 19.1 ms"


# --------------------------------------------------------------------------- machine, timing


def test_the_machine_line_says_cores_load_and_date() -> None:
    line = machine_line()
    assert "cores usable" in line and "load average" in line
    assert time.strftime("%Y-%m-%d") in line


def test_timed_gives_the_value_wall_and_cpu_time() -> None:
    def spin() -> int:
        end = time.process_time() + 0.05
        n = 0
        while time.process_time() < end:
            n += 1
        return n

    run = timed(spin)
    assert run.value > 0
    assert run.cpu_s >= 0.05
    assert run.wall_s >= run.cpu_s * 0.5  # one thread: wall is not far below CPU


# --------------------------------------------------------------------------- the sdist cache


def _sdist_archive(downloads: Path, stem: str) -> None:
    downloads.mkdir(parents=True, exist_ok=True)
    body = f"def hello():\n    return {stem!r}\n".encode()
    with tarfile.open(downloads / f"{stem}.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo(f"{stem}/pkg/hello.py")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))


def test_sdist_unpacks_a_downloaded_archive_once_into_the_cache(tmp_path: Path) -> None:
    _sdist_archive(tmp_path / "downloads", "Demo_Pkg-1.0")  # as PyPI names some: case, underscore
    got = sdist("demo-pkg", "1.0", tmp_path)
    assert got == tmp_path / "demo-pkg-1.0"
    assert (got / "pkg" / "hello.py").read_text().startswith("def hello")
    (got / "pkg" / "hello.py").write_text("kept\n")
    assert sdist("demo-pkg", "1.0", tmp_path) == got  # the second call finds it, unpacks nothing
    assert (got / "pkg" / "hello.py").read_text() == "kept\n"


def test_sdist_cache_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODERAG_TEST_DATA", str(tmp_path))
    _sdist_archive(tmp_path / "downloads", "demo-2.0")
    assert sdist("demo", "2.0") == tmp_path / "demo-2.0"


def test_unreachable_is_an_exception_to_skip_on() -> None:
    assert issubclass(Unreachable, Exception)


# --------------------------------------------------------------------------- another source tree


def test_without_option_drops_the_option_and_its_value() -> None:
    argv = ["--skip", "embed", "--code", "/a", "--queries", "5", "--code=/b"]
    assert without_option(argv, "--code") == ["--skip", "embed", "--queries", "5"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is new in 3.11")
def test_a_bench_runs_against_another_source_tree(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "baseline"
    tree.mkdir()
    (tree / "coderag_tui").symlink_to(BENCH.parent / "coderag_tui", target_is_directory=True)
    status = rerun_with_tree("bench.bench_retrieval", tree, ["--skip", "embed,search,context"])
    out = capfd.readouterr().out
    assert status == 0, out
    assert f"code: {tree}" in out  # the child imported coderag_tui from the other tree


def test_sdist_takes_only_the_asked_version(tmp_path: Path) -> None:
    _sdist_archive(tmp_path / "downloads", "demo-1.0.10")  # a name that starts like the one asked for
    _sdist_archive(tmp_path / "downloads", "demo-1.0")
    assert sdist("demo", "1.0", tmp_path) == tmp_path / "demo-1.0"
    assert "'demo-1.0'" in (tmp_path / "demo-1.0" / "pkg" / "hello.py").read_text()


def test_merged_runs_count_each_question_s_opening_once() -> None:
    from bench.bench_answers import merged

    def opening(index: int, hit: bool) -> dict[str, object]:
        return {"repo": "flask", "index": index, "model": "", "opening_hit": hit}

    # two runs over the same questions, each answering others: every opening twice, answers once
    first = [opening(0, True), opening(1, False), {"repo": "flask", "index": 0, "model": "tiny"}]
    second = [opening(0, True), opening(1, True), {"repo": "flask", "index": 1, "model": "tiny"}]
    rows = merged(first + second)
    assert [(r["index"], r["model"]) for r in rows] == [(0, ""), (1, ""), (0, "tiny"), (1, "tiny")]
    assert rows[1]["opening_hit"] is True  # the last run's
