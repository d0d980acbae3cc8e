"""The index the eval ranks with: the sync's chunks of a catalog, in a store of its own."""

from __future__ import annotations

import logging
from collections.abc import Sequence

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
    products: Sequence[Product], settings: Settings, embedder: Embedder, *, path: str = ":memory:"
) -> VectorStore:
    """A store holding the products' chunks, written the way the sync writes them.

    `path` ":memory:" is qdrant-client's local mode (small catalogs, tests); a folder is the
    embedded engine the service runs by default, needed at tens of thousands of chunks
    (local mode scores sparse vectors in Python).
    """
    store = open_store(settings.model_copy(update={"qdrant_path": path, "qdrant_url": None}))
    try:
        store.ensure_collection(embedder.dim)
        counts = ChunkApplier(store, embedder, chunker_for(settings, embedder)).apply(products, {})
    except BaseException:
        store.close()
        raise
    logger.info("indexed %d products as %d chunks", counts.products, counts.embedded)
    return store
