"""Distinct-product search for engines without a usable group-by.

qdrant-edge has no group-by, qdrant-client's local `query_points_groups` scores and
materializes *every* point per query (seconds at 100k), and a server's group-by takes one
search per request (the shelves are a batch of them). All three run this instead: fetch the
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

# (search, limit) pairs -> for each, its search's best `limit` chunks, best first (filter and
# threshold already bound), from one engine call.
QueryFn = Callable[[Sequence[tuple[int, int]]], Sequence[Sequence[StoredChunkHit]]]
# (search, product id) pairs -> for each, the product's best `chunks_per_product` chunks
# under its search's filter, from one engine call.
FillFn = Callable[[Sequence[tuple[int, int]]], Sequence[Sequence[StoredChunkHit]]]


def group_hits(
    hits: Iterable[StoredChunkHit], *, limit: int, chunks_per_product: int
) -> list[ProductHit]:
    """Group score-ordered hits into products; hits without an int product_id are skipped.

    Products of equal score come in product id order, and a product tied with the last one
    the limit admits competes for its place by id too: engines return equal scores in their
    storage order, so two builds of one catalog (a title sold in several sizes, a BM25 score
    shared by every name with the same words) ranked it apart (BENCHMARKS.md, "Ranking
    quality")."""
    groups: dict[int, list[StoredChunkHit]] = {}
    last = 0.0  # the score of the limit-th product once the limit is reached
    for hit in hits:
        raw = hit.payload.get(GROUP_FIELD)
        if not isinstance(raw, int) or isinstance(raw, bool):
            continue
        chunks = groups.get(raw)
        if chunks is None:
            if len(groups) >= limit and hit.score != last:
                continue
            chunks = groups[raw] = []
            if len(groups) == limit:
                last = hit.score
        if len(chunks) < chunks_per_product:
            chunks.append(hit)
    products = [
        ProductHit(product_id=pid, score=chunks[0].score, chunks=chunks)
        for pid, chunks in groups.items()
    ]
    products.sort(key=lambda p: (-p.score, p.product_id))
    return products[:limit]


def grouped_search(
    query: QueryFn, fill: FillFn, *, limits: Sequence[int], chunks_per_product: int
) -> list[list[ProductHit]]:
    """For each search (its page of `limits[i]` products), exactly what a full scan grouped
    per product would return, for an exact engine. The searches go together: one engine
    call per round (a round trip to a server), not one per search."""
    fetch = [max(limit * chunks_per_product * OVERFETCH, 16) for limit in limits]
    pages: list[list[ProductHit]] = [[] for _ in limits]
    truncated = [False] * len(limits)
    pending = list(range(len(limits)))
    while pending:
        answers = query([(i, fetch[i]) for i in pending])
        widen = []
        for i, hits in zip(pending, answers, strict=True):
            truncated[i] = len(hits) == fetch[i]
            pages[i] = group_hits(hits, limit=limits[i], chunks_per_product=chunks_per_product)
            if len(pages[i]) < limits[i] and truncated[i]:
                fetch[i] *= OVERFETCH
                widen.append(i)
        pending = widen
    # A search whose every matching chunk was seen has complete groups; elsewhere a
    # product's first hit is its best chunk, so only short groups can be incomplete.
    short = [
        (i, at)
        for i, page in enumerate(pages)
        if truncated[i]
        for at, product in enumerate(page)
        if len(product.chunks) < _wanted(product, chunks_per_product)
    ]
    if not short:
        return pages
    completed = fill([(i, pages[i][at].product_id) for i, at in short])
    for (i, at), chunks in zip(short, completed, strict=True):
        if chunks:
            # The product keeps the score it ranked by: a fused (RRF) score of a search
            # limited to one product is a rank within that product, not comparable.
            product = pages[i][at]
            pages[i][at] = ProductHit(product.product_id, product.score, list(chunks))
    return pages


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
