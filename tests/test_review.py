"""`coderag review`: a real git history made here, reviewed through the command line.

The base commit has a cart, a tax module, orders and tests; the working tree then
- modifies Cart.calculate_price (same signature),
- deletes legacy_rate (called from pkg/orders.py),
- renames get_tax to compute_tax (same code; Cart.calculate_price still calls get_tax),
- adds a `zone` parameter to shipping_cost (two calls no longer fit, two still do).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli.main import main
from coderag_tui.review.diff import forward_apply, parse_unified_diff, reverse_apply
from coderag_tui.tokens import estimate_tokens
from tests.helpers.files import git_init, write_tree

BASE: dict[str, str] = {
    "pkg/__init__.py": "",
    "pkg/cart.py": '''"""Shopping cart."""
from pkg.tax import get_tax

TAX_RATE = 0.2


def apply_discount(total, discount):
    return total * (1 - discount)


class Cart:
    def __init__(self):
        self.items = []

    def calculate_price(self, items, discount=0):
        total = sum(items)
        return get_tax(total) * (1 - discount) + TAX_RATE

    def add(self, item):
        self.items.append(item)


def process_order(cart, items):
    return cart.calculate_price(items, 0.1)


def checkout(cart):
    return cart.calculate_price(cart.items)
''',
    "pkg/tax.py": '''def get_tax(amount):
    """Tax on an amount."""
    base = amount * 1.2
    return round(base, 2)


def legacy_rate(amount):
    return amount * 0.5


def shipping_cost(weight, distance, express=False):
    base = weight * 0.1 + distance * 0.01
    return base * 2 if express else base
''',
    "pkg/orders.py": '''from pkg.tax import legacy_rate, shipping_cost


def order_total(amount, weight):
    fee = shipping_cost(weight, 10)
    fast = shipping_cost(weight, 10, express=True)
    return amount + legacy_rate(amount) + fee + fast


def refund(amount):
    return legacy_rate(amount) - 1


def zoned(weight, args):
    a = shipping_cost(weight, 10, 3)
    b = shipping_cost(*args)
    return a + b
''',
    "tests/test_cart.py": '''from pkg.cart import Cart, process_order


def test_calculate_price():
    assert Cart().calculate_price([1, 2]) > 0


def test_process_order():
    assert process_order(Cart(), [3]) > 0
''',
    "README.md": "# shop\n",
}

CART_NEW = BASE["pkg/cart.py"].replace(
    '''        total = sum(items)
        return get_tax(total) * (1 - discount) + TAX_RATE''',
    '''        total = sum(i for i in items if i > 0)
        return get_tax(apply_discount(total, discount)) + TAX_RATE''',
)
TAX_NEW = '''def compute_tax(amount):
    """Tax on an amount."""
    base = amount * 1.2
    return round(base, 2)


def shipping_cost(weight, distance, zone, express=False):
    base = weight * 0.1 + distance * 0.01 * zone
    return base * 2 if express else base
'''


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "shop", tree(BASE))
    git_init(root)
    (root / "pkg/cart.py").write_text(CART_NEW)
    (root / "pkg/tax.py").write_text(TAX_NEW)
    (root / "README.md").write_text("# shop\n\nNow with zones.\n")
    return root


def tree(files: dict[str, str]) -> dict[str, str | bytes]:
    out: dict[str, str | bytes] = {}
    out.update(files)
    return out


def run_review(root: Path, db: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["review", "--repo", str(root), "--db", str(db), *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def review_json(root: Path, db: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return json.loads(run_review(root, db, "--json", *args, capsys=capsys))


def change(data: dict[str, Any], qualname: str) -> dict[str, Any]:
    found = [c for c in data["changes"] if c["qualname"] == qualname]
    assert len(found) == 1, [(c["kind"], c["qualname"]) for c in data["changes"]]
    return found[0]


def names(refs: list[dict[str, Any]]) -> set[str]:
    return {r["qualname"] for r in refs}


# --------------------------------------------------------------------------- classification and context


def test_modified_function_shows_callers_callees_and_tests(repo: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = review_json(repo, tmp_path / "i.db", capsys)
    c = change(data, "Cart.calculate_price")
    assert c["kind"] == "modified" and not c["signature_changed"]
    assert c["citation"] == "pkg/cart.py:15-17"
    assert names(c["callers"]) == {"process_order", "checkout", "test_calculate_price"}
    assert {(r["path"], r["line"]) for r in c["callers"]} >= {("pkg/cart.py", 24), ("pkg/cart.py", 28)}
    assert "apply_discount" in names(c["callees"])
    assert "get_tax" in c["external_callees"]  # renamed away: unresolved now
    assert names(c["tests"]) == {"test_calculate_price"}
    assert c["test_files"] == ["tests/test_cart.py"]
    assert any("TAX_RATE" in k for k in c["constants"])
    assert "class Cart" in c["outline"] and "* def calculate_price" in c["outline"]
    assert not c["mismatched_calls"] and not c["orphaned_callers"]

    i = data["changes"].index(c)
    roles = {p["role"] for p in data["context"] if p["change"] == i}
    assert {"diff", "change", "caller", "callee", "outline", "metadata"} <= roles
    diff = next(p for p in data["context"] if p["change"] == i and p["role"] == "diff")
    assert "+        return get_tax(apply_discount(total, discount)) + TAX_RATE" in diff["text"]
    callee = next(p for p in data["context"] if p["change"] == i and p["role"] == "callee")
    assert callee["citation"] == "pkg/cart.py:7-8" and "def apply_discount" in callee["text"]

    md = run_review(repo, tmp_path / "i.db", capsys=capsys)
    assert "**modified** `Cart.calculate_price` pkg/cart.py:15-17" in md
    assert "### pkg/cart.py:23-24 [caller] process_order calls calculate_price (line 24)" in md
    assert "def checkout(cart):" in md
    # the unchanged README is listed, not parsed
    assert "README.md (modified, no functions to compare" in md


def test_deleted_function_lists_orphaned_callers(repo: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = review_json(repo, tmp_path / "i.db", capsys)
    c = change(data, "legacy_rate")
    assert c["kind"] == "deleted" and c["path"] == "pkg/tax.py" and c["old_citation"] == "pkg/tax.py:7-8"
    orphans = {(r["qualname"], r["path"], r["line"]) for r in c["orphaned_callers"]}
    assert orphans == {("order_total", "pkg/orders.py", 7), ("refund", "pkg/orders.py", 11)}
    i = data["changes"].index(c)
    orphan_pieces = [p for p in data["context"] if p["change"] == i and p["role"] == "orphaned-caller"]
    assert {p["citation"] for p in orphan_pieces} == {"pkg/orders.py:4-7", "pkg/orders.py:10-11"}
    old_code = next(p for p in data["context"] if p["change"] == i and p["role"] == "change")
    assert "def legacy_rate(amount):" in old_code["text"]
    md = run_review(repo, tmp_path / "i.db", capsys=capsys)
    assert "⚠ 2 orphaned callers still call `legacy_rate`" in md
    assert "pkg/orders.py:11 `refund`" in md


def test_renamed_function_lists_callers_of_the_old_name(repo: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = review_json(repo, tmp_path / "i.db", capsys)
    c = change(data, "compute_tax")
    assert c["kind"] == "renamed"
    assert c["old_name"] == "get_tax" and c["old_citation"] == "pkg/tax.py:1-4"
    assert c["similarity"] == 1.0
    assert {(r["qualname"], r["path"], r["line"]) for r in c["orphaned_callers"]} == {
        ("Cart.calculate_price", "pkg/cart.py", 17)}
    # neither a deletion of get_tax nor an addition of compute_tax
    kinds = {(x["kind"], x["qualname"]) for x in data["changes"]}
    assert ("deleted", "get_tax") not in kinds and ("added", "compute_tax") not in kinds


def test_renamed_with_edits_is_still_a_rename(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files: dict[str, str] = {"m.py": "def parse_rows(text, sep=','):\n    rows = []\n    for line in text.splitlines():\n"
                     "        rows.append(line.split(sep))\n    return rows\n\n\ndef main(t):\n"
                     "    return parse_rows(t)\n"}
    root = write_tree(tmp_path / "r", tree(files))
    git_init(root)
    (root / "m.py").write_text(
        "def split_rows(text, sep=','):\n    rows = []\n    for line in text.splitlines():\n"
        "        rows.append(line.strip().split(sep))\n    return rows\n\n\ndef main(t):\n"
        "    return parse_rows(t)\n")
    data = review_json(root, tmp_path / "i.db", capsys)
    c = change(data, "split_rows")
    assert c["kind"] == "renamed" and c["old_name"] == "parse_rows" and 0.75 <= c["similarity"] < 1
    assert names(c["orphaned_callers"]) == {"main"}


def test_signature_change_lists_mismatched_call_sites(repo: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = review_json(repo, tmp_path / "i.db", capsys)
    c = change(data, "shipping_cost")
    assert c["kind"] == "signature-changed" and c["signature_changed"]
    assert c["old"]["params"] == ["weight", "distance", "express=False"]
    assert c["new"]["params"] == ["weight", "distance", "zone", "express=False"]
    bad = {(m["path"], m["line"]): m["reason"] for m in c["mismatched_calls"]}
    # shipping_cost(weight, 10) and shipping_cost(weight, 10, express=True) lack `zone`;
    # shipping_cost(weight, 10, 3) fits, shipping_cost(*args) cannot be judged
    assert set(bad) == {("pkg/orders.py", 5), ("pkg/orders.py", 6)}
    assert all("missing 'zone'" in r for r in bad.values())
    assert bad[("pkg/orders.py", 6)] == "passes 2 positional arguments and the keyword express; missing 'zone'"
    assert {r["line"] for r in c["callers"]} >= {5, 6, 15, 16}
    i = data["changes"].index(c)
    sites = [p for p in data["context"] if p["change"] == i and p["role"] == "call-site"]
    assert sites and sites[0]["citation"] == "pkg/orders.py:4-7"
    md = run_review(repo, tmp_path / "i.db", capsys=capsys)
    assert "`(weight, distance, express=False)` → `(weight, distance, zone, express=False)`" in md
    assert "⚠ 2 call sites no longer match the new signature" in md


def test_signature_rules_self_defaults_varargs_keywords(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base: dict[str, str] = {"svc.py": '''class Service:
    def fetch(self, url, timeout=5):
        return url, timeout

    @classmethod
    def build(cls, name):
        return cls()

    def log(self, *parts, **extra):
        return parts, extra


def use(s):
    s.fetch("a")
    s.fetch("a", 3)
    s.fetch(url="a", timeout=2)
    Service.fetch(s, "a")
    Service.build("x")
    s.log(1, 2, 3, level=4)
'''}
    root = write_tree(tmp_path / "r", tree(base))
    git_init(root)
    text = base["svc.py"].replace("def fetch(self, url, timeout=5):", "def fetch(self, url, *, timeout=5, retries):")
    text = text.replace("def build(cls, name):", "def build(cls, name, region='eu'):")
    text = text.replace("def log(self, *parts, **extra):", "def log(self, first, *parts, **extra):")
    (root / "svc.py").write_text(text)
    data = review_json(root, tmp_path / "i.db", capsys)
    fetch = change(data, "Service.fetch")
    reasons = {m["line"]: m["reason"] for m in fetch["mismatched_calls"]}
    # every fetch call lacks the new keyword-only `retries`; the 2nd also passes timeout by position
    assert set(reasons) == {14, 15, 16, 17}
    assert "positional" in reasons[15]
    assert "missing 'retries'" in reasons[14] and "missing 'retries'" in reasons[17]
    assert not change(data, "Service.build")["mismatched_calls"]  # a new default fits every call
    assert not change(data, "Service.log")["mismatched_calls"]  # *parts still absorbs the rest


# --------------------------------------------------------------------------- budget


def test_budget_is_respected(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    count = estimate_tokens
    pieces_at: dict[int, int] = {}
    for budget in (120, 300, 700, 1500, 4000, 20000):
        data = review_json(repo, tmp_path / "i.db", capsys, "--max-tokens", str(budget))
        assert data["budget"] == budget
        assert 0 < data["tokens"] <= budget
        assert sum(p["tokens"] for p in data["context"]) <= data["tokens"]
        md = run_review(repo, tmp_path / "i.db", "--max-tokens", str(budget), capsys=capsys)
        assert count(md) <= budget, (budget, count(md))
        pieces_at[budget] = len(data["context"])
        roles = {p["role"] for p in data["context"]}
        if budget >= 4000:
            assert {"change", "diff", "caller", "call-site", "orphaned-caller", "callee"} <= roles
        # tier limits: callers are added while the total is under 40% of the budget, callees
        # 60%, outline and tests 80%, similar code 90% (tiers are filled in that order)
        ctx = data["context"]
        reserved = data["tokens"] - sum(p["tokens"] for p in ctx)
        assert reserved > 0  # the overview
        for tier, share in {1: 0.4, 2: 0.6, 3: 0.8, 4: 0.9}.items():
            if any(p["tier"] == tier for p in ctx):
                assert reserved + sum(p["tokens"] for p in ctx if p["tier"] <= tier) <= budget * share
    assert pieces_at[120] <= pieces_at[700] <= pieces_at[4000] <= pieces_at[20000]
    assert pieces_at[20000] > pieces_at[300]


# --------------------------------------------------------------------------- diff input


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def _summary(data: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["kind"], c["qualname"]) for c in data["changes"]}


EXPECTED = {("modified", "Cart.calculate_price"), ("deleted", "legacy_rate"), ("renamed", "compute_tax"),
            ("signature-changed", "shipping_cost")}


def test_diff_from_a_file_and_from_stdin(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from_git = review_json(repo, tmp_path / "i.db", capsys)
    assert _summary(from_git) == EXPECTED
    patch = tmp_path / "change.patch"
    patch.write_text(_git(repo, "diff", "HEAD"))

    from_file = review_json(repo, tmp_path / "i.db", capsys, "--diff", str(patch))
    assert from_file["base"] is None and from_file["label"] == f"diff from {patch}"
    assert _summary(from_file) == EXPECTED
    assert {f["path"]: f["status"] for f in from_file["files"]} == {
        "pkg/cart.py": "modified", "pkg/tax.py": "modified", "README.md": "modified"}
    legacy = change(from_file, "legacy_rate")
    assert names(legacy["orphaned_callers"]) == {"order_total", "refund"}

    # stdin, through a real process
    proc = subprocess.run(
        [sys.executable, "-m", "coderag_tui", "review", "--repo", str(repo), "--db", str(tmp_path / "i.db"),
         "--diff", "-", "--json"],
        input=patch.read_text(), capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert proc.returncode == 0, proc.stderr
    from_stdin = json.loads(proc.stdout)
    assert from_stdin["label"] == "diff from stdin"
    assert _summary(from_stdin) == EXPECTED
    sig = change(from_stdin, "shipping_cost")
    assert {m["line"] for m in sig["mismatched_calls"]} == {5, 6}

    # the patch not applied yet: the new side is rebuilt from the old files on disk
    _git(repo, "checkout", "--", ".")
    before = review_json(repo, tmp_path / "i2.db", capsys, "--diff", str(patch))
    assert _summary(before) == EXPECTED
    assert names(change(before, "legacy_rate")["orphaned_callers"]) == {"order_total", "refund"}
    assert {m["line"] for m in change(before, "shipping_cost")["mismatched_calls"]} == {5, 6}


def test_json_shape(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = review_json(repo, tmp_path / "i.db", capsys, "--max-tokens", "3000")
    assert set(data) >= {"label", "base", "budget", "tokens", "dropped", "notes", "files", "changes",
                         "context", "overview"}
    assert data["label"] == "working tree vs HEAD" and data["base"] == "HEAD"
    for f in data["files"]:
        assert set(f) >= {"path", "old_path", "new_path", "status", "language", "lines_added",
                          "lines_deleted", "partial", "note"}
    for c in data["changes"]:
        assert set(c) >= {"kind", "name", "qualname", "unit_kind", "path", "start_line", "end_line",
                          "citation", "old_name", "old_citation", "callers", "caller_count", "callees",
                          "tests", "similar", "orphaned_callers", "mismatched_calls", "outline", "imports",
                          "constants", "members", "signature_changed", "similarity"}
        assert c["kind"] in ("added", "modified", "deleted", "renamed", "signature-changed")
        for r in c["callers"] + c["callees"] + c["tests"] + c["orphaned_callers"]:
            assert r["citation"] == f"{r['path']}:{r['start_line']}-{r['end_line']}"
    for p in data["context"]:
        assert set(p) >= {"change", "role", "tier", "path", "start_line", "end_line", "citation", "title",
                          "tokens", "text"}
        assert 0 <= p["change"] < len(data["changes"]) and p["tokens"] > 0
        if p["role"] not in ("metadata", "outline", "diff"):
            lines = (repo / p["path"]).read_text().splitlines()[p["start_line"] - 1 : p["end_line"]] \
                if p["role"] != "change" or data["changes"][p["change"]]["kind"] != "deleted" else None
            if lines is not None:
                assert p["text"] == "\n".join(lines), p["citation"]  # citations are exact


def test_untracked_files_are_added_and_clean_tree_has_no_changes(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = write_tree(tmp_path / "r", {"a.py": "def f():\n    return 1\n"})
    git_init(root)
    # a clean tree against HEAD: nothing to review, and how to compare with something else
    assert main(["review", "--repo", str(root), "--db", str(tmp_path / "i.db"), "--json"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["changes"] == [] and data["files"] == []
    assert err == ("coderag: nothing to review: the working tree is the same as HEAD; compare with an "
                   "earlier revision (--base main, --base HEAD~1) or give a diff (--diff FILE, or - for stdin)\n")
    (root / "b.py").write_text("from a import f\n\n\nclass Box:\n    def size(self):\n        return f()\n")
    data = review_json(root, tmp_path / "i.db", capsys)
    assert _summary(data) == {("added", "Box")}
    assert change(data, "Box")["members"] == ["size"]


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_tree(tmp_path / "plain", {"a.py": "def f():\n    pass\n"})
    assert main(["review", "--repo", str(root), "--db", str(tmp_path / "i.db")]) == 2
    err = capsys.readouterr().err
    assert "not a git repository" in err and "--diff" in err and len(err.strip().splitlines()) == 1
    git_init(root)
    assert main(["review", "--repo", str(root), "--db", str(tmp_path / "i.db"), "--base", "nope"]) == 2
    assert "unknown revision 'nope'" in capsys.readouterr().err


# --------------------------------------------------------------------------- the diff parser


def test_parse_git_and_plain_diffs_and_rebuild_sides() -> None:
    text = (
        "diff --git a/x.py b/y.py\nsimilarity index 80%\nrename from x.py\nrename to y.py\n"
        "--- a/x.py\n+++ b/y.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+n1\n+n2\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n"
        "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
    )
    files = parse_unified_diff(text)
    assert [(f.old_path, f.new_path, f.status) for f in files] == [
        ("x.py", "y.py", "renamed"), (None, "new.py", "added"), ("gone.py", None, "deleted"),
        ("img.png", "img.png", "modified")]
    assert files[3].binary
    h = files[0].hunks[0]
    assert h.deleted_lines() == [2] and h.added_lines() == [2]
    assert reverse_apply("a\nB\nc\n", files[0].hunks) == "a\nb\nc\n"
    assert forward_apply("a\nb\nc\n", files[0].hunks) == "a\nB\nc\n"
    assert reverse_apply("a\nX\nc\n", files[0].hunks) is None  # does not fit
    plain = "--- old/m.py\t2024-01-01\n+++ new/m.py\t2024-01-02\n@@ -2,0 +3,1 @@\n+added\n"
    (p,) = parse_unified_diff(plain)
    assert (p.old_path, p.new_path) == ("old/m.py", "new/m.py") and p.hunks[0].added_lines() == [3]


# --------------------------------------------------------------------------- --ask, with the bundled model

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


def _bundled() -> bool:
    try:
        from coderag_tui.answering.providers.local import bundled_model_path
    except ImportError:
        return False
    return HAVE_LLAMA and bundled_model_path() is not None


@pytest.mark.slow
@pytest.mark.skipif(not _bundled(), reason="needs llama-cpp-python and the bundled GGUF")
def test_ask_streams_a_review_from_the_configured_model(repo: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[llm]\nmax_tokens = 40\nn_ctx = 1024\ntemperature = 0.0\n")
    code = main(["review", "--repo", str(repo), "--db", str(tmp_path / "i.db"), "--config", str(config),
                 "--ask", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["review"].strip() and "error" not in data
    assert data["budget"] <= 1024 - 40
    assert data["sources"] and all(":" in s["citation"] for s in data["sources"])
    assert "answered by" in err
