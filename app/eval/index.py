"""The index the eval ranks with: the sync's chunks of a catalog, in a store of its own."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from tokenizers import Tokenizer

from app.core.catalog import Product
from app.core.config import Settings
from app.embedding import Embedder
from app.store import VectorStore, open_store
from app.sync.apply import ChunkApplier
from app.sync.chunking import ProductChunk, ProductChunker
from app.sync.engine import PRODUCT_BATCH
from app.sync.progress import Progress
from app.sync.state import SyncCheckpoint

logger = logging.getLogger(__name__)


def chunker_for(
    settings: Settings, embedder: Embedder, record: list[tuple[int, str]] | None = None
) -> ProductChunker:
    """The chunker exactly as the sync builds it (same model, capacity and overlap); with
    `record`, one that also appends each chunk it cuts there as (product id, text)."""
    tokenizer, model_id = embedder.tokenizer(), embedder.model_id
    capacity = min(settings.max_chunk_tokens, embedder.max_seq_tokens)
    if record is None:
        return ProductChunker(tokenizer, model_id, capacity, settings.chunk_overlap_tokens)
    return _RecordingChunker(tokenizer, model_id, capacity, settings.chunk_overlap_tokens, record)


class _RecordingChunker(ProductChunker):
    """What app.learn.heldout ranks exactly from, so long descriptions are cut once."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        model_id: str,
        max_tokens: int,
        overlap_tokens: int,
        record: list[tuple[int, str]],
    ) -> None:
        super().__init__(tokenizer, model_id, max_tokens, overlap_tokens)
        self.record = record

    def chunk(self, product: Product) -> list[ProductChunk]:
        chunks = super().chunk(product)
        self.record.extend((product.id, c.text) for c in chunks)
        return chunks


def open_chunk_index(settings: Settings, embedder: Embedder, path: str) -> VectorStore:
    """A store `build_chunk_index` left in the folder `path`, opened again as it was."""
    store = open_store(settings.model_copy(update={"qdrant_path": path, "qdrant_url": None}))
    try:
        store.ensure_collection(embedder.dim)
    except BaseException:
        store.close()
        raise
    return store


def build_chunk_index(
    products: Sequence[Product],
    settings: Settings,
    embedder: Embedder,
    *,
    path: str = ":memory:",
    record: list[tuple[int, str]] | None = None,
) -> VectorStore:
    """A store holding the products' chunks, written the way the sync writes them.

    `path` ":memory:" is qdrant-client's local mode (small catalogs, tests); a folder is the
    embedded engine the service runs by default, needed at tens of thousands of chunks
    (local mode scores sparse vectors in Python). `record`, if given, receives every chunk
    as (product id, text).
    """
    store = open_store(settings.model_copy(update={"qdrant_path": path, "qdrant_url": None}))
    try:
        store.ensure_collection(embedder.dim)
        applier = ChunkApplier(store, embedder, chunker_for(settings, embedder, record))
        # In the sync's batches, so a catalog of tens of thousands logs progress and an ETA.
        progress = Progress(logger, "eval index", len(products))
        chunks = 0
        for start in range(0, len(products), PRODUCT_BATCH):
            batch = products[start : start + PRODUCT_BATCH]
            chunks += applier.apply(batch, {}).embedded
            progress.advance(len(batch))
    except BaseException:
        store.close()
        raise
    logger.info("indexed %d products as %d chunks", len(products), chunks)
    return store


def seal_chunk_index(
    store: VectorStore,
    settings: Settings,
    embedder: Embedder,
    table_path: str,
    *,
    unindexed: int = 0,
    learned_model: str = "",
) -> None:
    """Save the checkpoint a syncer leaves after indexing what `store` holds, so a read
    replica (`SYNC_MODE=off`) serves it; `table_path` stands for the table there is none of."""
    instant = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
    checkpoint = SyncCheckpoint(
        completed=instant,
        requested=instant,
        table_path=table_path,
        signature=chunker_for(settings, embedder).signature,
        chunks=store.count(),
        unindexed=unindexed,
        model_id=embedder.model_id,
        embedding_model=settings.embedding_model,
        learned_model=learned_model,
    )
    store.save_state(checkpoint.to_dict())
