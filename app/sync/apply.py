"""Make the store hold exactly the chunks of a set of product rows, spending embeddings only
on chunks whose content is new."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.catalog import Product, payload_fields
from app.embedding import Embedder
from app.store.base import ChunkPoint, PayloadUpdate, SparseRewrite, StoredChunk, VectorStore
from app.sync.chunk_vectors import ChunkVectorSource
from app.sync.chunking import SPARSE_FIELD, ProductChunk, ProductChunker, sparse_marker

logger = logging.getLogger(__name__)

# Points per store round-trip: big enough to amortise, small enough to bound a failed call.
UPSERT_BATCH = 256
# Chunks per embed call. The encoder sorts a call's texts by length and runs its batches
# side by side, so each call ends on one core while the other finishes the last batch;
# bigger calls pad less and pay that tail less often (a product batch is ~1 call).
EMBED_GROUP = 1024


@dataclass
class ApplyCounts:
    products: int = 0
    embedded: int = 0
    loaded: int = 0  # new chunks whose vector came from the Spark job's table, not the model
    skipped: int = 0  # chunks already present with the same content (not re-embedded)
    payload_updates: int = 0  # kept chunks whose product fields (e.g. price) changed
    sparse_rewrites: int = 0  # kept chunks whose BM25 vector was in an older format
    deleted: int = 0

    def add(self, other: ApplyCounts) -> None:
        self.products += other.products
        self.embedded += other.embedded
        self.loaded += other.loaded
        self.skipped += other.skipped
        self.payload_updates += other.payload_updates
        self.sparse_rewrites += other.sparse_rewrites
        self.deleted += other.deleted


class ChunkApplier:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        chunker: ProductChunker,
        vectors: ChunkVectorSource | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.vectors = vectors

    def apply(
        self, products: Sequence[Product], existing: dict[int, list[StoredChunk]]
    ) -> ApplyCounts:
        """Bring `products` to their current chunks. `existing` maps id -> stored chunks.

        Order matters for readers: new chunks are written before old ones are deleted, so a
        product being edited never vanishes from search mid-cycle.
        """
        counts = ApplyCounts(products=len(products))
        to_embed: list[tuple[ProductChunk, Product]] = []
        updates: list[PayloadUpdate] = []
        stale: list[str] = []
        resparse: list[SparseRewrite] = []
        marker = sparse_marker()
        # Kept chunks whose position or count changed, by their new values: one update per
        # distinct position, not one per chunk (a payload-format upgrade moves them all).
        moved: dict[tuple[tuple[str, int], ...], list[str]] = {}
        for product in products:
            old = {c.id: c for c in existing.get(product.id, [])}
            fields = payload_fields(product)
            kept_with_new_fields: list[str] = []
            for chunk in self.chunker.chunk(product):
                held = old.pop(chunk.point_id, None)
                if held is None:
                    to_embed.append((chunk, product))
                    continue
                counts.skipped += 1
                if held.payload.get(SPARSE_FIELD) != marker[SPARSE_FIELD]:
                    # Same text, BM25 vector of another format: rewritten, not re-embedded.
                    resparse.append(SparseRewrite(chunk.point_id, chunk.text, product.name))
                if any(held.payload.get(k) != v for k, v in fields.items()):
                    kept_with_new_fields.append(chunk.point_id)
                position = tuple(chunk.position.items())
                if any(held.payload.get(k) != v for k, v in position):
                    # Same text, new position or count: another chunk was removed or added.
                    moved.setdefault(position, []).append(chunk.point_id)
            if kept_with_new_fields:
                updates.append(PayloadUpdate(kept_with_new_fields, dict(fields)))
            stale.extend(old)
        updates.extend(PayloadUpdate(ids, dict(position)) for position, ids in moved.items())

        counts.loaded = self._embed_and_upsert(to_embed)
        counts.embedded = len(to_embed) - counts.loaded
        if resparse:
            # The vectors first, then the marker: a crash between leaves them to redo.
            self.store.rewrite_sparse(resparse)
            updates.append(PayloadUpdate([c.id for c in resparse], dict(marker)))
            counts.sparse_rewrites = len(resparse)
        self.store.set_payloads(updates)
        counts.payload_updates = sum(len(u.ids) for u in updates) - counts.sparse_rewrites
        if stale:
            self.store.delete(stale)
        counts.deleted = len(stale)
        return counts

    def _embed_and_upsert(self, items: list[tuple[ProductChunk, Product]]) -> int:
        """Write `items` with their vectors; returns how many were loaded, not embedded."""
        loaded = 0
        for group_start in range(0, len(items), EMBED_GROUP):
            group = items[group_start : group_start + EMBED_GROUP]
            found = (
                self.vectors.lookup([chunk.chunk_hash for chunk, _ in group])
                if self.vectors
                else {}
            )
            todo = [i for i, (chunk, _) in enumerate(group) if chunk.chunk_hash not in found]
            if found:
                vectors = np.empty((len(group), self.embedder.dim), dtype=np.float32)
                for i, (chunk, _) in enumerate(group):
                    if chunk.chunk_hash in found:
                        vectors[i] = found[chunk.chunk_hash]
                if todo:
                    vectors[todo] = self.embedder.embed([group[i][0].text for i in todo])
                loaded += len(group) - len(todo)
            else:
                vectors = self.embedder.embed([chunk.text for chunk, _ in group])
            for start in range(0, len(group), UPSERT_BATCH):
                self.store.upsert(
                    [
                        ChunkPoint(chunk.point_id, vectors[i], chunk.payload(product))
                        for i, (chunk, product) in enumerate(
                            group[start : start + UPSERT_BATCH], start
                        )
                    ]
                )
        return loaded


def group_by_product(chunks: Iterable[StoredChunk]) -> dict[int, list[StoredChunk]]:
    out: dict[int, list[StoredChunk]] = {}
    for c in chunks:
        out.setdefault(c.product_id, []).append(c)
    return out
