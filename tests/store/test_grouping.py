"""Grouping chunk hits into products (app.store.grouping), with a scripted engine."""

from __future__ import annotations

from collections.abc import Sequence

from app.store.base import StoredChunkHit
from app.store.grouping import group_hits, grouped_search


def _hit(pid: int, index: int, score: float, count: int | None) -> StoredChunkHit:
    payload: dict[str, object] = {"product_id": pid, "chunk_index": index}
    if count is not None:
        payload["chunk_count"] = count
    return StoredChunkHit(f"{pid}-{index}", score, payload)


class _Engine:
    """Each search's chunks, best first; records every call and which products the
    grouping asked to complete."""

    def __init__(self, *catalogs: list[StoredChunkHit]) -> None:
        self.catalogs = [sorted(chunks, key=lambda h: -h.score) for chunks in catalogs]
        self.queries: list[list[tuple[int, int]]] = []
        self.filled: list[tuple[int, int]] = []

    def query(self, wanted: Sequence[tuple[int, int]]) -> list[list[StoredChunkHit]]:
        self.queries.append(list(wanted))
        return [self.catalogs[i][:n] for i, n in wanted]

    def fill(self, wanted: Sequence[tuple[int, int]]) -> list[list[StoredChunkHit]]:
        self.filled.extend(wanted)
        return [
            [h for h in self.catalogs[i] if h.payload["product_id"] == p][:3] for i, p in wanted
        ]


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
    (products,) = grouped_search(engine.query, engine.fill, limits=[3], chunks_per_product=3)
    assert [p.product_id for p in products] == [10, 0, 1]
    # 0 and 1 hold both of their two chunks; 10 holds one of five: only 10 is asked for.
    assert engine.filled == [(0, 10)]
    assert [len(p.chunks) for p in products] == [3, 2, 2]


def test_without_a_count_every_short_group_is_completed() -> None:
    # Chunks stored before `chunk_count` existed: the grouping cannot know, so it asks.
    engine = _Engine(_catalog(count_known=False))
    (products,) = grouped_search(engine.query, engine.fill, limits=[3], chunks_per_product=3)
    assert [p.product_id for p in products] == [10, 0, 1]
    assert engine.filled == [(0, 10), (0, 0), (0, 1)]
    assert [len(p.chunks) for p in products] == [3, 2, 2]


def test_searches_go_together_one_engine_call_per_round() -> None:
    # Three shelves: the catalog above; one whose products each fill many chunks, so its
    # first window holds too few of them and widens; one small enough to be seen whole.
    crowded = [
        _hit(pid, i, 0.9 - pid * 0.01 - i * 0.0001, 40) for pid in range(4) for i in range(40)
    ]
    small = [_hit(pid, 0, 0.5 - pid * 0.1, 1) for pid in range(2)]
    engine = _Engine(_catalog(count_known=True), crowded, small)
    pages = grouped_search(engine.query, engine.fill, limits=[3, 2, 3], chunks_per_product=3)

    assert [[p.product_id for p in page] for page in pages] == [[10, 0, 1], [0, 1], [0, 1]]
    # Round one asks every shelf at once; round two widens only the crowded one.
    assert engine.queries == [[(0, 36), (1, 24), (2, 36)], [(1, 96)]]
    # One fill for every shelf's short groups: the catalog's product 10 alone (the
    # crowded products' first three chunks all lie in the window, the small shelf was
    # seen whole).
    assert engine.filled == [(0, 10)]
    assert [len(p.chunks) for p in pages[0]] == [3, 2, 2]
    assert [len(p.chunks) for p in pages[1]] == [3, 3]


def test_equal_scores_come_in_product_id_order_whatever_the_engines_order() -> None:
    # Five products share the score of the second best (a BM25 score every name with the
    # same words gets): the page of three holds the best and the two lowest ids among the
    # tied, in id order, however the engine ordered them (two builds of one catalog differ).
    best = _hit(50, 0, 0.9, 1)
    tied = [_hit(pid, 0, 0.7, 1) for pid in (41, 7, 23, 3, 12)]
    below = _hit(1, 0, 0.5, 1)
    pages = set()
    for order in (tied, tied[::-1], tied[2:] + tied[:2]):
        page = group_hits([best, *order, below], limit=3, chunks_per_product=2)
        pages.add(tuple(p.product_id for p in page))
    assert pages == {(50, 3, 7)}
    # Below the limit every tied product is kept, in id order, then the lower scores.
    page = group_hits([best, *tied, below], limit=10, chunks_per_product=2)
    assert [p.product_id for p in page] == [50, 3, 7, 12, 23, 41, 1]
