"""Distinct-product search for engines without a usable group-by.

qdrant-edge has no group-by, and qdrant-client's local `query_points_groups` scores and
materializes *every* point per query (seconds at 100k). Both instead run this: fetch the
best chunks, group them in Python the way Qdrant's own group-by does (walk best first,
one group per new product, at most `chunks_per_product` hits each, stop at `limit`
groups), widen the fetch while too few distinct products came back, then complete the
groups whose further chunks fell past the fetched window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from app.store.base import COUNT_FIELD, GROUP_FIELD, ProductHit, StoredChunkHit

# Chunks fetched per wanted chunk, and the widening factor while products are missing.
OVERFETCH = 4

# limit -> the best `limit` chunks, best first (filter and threshold already bound).
QueryFn = Callable[[int], Sequence[StoredChunkHit]]
# product ids -> for each, its best `chunks_per_product` chunks under the same filter.
FillFn = Callable[[Sequence[int]], Sequence[Sequence[StoredChunkHit]]]


def group_hits(
    hits: Iterable[StoredChunkHit], *, limit: int, chunks_per_product: int
) -> list[ProductHit]:
    """Group score-ordered hits into products; hits without an int product_id are skipped."""
    groups: dict[int, list[StoredChunkHit]] = {}
    for hit in hits:
        raw = hit.payload.get(GROUP_FIELD)
        if not isinstance(raw, int) or isinstance(raw, bool):
            continue
        chunks = groups.get(raw)
        if chunks is None:
            if len(groups) >= limit:
                continue
            chunks = groups[raw] = []
        if len(chunks) < chunks_per_product:
            chunks.append(hit)
    return [
        ProductHit(product_id=pid, score=chunks[0].score, chunks=chunks)
        for pid, chunks in groups.items()
    ]


def grouped_search(
    query: QueryFn, fill: FillFn, *, limit: int, chunks_per_product: int
) -> list[ProductHit]:
    """Exactly what a full scan grouped per product would return, for an exact engine."""
    fetch = max(limit * chunks_per_product * OVERFETCH, 16)
    while True:
        hits = query(fetch)
        truncated = len(hits) == fetch
        products = group_hits(hits, limit=limit, chunks_per_product=chunks_per_product)
        if len(products) >= limit or not truncated:
            break
        fetch *= OVERFETCH
    if not truncated:
        return products  # every matching chunk was seen: the groups are complete
    # A product's first hit is its best chunk, so only short groups can be incomplete.
    short = [i for i, p in enumerate(products) if len(p.chunks) < _wanted(p, chunks_per_product)]
    if not short:
        return products
    filled = list(products)
    completed = fill([products[i].product_id for i in short])
    for i, chunks in zip(short, completed, strict=True):
        if chunks:
            # The product keeps the score it ranked by: a fused (RRF) score of a search
            # limited to one product is a rank within that product, not comparable.
            filled[i] = ProductHit(products[i].product_id, products[i].score, list(chunks))
    return filled


def _wanted(product: ProductHit, chunks_per_product: int) -> int:
    """Chunks a complete group holds: all of the product's, up to `chunks_per_product`
    (a chunk stored without its count, before the field existed: assume more)."""
    return min(chunk_count(product, default=chunks_per_product), chunks_per_product)


def chunk_count(product: ProductHit, *, default: int) -> int:
    """How many chunks the product has, from its payload; `default` when not stored."""
    count = product.chunks[0].payload.get(COUNT_FIELD)
    if not isinstance(count, int) or isinstance(count, bool):
        return default
    return count
