"""A replica reads the catalog's words before it listens: over a catalog whose names take
seconds to read, its first answer is mended as every later one is (a replica that listened
first answered "cieling fan" as typed while its peers searched "ceiling fan")."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import numpy as np

from app.core.catalog import Product
from app.core.config import Settings
from app.embedding import Embedder
from app.eval.index import chunker_for
from app.store import ChunkPoint, open_store
from tests.live_server import ServerThread

# Names enough that reading them takes about a second here (what the test needs the
# first request to race); vectors are random: only the names are read.
PRODUCTS = 30_000
KINDS = ("Ceiling Fan", "Garden Hose", "Desk Lamp", "Storage Shelf", "Door Mat")


def test_the_first_answer_over_a_large_catalog_is_mended(
    embedder: Embedder, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=str(tmp_path),
        qdrant_path=str(tmp_path / "qdrant"),
        sync_mode="off",
        openai_api_key=None,
        record_impressions=False,
    )
    store = open_store(settings)
    try:
        store.ensure_collection(embedder.dim)
        chunker = chunker_for(settings, embedder)
        rng = np.random.default_rng(7)
        points = []
        for i in range(PRODUCTS):
            name = f"Acme {KINDS[i % len(KINDS)]} Model {i}"
            product = Product(i + 1, 1, name, "", "home", "Acme", 10.0 + i % 90)
            for chunk in chunker.chunk(product):
                vector = rng.normal(size=embedder.dim).astype(np.float32)
                points.append(ChunkPoint(chunk.point_id, vector, chunk.payload(product)))
        for start in range(0, len(points), 5_000):
            store.upsert(points[start : start + 5_000])
    finally:
        store.close()
    started = time.monotonic()
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        first = c.post("/search", json={"query": "cieling fan", "top_k": 3})
        listened = time.monotonic() - started
        later = c.post("/search", json={"query": "cieling fan", "top_k": 3})
    assert first.status_code == 200, first.text
    assert first.json()["search_text"] == later.json()["search_text"] == "ceiling fan", (
        first.json()["search_text"],
        f"listening {listened:.1f}s after the start",
    )
