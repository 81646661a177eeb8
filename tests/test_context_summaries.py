"""Summaries in the composed context: the full format for primary results (summary above
the code), the brief format for supporting units (first sentence, first lines)."""

from __future__ import annotations

import time

from coderag_tui.store import descriptions as store

FILES = {
    "shop/cart.py": "from shop.money import rounded\n\n\nclass Cart:\n"
                    "    def total(self, price):\n        return rounded(price)\n\n"
                    "    def checkout(self, price):\n        return self.total(price)\n",
    "shop/money.py": "def rounded(x):\n    return round(x, 2)\n",
}


def _put(db, path: str, kind: str, qualname: str, text: str) -> None:
    with db.transaction():
        store.put_summary(db, store.StoredSummary(store.summary_key(path, kind, qualname), path, kind, qualname,
                                                  text, "m", "1", "", "", False, time.time(), 0.0))


def test_primaries_carry_their_summary_and_neighbours_its_first_sentence(make_repo, open_service):
    service = open_service(make_repo(FILES))
    plain = service.context("Cart total price", max_tokens=3000)
    assert plain.pieces and not any(p.about for p in plain.pieces)
    _put(service.db, "shop/cart.py", "method", "Cart.total", "Adds up the cart's prices. Rounds to cents.")
    _put(service.db, "shop/money.py", "function", "rounded",
         "Rounds an amount of money to whole cents. Used for every price shown.")
    ctx = service.context("Cart total price", max_tokens=3000)
    primary = next(p for p in ctx.pieces if p.role == "primary" and "Cart.total" in p.title)
    assert primary.about == "Adds up the cart's prices. Rounds to cents."
    callee = next(p for p in ctx.pieces if p.role == "callee" and p.title.startswith("rounded"))
    assert callee.about == "Rounds an amount of money to whole cents."
    text = ctx.render()
    assert (f"[primary] {primary.title}\nSummary (written by m, not checked): Adds up the cart's prices. "
            "Rounds to cents.\n```python\n") in text
    assert ctx.tokens <= ctx.budget


def test_the_code_outranks_its_summary_in_a_tight_budget():
    from coderag_tui.retrieval.packing import Candidate, fit
    from coderag_tui.tokens import estimate_tokens

    lines = [(1, "def rounded(x):"), (2, "    return round(x, 2)")]
    c = Candidate("primary", "primary", "m.py", 1, 2, "function rounded", 1.0, "python", lines,
                  about="Rounds an amount of money to whole cents, for every price the shop shows. " * 3)
    roomy = fit(c, 400, estimate_tokens, set())
    assert roomy is not None and roomy[0].about == c.about
    code_only = fit(c, roomy[0].tokens - 10, estimate_tokens, set())
    assert code_only is not None and not code_only[0].about and "return round(x, 2)" in code_only[0].text
