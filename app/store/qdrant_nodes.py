"""The nodes of a Qdrant cluster behind one store: calls go to one node, and move to the next
when that node cannot be reached.

qdrant-client talks to one URL. Every node of a cluster serves every collection (it
forwards to the shard replicas it does not hold), so when the node a client talks to dies
the same call succeeds on another: with three nodes, replication 2 and the client's node
killed by SIGKILL, the sync and the searches went on through the next node with no failed
call (tests/sync/test_sync_cluster.py). With that node's URL alone and no load balancer in
front, every call failed (20 of 20 measured after the kill) until the node came back.

A call that fails *to reach* its node (refused, reset, timed out: an `httpx.TransportError`
under qdrant-client's exception; gRPC's UNAVAILABLE or DEADLINE_EXCEEDED) is sent again,
unchanged, to the next node in the list, each node once; the next calls stay on the node
that answered. An answer from a node, even
an error, is not a reason to move. Every call the store makes may be sent twice:
content-keyed upserts, deletes by id or filter, payload sets, a metadata replacement, the
lease's conditional upsert (the claimant's own renewal when it landed the first time).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

import grpc
import httpx
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException

from app.store.qdrant_wire import close_posts

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")


def unreachable(error: BaseException | None) -> bool:
    """Whether a client error means the node was not reached (or stopped answering)."""
    if isinstance(error, ResponseHandlingException):
        error = error.source
    if isinstance(error, grpc.RpcError) and isinstance(error, grpc.Call):  # QDRANT_TRANSPORT=grpc
        return error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    return isinstance(error, httpx.TransportError)


class QdrantNodes:
    """One client per node, in QDRANT_URL's order; `current` is the one calls go to.

    Args:
        clients: a client per node (one client: no failover, every error passes through).
        urls: the nodes' URLs, for the log.
    """

    def __init__(self, clients: Sequence[QdrantClient], urls: Sequence[str]) -> None:
        if not clients:
            raise ValueError("no Qdrant client")
        self.clients = list(clients)
        self.urls = list(urls)
        self._current = 0
        self._lock = threading.Lock()

    @property
    def current(self) -> QdrantClient:
        return self.clients[self._current]

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)`, where `fn` is a method of a node's client: sent to the
        current node, and on to the next while a node is unreachable, each node once."""
        if len(self.clients) == 1 or not any(
            c is getattr(fn, "__self__", None) for c in self.clients
        ):
            return fn(*args, **kwargs)
        name = fn.__name__  # not fn's own node: a caller may hold a client from before

        def on(client: QdrantClient) -> T:
            method: Callable[P, T] = getattr(client, name)
            return method(*args, **kwargs)

        return self.run(on)

    def run(self, fn: Callable[[QdrantClient], T]) -> T:
        """`fn(client)` with the current node's client, and again with the next node's
        while a node is unreachable, each node once."""
        node = self._current
        for attempt in range(len(self.clients)):
            try:
                return fn(self.clients[node])
            except Exception as e:
                if not unreachable(e) or attempt == len(self.clients) - 1:
                    raise
                node = self._fail_over(node, e)
        raise AssertionError("not reached: the last attempt returns or raises")

    def _fail_over(self, failed: int, error: Exception) -> int:
        """The node to try after `failed`: the next one, which becomes current, or the one
        another call already moved to."""
        with self._lock:
            if self._current == failed:
                self._current = (failed + 1) % len(self.clients)
                logger.warning(
                    "Qdrant node %s unreachable (%s); calls go to %s",
                    self.urls[failed],
                    error,
                    self.urls[self._current],
                )
            return self._current

    def close(self) -> None:
        for client in self.clients:
            close_posts(client)
            client.close()
