"""A budget named in any order is a hard filter through the HTTP API: no product above it
comes back as a match, and when nothing fits, the products are flagged nearest matches.

JVM-free: the demo catalog in an edge shard (tests/demo_index.py), SYNC_MODE=off, no LLM
key (the written answer is extractive). Its headphones cost $79.99, $95, $129 and $263.49.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.demo_index import DemoShard, demo_shard_fixture, replica_client  # noqa: F401


@pytest.fixture(scope="module")
def client(
    demo_shard: DemoShard, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    with replica_client(demo_shard, tmp_path_factory.mktemp("api-budget")) as c:
        yield c


def search(client: httpx.Client, **body: Any) -> dict[str, Any]:
    return _post(client, "/search", {"top_k": 5, **body})


def recommend(client: httpx.Client, **body: Any) -> dict[str, Any]:
    return _post(client, "/recommend", {"top_k": 3, **body})


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


@pytest.mark.parametrize(
    "query",
    [
        "over-ear headphones, $100 budget",
        "budget 100 headphones",
        "headphones, 100 is my limit",
        "my budget for headphones is $100",
        "headphones with a budget around 100",
    ],
)
def test_a_budget_in_any_order_filters_and_nothing_above_it_is_a_match(
    client: httpx.Client, query: str
) -> None:
    body = search(client, query=query)
    assert [(f["field"], f["value"], f["source"], f["label"]) for f in body["filters_applied"]] == [
        ("max_price", 100.0, "query", "≤ $100")
    ]
    assert "budget" not in body["search_text"] and "100" not in body["search_text"]
    assert body["nearest_matches"] is False
    prices = [p["price"] for p in body["products"]]
    assert any("Headphones" in p["name"] for p in body["products"]), body["products"]
    assert prices and all(p <= 100 for p in prices), prices
    # Above the budget only apart, as the closest ones outside it, flagged.
    for p in body["closest_outside_filters"]:
        assert p["outside_filters"] and p["price"] > 100, p
    # The filter is what keeps them out: without it the same words find dearer headphones.
    unfiltered = search(client, query=query, ignore_parsed=["max_price"])
    assert any(p["price"] > 100 for p in unfiltered["products"])


def test_a_budget_nothing_fits_gives_nearest_matches_labelled_as_such(
    client: httpx.Client,
) -> None:
    body = recommend(client, query="headphones, my budget is 2 dollars")
    assert body["nearest_matches"] is True
    assert body["message"].startswith("Nothing in the catalog matches your request at ≤ $2.")
    assert body["products"] and all(p["price"] > 2 for p in body["products"])


def test_running_shoes_under_a_budget_shows_only_shoes_and_offers_the_closest_above_apart(
    client: httpx.Client, demo_shard: DemoShard
) -> None:
    # The demo page's complaint: one running shoe fits, the other slots went to a yoga
    # mat, a headlamp and dog harnesses whose descriptions say "runs". The budget is
    # chosen so that exactly one of the shard's running shoes fits.
    shoes = sorted(p.price for p in demo_shard.products if "Running Shoes" in p.name and p.price)
    budget = int((shoes[0] + shoes[1]) / 2)
    query = f"running shoes under ${budget}"
    body = recommend(client, query=query, top_k=5)
    assert body["nearest_matches"] is False
    assert [p["price"] for p in body["products"]] == [shoes[0]]
    assert all("Running Shoes" in p["name"] for p in body["products"])
    closest = body["closest_outside_filters"]
    assert closest and all("Running Shoes" in p["name"] for p in closest)
    assert all(p["price"] > budget and p["outside_filters"] for p in closest)
    assert len(closest) <= 4
    assert body["message"].startswith(f"Only 1 product matches your request at ≤ ${budget};")
    # The extractive answer names the closest ones as outside the price range.
    assert f"[id:{closest[0]['id']}]" in body["message"].split("Closest outside")[1]


def test_a_price_in_another_currency_is_read_as_the_shops_and_the_answer_says_so(
    client: httpx.Client,
) -> None:
    # The shop has no exchange rates: "under 150 euros" filtered at $150, unsaid.
    body = recommend(client, query="headphones under 150 euros")
    assert [(f["field"], f["label"]) for f in body["filters_applied"]] == [("max_price", "≤ $150")]
    notice = '"under 150 euros" is read as ≤ $150, the shop\'s currency (not converted). '
    assert body["message"].startswith(notice), body["message"]
    # Said in the shop's own currency, or with none, nothing is said of it.
    for query in ("headphones under $150", "headphones under 150 dollars"):
        said = recommend(client, query=query)
        assert "not converted" not in said["message"], query
    # A follow-up carries the bound; the notice is said once, where the price was.
    again = recommend(client, query="wireless ones", conversation=body["conversation"])
    assert "not converted" not in again["message"]
