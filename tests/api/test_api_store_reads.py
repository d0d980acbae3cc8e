"""What a request reads from the store: searches, never a scroll (issue 26).

A catalog without categories (the demo catalog's every 9th product with its category
removed, as the Home Depot titles have none), chunked, embedded and written into an edge
shard by the sync's own applier, served by the real app (uvicorn, SYNC_MODE=off, the
extractive generator). The store's one scroll call, `_scroll_page`, and the category
vocabulary's facet read, `keyword_counts`, are wrapped with counters. The empty vocabulary
used to be read again, by a scroll of every chunk, on every request.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.embedding import Embedder
from app.main import create_app
from app.store import VectorStore
from tests.demo_index import demo_products, write_shard
from tests.live_server import ServerThread

REFRESH_SECONDS = 1.0  # CATEGORY_REFRESH_SECONDS: refreshes fall due while requests run
# Each with a match among the shard's products (a page is never empty).
QUERIES = ["pruning shears", "garden hose", "something for the kitchen", "smartwatch"]


@dataclass
class Service:
    client: httpx.Client
    store: VectorStore
    scrolls: list[int]  # page size of each scroll call
    facets: list[str]  # field of each facet read
    product_id: int  # one product in the shard


def count_calls(store: VectorStore, name: str, calls: list[Any]) -> None:
    """Wrap the store's method `name` (instrumentation only): each call appends its first
    argument to `calls`, then runs the real method."""
    real: Callable[..., Any] = getattr(store, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1] if name == "_scroll_page" else args[0])
        return real(*args, **kwargs)

    setattr(store, name, counted)


@pytest.fixture
def service(tmp_path: Path, embedder: Embedder) -> Iterator[Service]:
    settings = Settings(
        qdrant_path=str(tmp_path / "qdrant"),
        sync_mode="off",
        sync_lock_dir=str(tmp_path),
        openai_api_key=None,
        category_refresh_seconds=REFRESH_SECONDS,
    )
    products = [dataclasses.replace(p, category=None) for p in demo_products(every=9)]
    assert write_shard(tmp_path / "qdrant", embedder, settings, products) > len(products) / 2
    app = create_app(settings)
    with ServerThread(settings, app) as server, httpx.Client(base_url=server.url) as client:
        store = app.state.services.store
        service = Service(client, store, [], [], products[0].id)
        count_calls(store, "_scroll_page", service.scrolls)
        count_calls(store, "keyword_counts", service.facets)
        yield service


def test_requests_on_a_catalog_without_categories_never_scroll(service: Service) -> None:
    client = service.client
    for path in ("/recommend", "/search"):  # warm-up: the vocabulary's first read
        assert client.post(path, json={"query": "kettle", "top_k": 3}).status_code == 200
    service.scrolls.clear()

    started = time.monotonic()
    answered = 0
    # Requests until two refreshes fell due and ran (events, not a count per second).
    patience = started + 120
    while service.facets.count("category") < 2 or answered < 6:
        for path in ("/recommend", "/search"):
            r = client.post(path, json={"query": QUERIES[answered % len(QUERIES)], "top_k": 3})
            assert r.status_code == 200, r.text
            assert r.json()["products"]
            answered += 1
        assert time.monotonic() < patience, service.facets
        time.sleep(0.1)
    assert service.scrolls == [], f"{len(service.scrolls)} scrolls in {answered} requests"
    # Each refresh of the parser's two vocabularies (categories; brands, which a negation
    # may name) ran once, in the background, as a facet read.
    elapsed = time.monotonic() - started
    assert set(service.facets) == {"category", "brand"}
    for field in ("category", "brand"):
        assert service.facets.count(field) <= 2 + elapsed / REFRESH_SECONDS, service.facets
    assert service.scrolls == []

    # The counter sees real scrolls: similar products read the product's own vectors, then
    # its name (its kind comes first).
    assert client.get(f"/products/{service.product_id}/similar").status_code == 200
    assert len(service.scrolls) == 2
