"""An answer says so when nothing in the catalog matches closely: real HTTP over the demo
catalog (tests/demo_index.py, JVM-free, SYNC_MODE=off), the offline extractive answer.

The demo sells no blender: before RELEVANCE_CLOSE_MATCH, "a blender that is not too loud"
answered "Top pick: … Stand Mixer" as if it were one. The products are the same either way
(the ranking and the cut do not change); the answer and `no_close_match` say what they are.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.demo_index import DemoShard, demo_shard_fixture, replica_settings  # noqa: F401
from tests.live_server import ServerThread

NOTICE = "Nothing in the catalog closely matches your request"


@pytest.fixture(scope="module")
def client(
    demo_shard: DemoShard, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    settings = replica_settings(demo_shard, tmp_path_factory.mktemp("close-match"))
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.mark.parametrize("query", ["a blender that is not too loud", "a dishwasher"])
def test_nothing_close_is_said_and_the_nearest_are_still_offered(
    client: httpx.Client, query: str
) -> None:
    r = client.post("/recommend", json={"query": query, "top_k": 3})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["no_close_match"] is True
    assert answer["products"], "the nearest products are still offered"
    assert answer["message"].startswith(NOTICE), answer["message"]
    search = client.post("/search", json={"query": query, "top_k": 3}).json()
    assert search["no_close_match"] is True
    assert [p["id"] for p in search["products"]] == [p["id"] for p in answer["products"]]


@pytest.mark.parametrize("query", ["a camping tent", "wireless headphones for swimming"])
def test_a_request_the_catalog_matches_gets_no_notice(client: httpx.Client, query: str) -> None:
    answer = client.post("/recommend", json={"query": query, "top_k": 3}).json()
    assert answer["no_close_match"] is False
    assert NOTICE not in answer["message"]
    assert answer["products"][0]["score"] >= 0.5


def test_the_stream_carries_the_flag_and_the_notice(client: httpx.Client) -> None:
    body = {"query": "a blender that is not too loud", "top_k": 3}
    with client.stream(
        "POST", "/recommend", json=body, headers={"accept": "text/event-stream"}
    ) as r:
        text = "".join(r.iter_text())
    assert r.status_code == 200
    assert '"no_close_match":true' in text.replace(" ", "")
    assert NOTICE in text
