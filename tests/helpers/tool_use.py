"""A scripted OpenAI-compatible model that calls tools, then answers; its fixture repository."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.loopback import Handler, openai_sse

FILES = {
    "shop/tax.py": 'TAX_RATE = 0.2\n\n\ndef tax_for(amount):\n    """Tax owed on an amount."""\n'
                   "    return amount * TAX_RATE\n",
    "shop/cart.py": "from shop.tax import tax_for\n\n\ndef total(prices):\n"
                    "    subtotal = sum(prices)\n    return subtotal + tax_for(subtotal)\n",
    "docs/greeting.py": "def greet(name):\n    return 'hello ' + name\n",
    "node_modules/dep/key.js": "module.exports = 'do-not-send'\n",  # excluded from the index
}


ANSWER = "tax_for multiplies the amount by TAX_RATE (shop/tax.py:4-6). Unlike docs/greeting.py:1-2."


def openai_tool_call(h: Handler, call_id: str, name: str, args: dict[str, Any]) -> None:
    """A streamed turn that asks for one call, its arguments split over two chunks."""
    text = json.dumps(args)
    h.start_sse()
    for n, piece in enumerate((text[:5], text[5:])):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if n == 0:
            call.update(id=call_id, type="function")
            call["function"]["name"] = name
        doc = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
        h.chunk(f"data: {json.dumps(doc)}\n\n")
    h.chunk("data: [DONE]\n\n")
    h.end_chunks()


def openai_script(h: Handler, n: int) -> None:
    if n == 0:
        openai_tool_call(h, "call_a", "search_codebase", {"query": "tax owed"})
    elif n == 1:
        openai_tool_call(h, "call_b", "read_lines", {"path": "shop/tax.py", "start": 4, "end": 6})
    else:
        openai_sse(h, [ANSWER[:20], ANSWER[20:]])
