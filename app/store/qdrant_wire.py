"""A search batch sent to a Qdrant server without qdrant-client's search call.

`QdrantClient.query_batch_points` deep-copies every request before it sends it (to resolve
inference objects we never use): 350 objects per request for a 384-d query vector, the
largest client-side cost of a search (profiled: 0.7 s of 4.6 s over 200 searches). Over
gRPC the batch goes through the client's transport stub; over REST, as JSON on a kept-alive
`http.client` connection of the calling thread (`RestPosts`: the client's node, headers and
timeout): httpx's request machinery was a measured share of every search (docs/
scale-out.md). Either answer is read into `WirePoint`s, not into pydantic models, which
cost more client CPU than the HTTP call (BENCHMARKS.md, "Edge shard against a Qdrant
server"). The clients' own calls keep their connections and take answers uncompressed
(`rest_options`).
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from typing import Any
from urllib.parse import urlsplit

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client import grpc as pb
from qdrant_client.conversions.conversion import GrpcToRest, RestToGrpc
from qdrant_client.http.exceptions import UnexpectedResponse

# qdrant-client turns keep-alive off for a server on localhost and asks for gzip: a new TCP
# connection and a compressed answer per request. Keep-alive with gzip was worse (46 ms a
# batch: Nagle meeting delayed ACKs on the chunked, compressed answer); keep-alive with
# plain answers took 3.5 ms. Idle connections are dropped before a server closes them.
KEEPALIVE_EXPIRY_SECONDS = 4.0
REST_KEEPALIVE = httpx.Limits(
    max_keepalive_connections=16, keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS
)
REST_HEADERS = {"accept-encoding": "identity"}
JSON_HEADERS = {"content-type": "application/json"}
# A gRPC search that has not answered by then counts as a node that cannot be reached
# (DEADLINE_EXCEEDED: app/store/qdrant_nodes.py moves to the next node).
GRPC_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class WirePoint:
    """A scored point as a gRPC answer gives it: what `stored_hit` and `dense_vector` read."""

    id: Any
    score: float
    payload: dict[str, Any]
    vector: Any = None


def query_batch(
    client: QdrantClient, collection: str, requests: list[models.QueryRequest], *, grpc: bool
) -> list[list[Any]]:
    """The scored points of each request, in one call to `client`'s server."""
    if not grpc:
        return _rest_batch(client, collection, requests)
    request = pb.QueryBatchPoints(
        collection_name=collection,
        query_points=[RestToGrpc.convert_query_request(r, collection) for r in requests],
    )
    response = client.grpc_points.QueryBatch(request, timeout=GRPC_TIMEOUT_SECONDS)
    return [[_point(p) for p in r.result] for r in response.result]


def _rest_batch(
    client: QdrantClient, collection: str, requests: list[models.QueryRequest]
) -> list[list[WirePoint]]:
    body = models.QueryRequestBatch(searches=requests).model_dump_json(
        by_alias=True,
        exclude_unset=True,
        exclude_none=True,  # as qdrant-client encodes it
    )
    posts = _POSTS.get(client)
    if posts is None:
        posts = _POSTS.setdefault(client, RestPosts(client))
    answer = posts.post(f"/collections/{collection}/points/query/batch", body.encode())
    return [
        [
            WirePoint(p["id"], p["score"], p.get("payload") or {}, p.get("vector"))
            for p in r["points"]
        ]
        for r in json.loads(answer)["result"]
    ]


class RestPosts:
    """JSON POSTs to the node of qdrant-client's REST `client` (its URL, headers and
    timeout), each thread on its own kept-alive connection."""

    def __init__(self, client: QdrantClient) -> None:
        api = client.http.client  # qdrant-client's ApiClient: `host` and its httpx.Client
        self._url = urlsplit(api.host)
        self._connect = HTTPSConnection if self._url.scheme == "https" else HTTPConnection
        self._timeout = api._client.timeout.read
        self._headers = {**api._client.headers, **REST_HEADERS, **JSON_HEADERS}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[HTTPConnection] = set()

    def post(self, path: str, body: bytes) -> bytes:
        """The answer's body; an `httpx.TransportError` when the node cannot be reached
        (app/store/qdrant_nodes.py moves to the next), `UnexpectedResponse` when it
        answers with an error."""
        url = self._url.path.rstrip("/") + path
        for attempt in range(2):
            conn, kept = self._connection()
            try:
                conn.request("POST", url, body=body, headers=self._headers)
                response = conn.getresponse()
                answer = response.read()
            except (OSError, HTTPException) as e:
                self._drop(conn)
                # A kept-alive connection the server closed fails on its next use: a search
                # is safe to send again, once, on a new one (not after a timeout).
                if kept and attempt == 0 and not isinstance(e, TimeoutError):
                    continue
                error = httpx.ReadTimeout if isinstance(e, TimeoutError) else httpx.ConnectError
                raise error(f"{self._url.geturl()}: {e!r}") from e
            self._local.used = time.monotonic()
            if response.status != 200:
                request = httpx.Request("POST", self._url.geturl().rstrip("/") + path)
                raise UnexpectedResponse.for_response(
                    httpx.Response(response.status, content=answer, request=request)
                )
            return answer
        raise AssertionError("unreachable")

    def _connection(self) -> tuple[HTTPConnection, bool]:
        """This thread's connection, and whether it was kept from an earlier call."""
        conn: HTTPConnection | None = getattr(self._local, "conn", None)
        idle = time.monotonic() - getattr(self._local, "used", 0.0)
        if conn is not None and idle < KEEPALIVE_EXPIRY_SECONDS:
            return conn, True
        if conn is not None:
            self._drop(conn)  # idle long enough that the server may be closing it
        conn = self._connect(self._url.hostname or "", self._url.port, timeout=self._timeout)
        self._local.conn = conn
        with self._lock:
            self._open.add(conn)
        return conn, False

    def _drop(self, conn: HTTPConnection) -> None:
        conn.close()
        self._local.conn = None
        with self._lock:
            self._open.discard(conn)

    def close(self) -> None:
        """Close every thread's connection (the client is closing)."""
        with self._lock:
            conns, self._open = self._open, set()
        for conn in conns:
            conn.close()


def close_posts(client: QdrantClient) -> None:
    """Close the connections `_rest_batch` opened to `client`'s node."""
    posts = _POSTS.pop(client, None)
    if posts is not None:
        posts.close()


# One per client (a node): made on its first search, gone with the client.
_POSTS: weakref.WeakKeyDictionary[QdrantClient, RestPosts] = weakref.WeakKeyDictionary()


def _point(p: pb.ScoredPoint) -> WirePoint:
    return WirePoint(
        id=GrpcToRest.convert_point_id(p.id),
        score=p.score,
        payload=GrpcToRest.convert_payload(p.payload),
        vector=GrpcToRest.convert_vectors_output(p.vectors) if p.HasField("vectors") else None,
    )


def rest_options(grpc: bool) -> dict[str, Any]:
    """QdrantClient keywords for a server client: keep-alive and plain answers over REST."""
    return {} if grpc else {"limits": REST_KEEPALIVE, "metadata": REST_HEADERS}
