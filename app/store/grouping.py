"""Distinct-product grouping of chunk hits, for engines without a native group-by.

Mirrors Qdrant's own `query_points_groups`: walk hits best first, open a group per new
product, keep at most `chunks_per_product` hits per group, stop at `limit` groups.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.store.base import GROUP_FIELD, ProductHit, StoredChunkHit


def group_hits(
    hits: Iterable[StoredChunkHit], *, limit: int, chunks_per_product: int
) -> list[ProductHit]:
    """Group score-ordered hits into products; hits without a product_id are skipped."""
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
