"""Three repositories that import one another (a workspace) and a scripted model answering
across them (`repos`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import Handler, Loopback, openai_sse

SHARED = {
    "pyproject.toml": '[project]\nname = "shared-lib"\nversion = "1.0"\n',
    "shared_lib/__init__.py": '"""Shared helpers."""\nfrom shared_lib.pricing import apply_discount\n',
    "shared_lib/pricing.py": '"""Prices and discounts shared by every service."""\n\n\n'
                             "def apply_discount(total_cents, loyalty_years):\n"
                             '    """Take the loyalty discount off a total: two percent per year, at most twenty."""\n'
                             "    rate = min(loyalty_years * 2, 20)\n"
                             "    return total_cents - total_cents * rate // 100\n",
}


BACKEND = {
    "app/checkout.py": '"""Checkout of a shopping cart."""\nfrom shared_lib.pricing import apply_discount\n'
                       "import shared_lib\n\n\ndef checkout_total(cart, customer):\n"
                       '    """The amount a customer pays for a cart, after the loyalty discount."""\n'
                       "    subtotal = sum(item.price_cents * item.quantity for item in cart)\n"
                       "    return apply_discount(subtotal, customer.loyalty_years)\n\n\n"
                       "def refund(order):\n    return shared_lib.apply_discount(order.total, 0)\n",
}


FRONTEND = {
    "package.json": '{"name": "@acme/web"}\n',
    "src/banner.js": "// The banner shown at the top of the page.\nfunction renderBanner(title) {\n"
                     "  return '<h1>' + title + '</h1>';\n}\nmodule.exports = { renderBanner };\n",
}


ANSWER = ["`checkout_total` passes the subtotal to `apply_discount` ", "(backend:app/checkout.py:6-9), ",
          "which takes two percent per loyalty year off ", "(shared-lib:shared_lib/pricing.py:4-7; ",
          "not frontend:app/checkout.py:6-9)."]


QUESTION = "how is the loyalty discount applied to the checkout total?"


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Any]:
    out = {name: write_tree(tmp_path / name, files)
           for name, files in (("shared-lib", SHARED), ("backend", BACKEND), ("frontend", FRONTEND))}
    for root in out.values():
        git_init(root)
    def answer(h: Handler, n: int) -> None:
        if h.command == "POST":
            openai_sse(h, ANSWER)
        else:
            h.send_json(404, {"error": "no"})

    model = Loopback(answer)
    config = tmp_path / "config.toml"
    listed = ", ".join(f'"{p}"' for p in out.values())
    config.write_text(f'[embed]\nenabled = false\n[llm]\nprovider = "openai"\nbase_url = "{model.url}/v1"\n'
                      'model = "scripted"\ndiscover = false\ntools = "off"\ncache_similarity = 0\ntimeout_s = 30\n'
                      f"[server]\nrepositories = [{listed}]\n")
    yield {**out, "config": str(config), "model": model}
    model.close()
