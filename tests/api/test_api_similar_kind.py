"""Products similar to one are of its kind first: real HTTP over the demo catalog
(tests/demo_index.py, JVM-free, SYNC_MODE=off).

The nearest products by a product's own chunks mix kinds: before, on this shard (every 3rd
demo product), a headlamp's similar products put an e-reader among the other headlamps,
and headphones' a speaker among the other headphones (skillets and purifiers already came
together; they stay so).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.demo_index import DemoShard, demo_client_fixture, demo_shard_fixture  # noqa: F401
from tests.synctools import wait_for

# The catalog's words (which make "headlamp" a kind) are read in the background after the
# start; until then the nearest come in their order.
WORDS_READ_WITHIN = 30.0


def _kind(name: str) -> str:
    return name.split()[-1].lower()


@pytest.mark.parametrize("kind", ["headlamp", "skillet", "headphones", "purifier"])
def test_the_same_kind_comes_first(
    demo_client: httpx.Client, demo_shard: DemoShard, kind: str
) -> None:
    same = [p for p in demo_shard.products if _kind(p.name) == kind]
    product, others = same[0], {p.id for p in same[1:]}
    assert others, "the shard holds more than one of the kind"

    def similar() -> list[dict[str, Any]] | None:
        r = demo_client.get(f"/products/{product.id}/similar", params={"top_k": len(others)})
        assert r.status_code == 200, r.text
        got: list[dict[str, Any]] = r.json()["products"]
        return got if {p["id"] for p in got} == others else None

    found: list[dict[str, Any]] = wait_for(f"the {kind}s first", similar, WORDS_READ_WITHIN)
    assert [_kind(p["name"]) for p in found] == [kind] * len(others), found
    # The rest follow, nearest first: with room for more, other kinds come after.
    more = demo_client.get(f"/products/{product.id}/similar", params={"top_k": len(others) + 3})
    kinds = [_kind(p["name"]) for p in more.json()["products"]]
    assert kinds[: len(others)] == [kind] * len(others) and len(kinds) == len(others) + 3
