"""A product's popularity from the shoppers' signals its payload carries (product_signals).

`x / (x + HALF)` of x = purchases + 0.3 x add-to-carts + 0.05 x clicks (time-decayed
counts): bounded in [0, 1), 0.5 at HALF weighted purchases, so one viral product cannot
outweigh relevance by more than the weight the ranking gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HALF = 5.0
_WEIGHTS = {"purchases": 1.0, "add_to_carts": 0.3, "clicks": 0.05}


def popularity(payload: Mapping[str, Any]) -> float:
    """0 for a product without signals."""
    x = 0.0
    for name, weight in _WEIGHTS.items():
        value = payload.get(name)
        if isinstance(value, int | float) and value > 0:
            x += weight * float(value)
    return x / (x + HALF)
