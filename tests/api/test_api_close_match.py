"""An answer says so when nothing in the catalog matches closely: real HTTP over the demo
catalog (tests/demo_index.py, JVM-free, SYNC_MODE=off), the offline extractive answer.

The demo sells no blender: before RELEVANCE_CLOSE_MATCH, "a blender that is not too loud"
answered "Top pick: … Stand Mixer" as if it were one. The products are the same either way
(the ranking and the cut do not change); the answer and `no_close_match` say what they are.
"""

from __future__ import annotations

import httpx
import pytest

from tests.demo_index import demo_client_fixture, demo_shard_fixture  # noqa: F401

NOTICE = "Nothing in the catalog closely matches your request"


@pytest.mark.parametrize("query", ["a blender that is not too loud", "a dishwasher"])
def test_nothing_close_is_said_and_the_nearest_are_still_offered(
    demo_client: httpx.Client, query: str
) -> None:
    r = demo_client.post("/recommend", json={"query": query, "top_k": 3})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["no_close_match"] is True
    assert answer["products"], "the nearest products are still offered"
    assert answer["message"].startswith(NOTICE), answer["message"]
    search = demo_client.post("/search", json={"query": query, "top_k": 3}).json()
    assert search["no_close_match"] is True
    assert [p["id"] for p in search["products"]] == [p["id"] for p in answer["products"]]


@pytest.mark.parametrize("query", ["a camping tent", "wireless headphones for swimming"])
def test_a_request_the_catalog_matches_gets_no_notice(
    demo_client: httpx.Client, query: str
) -> None:
    answer = demo_client.post("/recommend", json={"query": query, "top_k": 3}).json()
    assert answer["no_close_match"] is False
    assert NOTICE not in answer["message"]
    assert answer["products"][0]["score"] >= 0.5


def test_the_stream_carries_the_flag_and_the_notice(demo_client: httpx.Client) -> None:
    body = {"query": "a blender that is not too loud", "top_k": 3}
    with demo_client.stream(
        "POST", "/recommend", json=body, headers={"accept": "text/event-stream"}
    ) as r:
        text = "".join(r.iter_text())
    assert r.status_code == 200
    assert '"no_close_match":true' in text.replace(" ", "")
    assert NOTICE in text
