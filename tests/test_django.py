"""Acceptance on real code: Django 5.1's sdist from PyPI (~2,800 .py files)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.harness import sdist
from tests.helpers.marks import needs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
@needs("network", "slow")
def django_index(tmp_path_factory):
    root = sdist("django", "5.1")
    if root is None:
        pytest.skip("PyPI is unreachable: cannot download Django's sdist")
    db = tmp_path_factory.mktemp("django") / "index.db"
    out = subprocess.run([sys.executable, "-m", "coderag_tui", "index", str(root), "--db", str(db),
                          "--no-embed", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return root, db, json.loads(out.stdout)


def run(root, db, *args):
    out = subprocess.run([sys.executable, "-m", "coderag_tui", *args, "--repo", str(root), "--db", str(db),
                          "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_django_index_builds(django_index):
    _, _, summary = django_index
    assert summary["files_indexed"] > 2700 and summary["units"] > 30000 and summary["files_failed"] == 0


def test_symbol_queryset(django_index):
    root, db, _ = django_index
    hits = run(root, db, "symbol", "QuerySet")
    assert hits[0]["path"] == "django/db/models/query.py" and hits[0]["kind"] == "class"


def test_callers_of_a_well_known_function(django_index):
    root, db, _ = django_index
    callers = run(root, db, "callers", "QuerySet._filter_or_exclude")
    names = {c["qualname"] for c in callers}
    assert {"QuerySet.filter", "QuerySet.exclude"} <= names
    callers = run(root, db, "callers", "force_str", "-n", "500")
    # grep finds 34 `force_str(` call sites in Django 5.1 (tests included)
    assert len(callers) >= 28
    assert any(c["path"] == "django/contrib/gis/gdal/driver.py" and c["qualname"] == "Driver.name"
               for c in callers)
