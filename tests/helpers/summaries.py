"""The summaries tests' fixture repository."""

from __future__ import annotations

FILES = {
    "app/main.py": '"""Command line entry of the shop."""\nfrom app.core import Cart\n\n\ndef main():\n'
                   '    Cart().add(1)\n',
    "app/core.py": '"""Shopping cart arithmetic."""\nfrom app.util import rounded\n\n\nclass Cart:\n'
                   '    """Items and their total."""\n\n    def add(self, price):\n        return self.total(price)\n\n'
                   '    def total(self, price):\n        return rounded(price)\n',
    "app/util.py": '"""Small numeric helpers."""\n\n\ndef rounded(x):\n    """Round to cents."""\n'
                   '    return round(x, 2)\n',
    "app/kinds.py": "from app.core import Cart\n\n\nclass Item:\n    pass\n\n\nclass Price:\n    pass\n",
    "app/report.py": "from app.core import Cart\nfrom app.kinds import Item\n\n\ndef report():\n    return Cart()\n",
    "app/export.py": "from app.core import Cart\nfrom app.kinds import Item\n\n\ndef export():\n    return Cart()\n",
    "config/settings.toml": "[shop]\ncurrency = 'EUR'\n",
    "tests/test_core.py": "from app.core import Cart\n\n\ndef test_add():\n    assert Cart().add(1) == 1\n",
}
