"""A search batch sent to a Qdrant server straight through qdrant-client's transport stubs.

`QdrantClient.query_batch_points` deep-copies every request before it sends it (to resolve
inference objects we never use): 350 objects per request for a 384-d query vector, the
largest client-side cost of a search (profiled: 0.7 s of 4.6 s over 200 searches). The
stubs the client exposes send the same requests without it. Either transport's answer is
read into `WirePoint`s, not into pydantic models, which cost more client CPU than the HTTP
call (BENCHMARKS.md, "Edge shard against a Qdrant server"): over REST the batch goes out
through the client's own httpx client (its node, headers, keep-alive and timeout) and the
JSON answer is read as dicts. The clients keep their connections and take answers
uncompressed (`rest_options`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client import grpc as pb
from qdrant_client.conversions.conversion import GrpcToRest, RestToGrpc
from qdrant_client.http.exceptions import UnexpectedResponse

# qdrant-client turns keep-alive off for a server on localhost and asks for gzip: a new TCP
# connection and a compressed answer per request. Keep-alive with gzip was worse (46 ms a
# batch: Nagle meeting delayed ACKs on the chunked, compressed answer); keep-alive with
# plain answers took 3.5 ms. Idle connections are dropped before a server closes them.
REST_KEEPALIVE = httpx.Limits(max_keepalive_connections=16, keepalive_expiry=4.0)
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
    api = client.http.client  # qdrant-client's ApiClient: `host` and its httpx.Client
    body = models.QueryRequestBatch(searches=requests).model_dump_json(
        by_alias=True,
        exclude_unset=True,
        exclude_none=True,  # as qdrant-client encodes it
    )
    # An httpx.TransportError here is a node that cannot be reached (app/store/qdrant_nodes.py).
    response = api._client.post(
        f"{api.host.rstrip('/')}/collections/{collection}/points/query/batch",
        content=body,
        headers=JSON_HEADERS,
    )
    if response.status_code != 200:
        raise UnexpectedResponse.for_response(response)
    return [
        [
            WirePoint(p["id"], p["score"], p.get("payload") or {}, p.get("vector"))
            for p in r["points"]
        ]
        for r in json.loads(response.content)["result"]
    ]


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
