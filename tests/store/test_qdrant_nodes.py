"""QDRANT_URL with several nodes (app/store/qdrant_nodes.py), on the session's real server and
a port where nothing listens (a real refused connection): a call moves past the node it
cannot reach and stays on the one that answered; an answer, even an error, does not move
it; with the dead node's URL alone every call fails. A search's kept-alive connection to a
server killed and restarted. The cluster itself, with a node killed mid-bootstrap:
tests/sync/test_sync_cluster.py.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from app.core.config import Settings
from app.core.ports import free_port
from app.store import ChunkPoint, StoreError, open_store
from app.store.hybrid import query_sparse
from app.store.qdrant_client_store import QdrantClientStore
from app.store.qdrant_wire import _POSTS
from tests.qdrant_cluster import QdrantNode, qdrant_own_server_fixture  # noqa: F401
from tests.qdrant_server import qdrant_server_fixture  # noqa: F401
from tests.synctools import wait_for

pytestmark = pytest.mark.server
DIM = 8
QUERY = query_sparse("kettle")


def chunk_point(pid: int) -> ChunkPoint:
    vector = np.random.default_rng(pid).normal(size=DIM).astype(np.float32)
    text = f"kettle number {pid}"
    payload = {"product_id": pid, "text": text, "chunk_index": 0, "chunk_count": 1}
    return ChunkPoint(str(uuid.UUID(int=pid)), vector, payload)


def _store(url: str, collection: str) -> QdrantClientStore:
    store = open_store(Settings(qdrant_url=url, qdrant_collection=collection))
    assert isinstance(store, QdrantClientStore)
    return store


def test_calls_move_past_an_unreachable_node_and_stay(qdrant_server: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    name = f"nodes_{uuid.uuid4().hex[:12]}"
    store = _store(f"{dead}, {qdrant_server}", name)
    try:
        store.ensure_collection(8)  # the first call: refused, then the server
        assert store.count() == 0
        assert store._client is store._nodes.clients[1]  # stayed on the node that answered
    finally:
        store.close()

    alone = _store(dead, name)
    with pytest.raises(StoreError, match="refused"):
        alone.count()
    alone.close()


def test_an_answer_even_an_error_does_not_move_the_calls(qdrant_server: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    store = _store(f"{qdrant_server},{dead}", f"missing_{uuid.uuid4().hex[:12]}")
    try:
        with pytest.raises(StoreError, match="404"):
            store.count()  # the server answers: no such collection
        assert store._client is store._nodes.clients[0]
    finally:
        store.close()


def test_a_search_after_the_server_restarted_goes_out_on_a_new_connection(
    qdrant_own_server: QdrantNode,
) -> None:
    """Searches keep their connection alive between calls (app/store/qdrant_wire.py): after
    a kill -9 and a restart on the same port, the kept one is dead and the next search
    must neither fail nor move on; closing the store closes every connection."""
    store = _store(qdrant_own_server.url, f"kept_{uuid.uuid4().hex[:12]}")
    try:
        store.ensure_collection(DIM)
        store.upsert([chunk_point(i) for i in range(1, 6)])
        vector = [1.0] + [0.0] * (DIM - 1)
        first = store.search_products(vector, limit=3, chunks_per_product=1, sparse=QUERY)
        assert len(first) == 3
        qdrant_own_server.kill()
        qdrant_own_server.start()
        wait_for("the collection loaded again", lambda: store.count() == 5, 30)
        again = store.search_products(vector, limit=3, chunks_per_product=1, sparse=QUERY)
        assert [h.product_id for h in again] == [h.product_id for h in first]
        posts = _POSTS[store._client]
        assert len(posts._open) == 1  # the dead one dropped, one new
    finally:
        store.close()
    assert not posts._open
