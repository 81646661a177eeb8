"""The selection strategies on a fixture repo: each changes what a context is built around
the way it says."""

from __future__ import annotations

import json
import posixpath

import pytest

from coderag_tui.errors import CoderagError
from coderag_tui.retrieval.strategies import importance, select

FILES = {
    "core/payments.py": (
        '"""Payment processing core."""\n\n\n'
        "def charge_payment(amount):\n    return ledger_write(amount)\n\n\n"
        "def ledger_write(amount):\n    return audit_entry(amount)\n\n\n"
        "def audit_entry(amount):\n    return amount\n"),
    "core/refunds.py": "from core.payments import charge_payment\n\n\n"
                       "def refund_payment(amount):\n    return charge_payment(-amount)\n",
    "web/views.py": "from core.payments import charge_payment\n\n\n"
                    "def payment_view(request):\n    return charge_payment(request)\n\n\n"
                    "def payment_list(request):\n    return [payment_view(request)]\n\n\n"
                    "def payment_detail(request):\n    return payment_view(request)\n",
    "web/forms.py": "def payment_form(data):\n    return dict(data)\n",
    "cli/main.py": "from core.payments import charge_payment\n\n\n"
                   "def main():\n    return charge_payment(2)\n",
    "reports/daily.py": "from core.payments import charge_payment\n\n\n"
                        "def daily_payment_report():\n    return charge_payment(0)\n",
}
QUESTION = "payment view list detail payment"
N = 3


@pytest.fixture
def service(make_repo, open_service):
    return open_service(make_repo(FILES))


def _names(hits, n=N):
    return [h.unit.qualname for h in hits[:n]]


def test_relevance_is_the_search_order_and_the_default(service):
    hits = service.search(QUESTION, k=20)
    assert _names(select(service.db, hits, "relevance", N), 20) == _names(hits, 20)
    assert _names(service.context(QUESTION, 3000).hits, 20) == _names(hits, 20)


def test_breadth_first_spreads_the_primaries_over_folders(service):
    hits = service.search(QUESTION, k=20)
    folders = [posixpath.dirname(h.unit.path) for h in hits[:N]]
    assert len(set(folders)) < N  # the most relevant crowd into one folder (web/views.py)
    chosen = select(service.db, hits, "breadth", N)
    assert len({posixpath.dirname(h.unit.path) for h in chosen[:N]}) == N
    assert chosen[0].unit.id == hits[0].unit.id  # the best of each folder, in the search's order
    assert sorted(h.unit.id for h in chosen) == sorted(h.unit.id for h in hits)  # reordered, not lost


def test_importance_first_puts_the_most_referenced_code_first(service):
    hits = service.search(QUESTION, k=20)
    pool = hits[: N * 3]
    assert any(h.unit.qualname == "charge_payment" for h in pool)
    assert hits[0].unit.qualname != "charge_payment"
    score = importance(service.db, [h.unit.id for h in pool])
    chosen = select(service.db, hits, "importance", N)
    # charge_payment: in the core module (imported by 4 files) and called from 4 places
    assert chosen[0].unit.qualname == "charge_payment"
    assert [score[h.unit.id] for h in chosen[: len(pool)]] == sorted(score.values(), reverse=True)
    ctx = service.context(QUESTION, 3000, strategy="importance")
    primaries = [p for p in ctx.pieces if p.role == "primary"]
    assert "charge_payment" in primaries[0].title or "charge_payment" in primaries[-1].title


def test_depth_first_follows_the_best_hits_call_chain(service):
    hits = service.search("charge payment", k=20)
    assert hits[0].unit.qualname == "charge_payment"
    assert "audit_entry" not in _names(hits)
    chosen = select(service.db, hits, "depth", N)
    assert _names(chosen) == ["charge_payment", "ledger_write", "audit_entry"]
    ctx = service.context("charge payment", 3000, strategy="depth")
    titles = " ".join(p.title for p in ctx.pieces if p.role == "primary")
    assert "audit_entry" in titles and "ledger_write" in titles
    # with more room than the chain, its callers come next
    more = select(service.db, hits, "depth", 5)
    assert {h.unit.qualname for h in more[3:5]} <= {"refund_payment", "payment_view", "main",
                                                    "daily_payment_report"}


def test_an_unknown_strategy_is_one_clear_error(service, capsys):
    with pytest.raises(CoderagError, match="unknown context strategy 'sideways'"):
        service.context(QUESTION, 2000, strategy="sideways")
    assert select(service.db, [], "importance_first", N) == []  # the spelling with `_first` is accepted too


def test_the_cli_takes_a_strategy(make_repo, tmp_path, capsys):
    from coderag_tui.cli.main import main

    common = ["--repo", str(make_repo(FILES)), "--db", str(tmp_path / "cli.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    assert main(["context", "charge payment", "--strategy", "depth", "--json", *common]) == 0
    out = capsys.readouterr().out
    assert [h["name"] for h in json.loads(out)["hits"][:3]] == [
        "charge_payment", "ledger_write", "audit_entry"]
    assert main(["context", "charge payment", "--strategy", "sideways", *common]) != 0
    assert "invalid choice: 'sideways'" in capsys.readouterr().err
