"""The vector store: one contract (`VectorStore`), two engines, one front door (`open_store`).

- `QDRANT_URL` set          → a Qdrant server through qdrant-client.
- `QDRANT_PATH=:memory:`    → qdrant-client's in-process local mode (tests; nothing kept).
- otherwise `QDRANT_PATH`   → the embedded qdrant-edge engine in that folder (default).
"""

from __future__ import annotations

import logging

from app.core.config import Settings
from app.store.base import (
    ChunkPoint,
    PayloadUpdate,
    ProductHit,
    SearchFilter,
    StoredChunk,
    StoredChunkHit,
    StoreDimensionError,
    StoreError,
    StoreLockedError,
    VectorStore,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ChunkPoint",
    "PayloadUpdate",
    "ProductHit",
    "SearchFilter",
    "StoreDimensionError",
    "StoreError",
    "StoreLockedError",
    "StoredChunk",
    "StoredChunkHit",
    "VectorStore",
    "open_store",
]


def open_store(settings: Settings) -> VectorStore:
    """Open the store the settings point at (see the module docstring for the routing).

    Raises:
        StoreError: the client or engine could not be opened (StoreLockedError if the
            on-disk shard is held by another process).
    """
    collection = settings.qdrant_collection
    if settings.qdrant_url or settings.qdrant_path == ":memory:":
        from qdrant_client import QdrantClient

        from app.store.qdrant_client_store import QdrantClientStore

        remote = bool(settings.qdrant_url)
        backend = "qdrant-remote" if remote else "qdrant-local"
        try:
            if remote:
                key = settings.qdrant_api_key
                client = QdrantClient(
                    url=settings.qdrant_url, api_key=key.get_secret_value() if key else None
                )
            else:
                client = QdrantClient(location=":memory:")
        except Exception as e:
            raise StoreError(
                f"cannot open client: {e}", backend=backend, collection=collection
            ) from e
        logger.info("vector store: %s, collection %s", backend, collection)
        return QdrantClientStore(client, collection, local=not remote)

    from app.store.edge_store import EdgeStore

    logger.info("vector store: qdrant-edge at %s", settings.qdrant_path)
    return EdgeStore(
        settings.qdrant_path, collection=collection, search_threads=settings.qdrant_search_threads
    )
