"""A small fixture repository for the TUI tests, written fresh and indexed for real."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/pricing.py": '''"""Prices and taxes."""

TAX_RATE = 0.2


def price_of(item: str) -> float:
    """The unit price of an item."""
    prices = {"apple": 0.5, "pear": 0.75}
    return prices.get(item, 1.0)


def with_tax(amount: float) -> float:
    return round_money(amount * (1 + TAX_RATE))


def round_money(amount: float) -> float:
    return round(amount, 2)
''',
    "shop/cart.py": '''"""The shopping cart."""

from shop.pricing import price_of, with_tax


class Cart:
    """Items and quantities."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}

    def add(self, item: str, qty: int = 1) -> None:
        self.items[item] = self.items.get(item, 0) + qty

    def subtotal(self) -> float:
        return sum(price_of(item) * qty for item, qty in self.items.items())

    def total(self) -> float:
        """The amount to pay, tax included."""
        return with_tax(self.subtotal())


def checkout(cart: Cart) -> str:
    return f"pay {cart.total():.2f}"
''',
    "tests/test_cart.py": '''from shop.cart import Cart, checkout


def test_total():
    cart = Cart()
    cart.add("apple", 2)
    assert cart.total() == 1.2


def test_checkout():
    cart = Cart()
    cart.add("pear")
    assert checkout(cart) == "pay 0.90"
''',
    "README.md": "# shop\n\nA tiny shop used to test coderag.\n",
}


def write_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".git").mkdir(exist_ok=True)
    return root
