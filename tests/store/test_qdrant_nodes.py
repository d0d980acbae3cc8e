"""QDRANT_URL with several nodes (app/store/qdrant_nodes.py), on the session's real server and
a port where nothing listens (a real refused connection): a call moves past the node it
cannot reach and stays on the one that answered; an answer, even an error, does not move
it; with the dead node's URL alone every call fails. The cluster itself, with a node
killed mid-bootstrap: tests/sync/test_sync_cluster.py.
"""

from __future__ import annotations

import uuid

import pytest

from app.core.config import Settings
from app.store import StoreError, open_store
from app.store.qdrant_client_store import QdrantClientStore
from tests.qdrant_server import free_port, qdrant_server_fixture  # noqa: F401

pytestmark = pytest.mark.server


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
