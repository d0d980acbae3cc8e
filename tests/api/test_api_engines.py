"""The HTTP API on each store engine: qdrant-client in memory, the embedded edge shard and a
real Qdrant server (the `server` tier), each through a real uvicorn with the sync embedded.

The catalog is the committed `cow_aged` table (tests/fixtures/tables/make_tables.py: 118
products, category CATEGORIES[id % 4], price id + 0.99; ids 7 and 8 deleted), so no JVM.
The same requests must give the same answers on every engine. On the server, a second API
process (another "host": its own lock folder) finds the first one's sync lease held: it
serves the index that one writes and refuses to sync.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from app.core.config import Settings
from tests.fixtures.tables.make_tables import CATEGORIES, EXPECTED_IDS, HERE
from tests.live_server import ServerThread, wait_ready
from tests.synctools import ENGINES, engine_settings


@dataclass
class Service:
    client: httpx.Client
    settings: Settings
    engine: str


def _ids(category: str, max_price: float, min_price: float = 0.0) -> set[int]:
    return {
        i
        for i in EXPECTED_IDS
        if CATEGORIES[i % 4] == category and min_price <= i + 0.99 <= max_price
    }


@pytest.fixture(scope="module", params=ENGINES)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    engine = str(request.param)
    folder = tmp_path_factory.mktemp(f"api-{engine}")
    table = folder / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    settings = Settings(
        hudi_table_path=str(table),
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_interval_seconds=1.0,
        sync_lock_dir=str(folder / "locks"),
        openai_api_key=None,
        api_key=None,
        cors_origins=[],
        **engine_settings(engine, request, folder),
    )
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        wait_ready(c)
        yield Service(c, settings, engine)


def test_ready_and_status_after_the_bootstrap(service: Service) -> None:
    status = service.client.get("/sync/status").json()
    assert status["ready"] and status["mode"] == "embedded" and status["checkpoint"]
    assert status["counts"]["chunks"] > len(EXPECTED_IDS)
    lease = status["lease"]
    if service.engine == "server":  # a store other hosts may share: the holder is shown
        assert lease["held_here"] and lease["until"] > time.time(), lease
    else:  # a store of one process needs no lease
        assert lease is None


def test_recommend_keeps_the_filters(service: Service) -> None:
    body = {
        "query": "a sturdy everyday item for the kitchen aisle",
        "top_k": 5,
        "filters": {"category": "kitchen", "max_price": 50},
    }
    r = service.client.post("/recommend", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    ids = [p["id"] for p in answer["products"]]
    assert len(ids) == 5 and set(ids) <= _ids("kitchen", 50)
    assert answer["generator"] == "extractive"
    assert answer["products"][0]["name"] in answer["message"]


def test_search_understands_a_budget_in_words(service: Service) -> None:
    r = service.client.post("/search", json={"query": "toys for the toys aisle under $30"})
    assert r.status_code == 200, r.text
    body = r.json()
    applied = {(f["field"], f["value"]) for f in body["filters_applied"]}
    assert applied == {("max_price", 30.0), ("category", "toys")}
    assert body["products"] and {p["id"] for p in body["products"]} <= _ids("toys", 30)


def test_similar_products_are_exactly_the_filtered_rest(service: Service) -> None:
    # No threshold on "similar": with room for all, every other toy up to $40.
    r = service.client.get(
        "/products/3/similar", params={"top_k": 50, "category": "toys", "max_price": 40}
    )
    assert r.status_code == 200, r.text
    assert {p["id"] for p in r.json()["products"]} == _ids("toys", 40) - {3}
    assert service.client.get("/products/7/similar").status_code == 404  # deleted


def test_a_manual_cycle_on_a_mirrored_index_changes_nothing(service: Service) -> None:
    deadline = time.monotonic() + 60
    while (r := service.client.post("/sync")).status_code == 202:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert r.status_code == 200, r.text
    assert (r.json()["mode"], r.json()["embedded"], r.json()["deleted"]) == ("noop", 0, 0)


@pytest.mark.parametrize(
    "service", [pytest.param("server", marks=pytest.mark.server)], indirect=True
)
def test_a_second_api_on_the_server_waits_for_the_lease_and_serves(service: Service) -> None:
    settings = service.settings.model_copy(
        update={"sync_lock_dir": service.settings.sync_lock_dir + "-other-host"}
    )
    holder = service.client.get("/sync/status").json()["lease"]["holder"]
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        wait_ready(c, 60)  # the first one's checkpoint, not a cycle of its own
        status = c.get("/sync/status").json()
        assert status["lease"] == {**status["lease"], "holder": holder, "held_here": False}
        assert status["counts"]["cycles"] == 0 and status["ready"]
        r = c.post("/recommend", json={"query": "a sturdy everyday item for toys", "top_k": 3})
        assert r.status_code == 200 and len(r.json()["products"]) == 3, r.text
        refused = c.post("/sync")
        assert refused.status_code == 409 and "sync lease held by" in refused.json()["detail"]
    # The first one still holds it and still syncs.
    assert service.client.get("/sync/status").json()["lease"]["held_here"]
