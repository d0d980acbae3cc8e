"""The two indexes the eval compares: the sync's chunk index and whole-product vectors."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from app.core.catalog import Product
from app.core.config import Settings
from app.embedding import Embedder
from app.store import VectorStore, open_store
from app.sync.apply import ChunkApplier
from app.sync.chunking import ProductChunker

logger = logging.getLogger(__name__)


def chunker_for(settings: Settings, embedder: Embedder) -> ProductChunker:
    """The chunker exactly as the sync builds it (same model, capacity and overlap)."""
    return ProductChunker(
        embedder.tokenizer(),
        embedder.model_id,
        min(settings.max_chunk_tokens, embedder.max_seq_tokens),
        settings.chunk_overlap_tokens,
    )


def build_chunk_index(
    products: Sequence[Product], settings: Settings, embedder: Embedder
) -> VectorStore:
    """An in-memory store holding the products' chunks, written the way the sync writes them."""
    store = open_store(settings.model_copy(update={"qdrant_path": ":memory:", "qdrant_url": None}))
    store.ensure_collection(embedder.dim)
    counts = ChunkApplier(store, embedder, chunker_for(settings, embedder)).apply(products, {})
    logger.info("indexed %d products as %d chunks", counts.products, counts.embedded)
    return store


class WholeTextIndex:
    """The baseline: one vector per product (name + description), exact numpy search."""

    def __init__(self, products: Sequence[Product], embedder: Embedder) -> None:
        self.ids = np.array([p.id for p in products], dtype=np.int64)
        self.embedder = embedder
        self.matrix = embedder.embed([f"{p.name}\n{p.description}" for p in products])

    def search(self, query: str, k: int) -> list[int]:
        scores = self.matrix @ self.embedder.embed([query])[0]
        top = np.argsort(-scores, kind="stable")[:k]
        return [int(i) for i in self.ids[top]]
