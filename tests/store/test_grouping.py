"""Grouping chunk hits into products (app.store.grouping), with a scripted engine."""

from __future__ import annotations

from collections.abc import Sequence

from app.store.base import StoredChunkHit
from app.store.grouping import grouped_search


def _hit(pid: int, index: int, score: float, count: int | None) -> StoredChunkHit:
    payload: dict[str, object] = {"product_id": pid, "chunk_index": index}
    if count is not None:
        payload["chunk_count"] = count
    return StoredChunkHit(f"{pid}-{index}", score, payload)


class _Engine:
    """Best chunks first; records which products the grouping asked to complete."""

    def __init__(self, chunks: list[StoredChunkHit]) -> None:
        self.chunks = sorted(chunks, key=lambda h: -h.score)
        self.filled: list[int] = []

    def query(self, n: int) -> list[StoredChunkHit]:
        return self.chunks[:n]

    def fill(self, product_ids: Sequence[int]) -> list[list[StoredChunkHit]]:
        self.filled.extend(product_ids)
        return [[h for h in self.chunks if h.payload["product_id"] == p][:3] for p in product_ids]


def _catalog(count_known: bool) -> list[StoredChunkHit]:
    # Products 0-9 have two chunks each, close together; product 10 has five, its best
    # at the top and the rest at the very bottom, past any fetched window.
    chunks = []
    for pid in range(10):
        for index in range(2):
            count = 2 if count_known else None
            chunks.append(_hit(pid, index, 0.9 - pid * 0.01 - index * 0.001, count))
    for index in range(5):
        score = 0.95 if index == 0 else 0.1 - index * 0.01
        chunks.append(_hit(10, index, score, 5 if count_known else None))
    # Filler chunks of other products so the window is truncated.
    chunks += [_hit(100 + i, 0, 0.5 - i * 0.001, 1) for i in range(200)]
    return chunks


def test_a_group_holding_all_its_products_chunks_is_not_completed_again() -> None:
    engine = _Engine(_catalog(count_known=True))
    products = grouped_search(engine.query, engine.fill, limit=3, chunks_per_product=3)
    assert [p.product_id for p in products] == [10, 0, 1]
    # 0 and 1 hold both of their two chunks; 10 holds one of five: only 10 is asked for.
    assert engine.filled == [10]
    assert [len(p.chunks) for p in products] == [3, 2, 2]


def test_without_a_count_every_short_group_is_completed() -> None:
    # Chunks stored before `chunk_count` existed: the grouping cannot know, so it asks.
    engine = _Engine(_catalog(count_known=False))
    products = grouped_search(engine.query, engine.fill, limit=3, chunks_per_product=3)
    assert [p.product_id for p in products] == [10, 0, 1]
    assert engine.filled == [10, 0, 1]
    assert [len(p.chunks) for p in products] == [3, 2, 2]
