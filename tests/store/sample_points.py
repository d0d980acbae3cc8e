"""The points every store test writes: 140 chunks, 16-d vectors from a fixed seed.

40 products (ids 0..39) with 1-4 chunks each (1 + id % 4), categories cycling audio,
shoes, kitchen, none; plus product 99 (DOMINANT, audio, 50.0) with 40 chunks clustered
around one direction: it crowds a plain top-k, forcing the engines to widen their fetch.
Even products carry `chunk_count`, odd ones leave it out, as chunks stored before the
field existed do, so searches run both the skip and the fill (app.store.grouping). Names
cycle three styles of headphones (`name`).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from app.store import ChunkPoint

DIM = 16
CATEGORIES = ["audio", "shoes", "kitchen", None]
DOMINANT = 99
# Names by product id % 3: words for the name exclusions (SearchFilter.exclude_words).
STYLES = ["Over-Ear Headphones", "Open-Ear Headphone", "Ear Buds"]


def name(pid: int) -> str:
    return f"Product {pid} {STYLES[pid % 3]}"


def _chunk_id(product_id: int, index: int, text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{product_id}/{index}/{text}"))


def point(
    pid: int,
    index: int,
    vector: Any,
    *,
    category: str | None,
    price: float | None,
    count: int | None = None,
) -> ChunkPoint:
    text = f"product {pid} chunk {index}"
    payload: dict[str, Any] = {
        "product_id": pid,
        "chunk_hash": f"h{pid}-{index}",
        "chunk_index": index,
        **({"chunk_count": count} if count is not None else {}),
        "text": text,
        "name": name(pid),
        "category": category,
        "brand": "acme" if pid % 2 else None,
        "price": price,
        "ts": 1_700_000_000_000 + pid,
    }
    return ChunkPoint(id=_chunk_id(pid, index, text), vector=vector, payload=payload)


def make_points(seed: int = 7) -> list[ChunkPoint]:
    rng = np.random.default_rng(seed)
    points = []
    for pid in range(40):
        category = CATEGORIES[pid % len(CATEGORIES)]
        price = None if pid % 9 == 0 else round(float(rng.uniform(5, 200)), 2)
        count = 1 + pid % 4
        for index in range(count):
            vector = rng.normal(size=DIM).astype(np.float32)
            known = count if pid % 2 == 0 else None
            points.append(point(pid, index, vector, category=category, price=price, count=known))
    center = np.ones(DIM, dtype=np.float32)
    for index in range(40):
        vector = center + rng.normal(scale=0.05, size=DIM).astype(np.float32)
        points.append(point(DOMINANT, index, vector, category="audio", price=50.0, count=40))
    return points
