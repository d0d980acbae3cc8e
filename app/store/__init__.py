"""The vector store: one contract (`VectorStore`), two engines, one front door (`open_store`).

- `QDRANT_URL` set          → a Qdrant server through qdrant-client (several URLs: the nodes
                              of a cluster, app/store/qdrant_nodes.py).
- `QDRANT_PATH=:memory:`    → qdrant-client's in-process local mode (tests; nothing kept).
- otherwise `QDRANT_PATH`   → the embedded qdrant-edge engine in that folder (default).

Each encoder has its own index there, and a pointer names the serving one (slots.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from app.store.qdrant_nodes import QdrantNodes

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
    "server_nodes",
]


# Qdrant server versions this service is tested against (the store contract tests run on a
# 1.18.3 server); qdrant-client 1.20's calls all exist from 1.18 on.
SUPPORTED_SERVER_VERSIONS = ((1, 18), (1, 20))


def check_server_version(client: Any) -> tuple[int, int] | None:
    """Warn when the server's version is outside SUPPORTED_SERVER_VERSIONS; the (major,
    minor) found, or None when the server did not answer (it may still be starting: the
    first real call reports that)."""
    try:
        raw = str(client.info().version)
    except Exception as e:  # unreachable now is not an error yet
        logger.info("Qdrant server version not read (%s); checked on no later call", e)
        return None
    major, minor = (int(p) for p in raw.split(".")[:2])
    low, high = SUPPORTED_SERVER_VERSIONS
    if not low <= (major, minor) <= high:
        logger.warning(
            "Qdrant server %s is outside the versions this service is tested with "
            "(%d.%d to %d.%d.x); searches or the checkpoint may fail",
            raw,
            *low,
            *high,
        )
    else:
        logger.info("Qdrant server %s", raw)
    return major, minor


def server_nodes(settings: Settings) -> QdrantNodes:
    """A client per node of QDRANT_URL (its comma-separated list), server version checked.

    Raises:
        StoreError: a client could not be made or the server not reached.
    """
    from qdrant_client import QdrantClient

    from app.store.qdrant_nodes import QdrantNodes
    from app.store.qdrant_wire import rest_options

    urls = settings.qdrant_urls
    key = settings.qdrant_api_key
    grpc = settings.qdrant_transport == "grpc"
    try:
        # Our own version check (check_server_version) replaces the client's, which warns
        # about any server more than one minor version from the client.
        clients = [
            QdrantClient(
                url=url,
                api_key=key.get_secret_value() if key else None,
                check_compatibility=False,
                prefer_grpc=grpc,
                grpc_port=settings.qdrant_grpc_port,
                **rest_options(grpc),
            )
            for url in urls
        ]
        check_server_version(clients[0])
    except Exception as e:
        raise StoreError(
            f"cannot open client: {e}",
            backend="qdrant-remote",
            collection=settings.qdrant_collection,
        ) from e
    return QdrantNodes(clients, urls)


def open_store(settings: Settings, index: str | None = None) -> VectorStore:
    """Open the store the settings point at (see the module docstring for the routing).

    Args:
        index: the collection (server, `:memory:`) or shard folder (edge) to open instead
            of QDRANT_COLLECTION / QDRANT_PATH: one encoder's index (app/store/slots.py).
            The sync lease stays QDRANT_COLLECTION's, whichever index is open.

    Raises:
        StoreError: the client or engine could not be opened (StoreLockedError if the
            on-disk shard is held by another process).
    """
    collection = settings.qdrant_collection
    if settings.qdrant_url or settings.qdrant_path == ":memory:":
        from qdrant_client import QdrantClient

        from app.store.qdrant_client_store import CollectionLayout, QdrantClientStore
        from app.store.qdrant_nodes import QdrantNodes

        urls = settings.qdrant_urls
        key = settings.qdrant_api_key
        name = index or collection
        if urls:
            nodes = server_nodes(settings)
        else:
            try:
                nodes = QdrantNodes([QdrantClient(location=":memory:")], [":memory:"])
            except Exception as e:
                raise StoreError(
                    f"cannot open client: {e}", backend="qdrant-local", collection=name
                ) from e
        backend = "qdrant-remote" if urls else "qdrant-local"
        grpc = bool(urls) and settings.qdrant_transport == "grpc"
        logger.info(
            "vector store: %s %s (%s), collection %s",
            backend,
            ", ".join(urls),
            settings.qdrant_transport if urls else "in process",
            name,
        )
        layout = CollectionLayout(
            shards=settings.qdrant_shards,
            replication_factor=settings.qdrant_replication_factor,
            write_consistency=settings.qdrant_write_consistency,
        )
        return QdrantClientStore(
            nodes,
            name,
            local=not urls,
            layout=layout,
            fence_key=(
                key.get_secret_value()
                if urls and key is not None and settings.sync_lease_fence
                else None
            ),
            lease_name=collection,
            grpc=grpc,
        )

    from app.store.edge_store import EdgeStore

    path = index or settings.qdrant_path
    logger.info("vector store: qdrant-edge at %s", path)
    return EdgeStore(path, collection=collection, search_threads=settings.qdrant_search_threads)
