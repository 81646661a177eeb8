"""A two-file Python repository (a cart that adds tax) for the tests that need a real
index and a real model but little CPU."""

FILES = {
    "shop/cart.py": '''"""Shopping cart."""
from shop.tax import tax_for


class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price):
        """Add an item to the cart."""
        self.items.append((name, price))

    def total(self):
        """The total price including tax."""
        subtotal = sum(price for _, price in self.items)
        return subtotal + tax_for(subtotal)
''',
    "shop/tax.py": '''TAX_RATE = 0.2


def tax_for(amount):
    """Tax owed on an amount."""
    return amount * TAX_RATE
''',
}
