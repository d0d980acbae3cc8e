"""Make the store hold exactly the chunks of a set of product rows, spending embeddings only
on chunks whose content is new."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core.catalog import Product, payload_fields
from app.embedding import Embedder
from app.store.base import PayloadUpdate, StoredChunk, VectorStore
from app.sync.chunking import ProductChunker
from app.sync.pipeline import EmbedPipeline

logger = logging.getLogger(__name__)

# Points per store round-trip: big enough to amortise, small enough to bound a failed call.
UPSERT_BATCH = 256
# Chunks handed to the encoder at a time while the rest of the products are still being
# chunked: small enough that embedding starts early, large enough to sort by length well.
EMBED_GROUP = 128


@dataclass
class ApplyCounts:
    products: int = 0
    embedded: int = 0
    skipped: int = 0  # chunks already present with the same content (not re-embedded)
    payload_updates: int = 0  # kept chunks whose product fields (e.g. price) changed
    deleted: int = 0

    def add(self, other: ApplyCounts) -> None:
        self.products += other.products
        self.embedded += other.embedded
        self.skipped += other.skipped
        self.payload_updates += other.payload_updates
        self.deleted += other.deleted


class ChunkApplier:
    def __init__(self, store: VectorStore, embedder: Embedder, chunker: ProductChunker) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker

    def apply(
        self, products: Sequence[Product], existing: dict[int, list[StoredChunk]]
    ) -> ApplyCounts:
        """Bring `products` to their current chunks. `existing` maps id -> stored chunks.

        Order matters for readers: new chunks are written before old ones are deleted, so a
        product being edited never vanishes from search mid-cycle.
        """
        counts = ApplyCounts(products=len(products))
        updates: list[PayloadUpdate] = []
        stale: list[str] = []
        # Chunks are embedded and written on background threads while this one keeps
        # chunking; leaving the block waits for every write (or raises the first failure).
        with EmbedPipeline(self.embedder, self.store, EMBED_GROUP, UPSERT_BATCH) as pipeline:
            for product in products:
                stale.extend(self._diff(product, existing, pipeline, updates, counts))
        counts.embedded = pipeline.submitted
        self.store.set_payloads(updates)
        counts.payload_updates = sum(len(u.ids) for u in updates)
        if stale:
            self.store.delete(stale)
        counts.deleted = len(stale)
        return counts

    def _diff(
        self,
        product: Product,
        existing: dict[int, list[StoredChunk]],
        pipeline: EmbedPipeline,
        updates: list[PayloadUpdate],
        counts: ApplyCounts,
    ) -> list[str]:
        """Send `product`'s new chunks to `pipeline`, note payload updates of the kept ones;
        returns the ids of its stored chunks that no longer exist."""
        old = {c.id: c for c in existing.get(product.id, [])}
        fields = payload_fields(product)
        kept_with_new_fields: list[str] = []
        for chunk in self.chunker.chunk(product):
            held = old.pop(chunk.point_id, None)
            if held is None:
                pipeline.add(chunk, product)
                continue
            counts.skipped += 1
            if any(held.payload.get(k) != v for k, v in fields.items()):
                kept_with_new_fields.append(chunk.point_id)
            if held.payload.get("chunk_index") != chunk.chunk_index:
                # Same text, new position: an earlier chunk was removed or added.
                updates.append(PayloadUpdate([chunk.point_id], {"chunk_index": chunk.chunk_index}))
        if kept_with_new_fields:
            updates.append(PayloadUpdate(kept_with_new_fields, dict(fields)))
        return list(old)


def group_by_product(chunks: Iterable[StoredChunk]) -> dict[int, list[StoredChunk]]:
    out: dict[int, list[StoredChunk]] = {}
    for c in chunks:
        out.setdefault(c.product_id, []).append(c)
    return out
