"""VectorStore on qdrant-client: a Qdrant server or cluster, or the in-process local mode.

The sync checkpoint lives in the collection's own metadata (`sync_state`), so it has the
vectors' lifetime exactly: dropping the collection drops it, an in-memory client loses
both, a server keeps both. (A companion collection outlived a dropped products collection,
and the next cycle resumed over an empty store.) Collection metadata needs Qdrant 1.16+.

A syncer holding the sync lease sends its writes (points, payloads, the checkpoint) through a
second client whose token is fenced by the lease point (`fence`, app/store/fence.py): the
server refuses them once another syncer took the lease over. Reads keep the first client.

qdrant-client's local mode has no locking of its own: a search while the sync writes fails
intermittently (numpy arrays resized under the reader). Every local call is serialised
here; a server does its own concurrency.

On a cluster, the store holds a client per node (app/store/qdrant_nodes.py: a call moves
to the next node when its node is unreachable) and creates its collections with the
configured `CollectionLayout`: the products collection sharded and replicated, the lease's
one-shard collection replicated alike, so a node's death loses neither. The checkpoint is
collection metadata, which every node keeps through the cluster's consensus.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, ParamSpec, TypeVar

from qdrant_client import QdrantClient, models

from app.store.base import (
    GROUP_FIELD,
    ChunkPoint,
    PayloadUpdate,
    ProductHit,
    StoreDimensionError,
    StoreError,
    StoreFencedError,
    StoreSchemaError,
)
from app.store.core import Branch, Request, StoreCore, stored_hit
from app.store.fence import fence_token
from app.store.hybrid import SPARSE_VECTOR, FusionSpec, SparseVec
from app.store.qdrant_nodes import QdrantNodes
from app.store.qdrant_wire import query_batch

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

_STATE_KEY = "sync_state"
# The sync lease's one point (app/sync/lease.py), in a companion collection without vectors.
_LEASE_SUFFIX = "__sync_lease"
_LEASE_POINT = "5e1f0000-0000-4000-8000-000000000001"
# How long a claim waits for the lease collection's new replicas to finish initializing.
REPLICA_INIT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class CollectionLayout:
    """How a cluster holds a collection the store creates (None: the server's default)."""

    shards: int | None = None
    replication_factor: int | None = None
    write_consistency: int | None = None

    def create_args(self, *, shards: int | None = None) -> dict[str, Any]:
        """create_collection's keywords; `shards` overrides the layout's (the lease: 1)."""
        args = {
            "shard_number": shards or self.shards,
            "replication_factor": self.replication_factor,
            "write_consistency_factor": self.write_consistency,
        }
        return {k: v for k, v in args.items() if v is not None}


class QdrantClientStore(StoreCore):
    """Args:
    client: an open QdrantClient (remote or local), or a cluster's nodes.
    collection: collection name; the checkpoint is its metadata, the lease a companion.
    local: True for qdrant-client's local mode, which has no payload indexes.
    native_groups: use `query_points_groups` for a search alone. Default: only for a
        server; local mode's version scores and copies every point per query (~0.35 s at
        5k points), so it over-fetches and groups in Python instead (app.store.grouping),
        like the edge, and so does a batch of searches on a server.
    layout: shards, replication and write consistency of the collections it creates.
    fence_key: the servers' API key, for a fenced writer (`fence`); without a key the
        server cannot check a fence.
    lease_name: the collection whose companion keeps the sync lease (and names the fence);
        default `collection`. QDRANT_COLLECTION for every encoder's index (slots.py).
    grpc: the clients were made with prefer_grpc (QDRANT_TRANSPORT=grpc): searches go
        through their gRPC stub (app/store/qdrant_wire.py).
    """

    _SCHEMA_TYPES: ClassVar[dict[str, Any]] = {
        "integer": models.PayloadSchemaType.INTEGER,
        "keyword": models.PayloadSchemaType.KEYWORD,
        "float": models.PayloadSchemaType.FLOAT,
        # As the edge shard's (app/store/edge_store.py): whole lowercase words, no stemmer.
        "text": models.TextIndexParams(
            type=models.TextIndexType.TEXT,
            tokenizer=models.TokenizerType.WORD,
            lowercase=True,
        ),
    }

    def __init__(
        self,
        client: QdrantClient | QdrantNodes,
        collection: str,
        *,
        local: bool,
        native_groups: bool | None = None,
        layout: CollectionLayout | None = None,
        fence_key: str | None = None,
        lease_name: str | None = None,
        grpc: bool = False,
    ) -> None:
        # RLock for local mode: a scroll or grouped search makes nested calls through `_call`.
        super().__init__(
            backend="qdrant-local" if local else "qdrant-remote",
            collection=collection,
            guard=threading.RLock() if local else None,
        )
        self._nodes = client if isinstance(client, QdrantNodes) else QdrantNodes([client], [""])
        self._local = local
        self._native_groups = not local if native_groups is None else native_groups
        self._lease_name = (lease_name or collection) + _LEASE_SUFFIX
        self._layout = layout or CollectionLayout()
        self._lease_replicas_ready = False
        self._fence_key = fence_key
        self._grpc = grpc
        # Where writes go: the reading nodes until a lease fences them (a client per node).
        self._fenced: QdrantNodes | None = None

    @property
    def _client(self) -> QdrantClient:
        """The client of the node calls go to now."""
        return self._nodes.current

    @property
    def _writer(self) -> QdrantClient:
        """The client writes go to now: the fenced one of the current node, once fenced."""
        return self._fenced.current if self._fenced is not None else self._nodes.current

    def _invoke(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        owner = getattr(fn, "__self__", None)
        if self._fenced is not None and any(owner is c for c in self._fenced.clients):
            return self._fenced.call(fn, *args, **kwargs)
        return self._nodes.call(fn, *args, **kwargs)

    def fence(self, holder: str, epoch: int) -> bool:
        """Send later writes under a token the server checks against the lease point (holder
        and epoch); False (writes unchanged) without an API key to sign it."""
        urls = [u for u in self._nodes.urls if u and u != ":memory:"]
        if not urls or self._fence_key is None:
            return False
        token = fence_token(self._fence_key, self._lease_name, {"holder": holder, "epoch": epoch})
        with warnings.catch_warnings():
            # The reading client already warned about a key over plain HTTP.
            warnings.filterwarnings("ignore", "Auth token provider is used with an insecure")
            writers = [
                self._call(
                    "fenced client",
                    QdrantClient,
                    url=url,
                    auth_token_provider=lambda: token,
                    check_compatibility=False,
                )
                for url in urls
            ]
        if self._fenced is not None:
            self._fenced.close()
        self._fenced = QdrantNodes(writers, urls)
        return True

    def _error(self, message: str, cause: Exception) -> StoreError:
        if self._fenced is not None and "stateful validation failed" in str(cause):
            return StoreFencedError(
                f"{message}: the server refused this syncer's lease token (another syncer "
                f"took the lease over): {cause}",
                backend=self._backend,
                collection=self._collection,
            )
        return super()._error(message, cause)

    # --- schema -------------------------------------------------------------------
    def ensure_collection(self, dim: int) -> None:
        name, client = self._collection, self._client
        if self._call("collection_exists", client.collection_exists, name):
            info = self._call("get_collection", client.get_collection, name)
            vectors = info.config.params.vectors
            size = vectors.size if isinstance(vectors, models.VectorParams) else None
            if size != dim:
                raise StoreDimensionError(
                    f"collection holds {size}-d vectors, asked for {dim}-d",
                    backend=self._backend,
                    collection=name,
                )
            if SPARSE_VECTOR not in (info.config.params.sparse_vectors or {}):
                raise StoreSchemaError(
                    f"collection has no sparse vector {SPARSE_VECTOR!r} (built before hybrid "
                    "search): delete it and let the sync rebuild it",
                    backend=self._backend,
                    collection=name,
                )
            self._check_layout(info.config.params)
        else:
            layout = self._layout.create_args()
            logger.info(
                "creating collection %s (%d-d, cosine, + %s)%s",
                name,
                dim,
                SPARSE_VECTOR,
                f" {layout}" if layout else "",
            )
            params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
            # IDF is computed by the engine over the collection at query time.
            sparse = {SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)}
            try:
                self._call(
                    "create_collection",
                    self._writer.create_collection,
                    name,
                    vectors_config=params,
                    sparse_vectors_config=sparse,
                    **self._layout.create_args(),
                )
            except StoreError:
                # Another syncer or replica starting beside this one created it first.
                if not self._call("collection_exists", client.collection_exists, name):
                    raise
                return self.ensure_collection(dim)
        if self._local:
            return  # local mode ignores payload indexes (and warns on each one)
        for field_name, schema in self._index_schemas().items():
            # Idempotent on the server; also repairs a collection made without indexes.
            self._call(
                "create_payload_index",
                self._writer.create_payload_index,
                name,
                field_name,
                field_schema=schema,
                wait=True,
            )

    def _check_layout(self, params: models.CollectionParams) -> None:
        # The layout applies at creation: a collection made before a change keeps its own.
        found = {
            "shard_number": params.shard_number,
            "replication_factor": params.replication_factor,
            "write_consistency_factor": params.write_consistency_factor,
        }
        differs = {k: (found[k], v) for k, v in self._layout.create_args().items() if found[k] != v}
        if differs:
            logger.warning(
                "collection %s was created with another layout (found, configured): %s; "
                "the configured one applies to new collections only",
                self._collection,
                differs,
            )

    # --- writes ---------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        for batch in self._point_batches(points):
            self._call("upsert", self._writer.upsert, self._collection, batch, wait=True)

    def _delete(self, what: str, selector: models.PointsSelector) -> None:
        self._call(what, self._writer.delete, self._collection, points_selector=selector, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._delete("delete", models.PointIdsList(points=self._ids(ids)))

    def delete_products(self, product_ids: Sequence[int]) -> None:
        if product_ids:
            selector = models.FilterSelector(filter=self._product_filter(product_ids))
            self._delete("delete_products", selector)

    def set_payloads(self, updates: Sequence[PayloadUpdate]) -> None:
        ops: list[models.UpdateOperation] = [
            models.SetPayloadOperation(
                set_payload=models.SetPayload(payload=u.payload, points=self._ids(u.ids))
            )
            for u in updates
            if u.ids
        ]
        if ops:
            self._call(
                "set_payload", self._writer.batch_update_points, self._collection, ops, wait=True
            )

    def _update_vectors(self, points: list[tuple[str, dict[str, Any]]]) -> None:
        vectors = [models.PointVectors(id=i, vector=v) for i, v in points]
        self._call(
            "update_vectors", self._writer.update_vectors, self._collection, vectors, wait=True
        )

    def count(self) -> int:
        return int(self._call("count", self._client.count, self._collection, exact=True).count)

    # --- engine types -----------------------------------------------------------------
    def _match(self, key: str, value: Any) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def _match_text(self, key: str, text: str) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchText(text=text))

    def _match_any(self, key: str, values: list[int] | list[str]) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))

    def _range(self, key: str, gte: float | None, lte: float | None) -> models.FieldCondition:
        return models.FieldCondition(key=key, range=models.Range(gte=gte, lte=lte))

    def _has_vector(self, name: str) -> models.HasVectorCondition:
        return models.HasVectorCondition(has_vector=name)

    def _filter(self, must: list[Any], must_not: list[Any]) -> models.Filter:
        return models.Filter(must=must or None, must_not=must_not or None)

    def _sparse_vector(self, v: SparseVec) -> models.SparseVector:
        return models.SparseVector(indices=v.indices, values=v.values)

    def _make_point(self, point_id: str, vectors: dict[str, Any], payload: dict[str, Any]) -> Any:
        return models.PointStruct(id=point_id, vector=vectors, payload=payload)

    def _dense_query(self, vector: list[float]) -> Any:
        return vector

    def _sparse_query(self, sparse: SparseVec) -> Any:
        return self._sparse_vector(sparse)

    def _fusion(self, spec: FusionSpec) -> models.Query:
        if spec.method == "dbsf":
            return models.FusionQuery(fusion=models.Fusion.DBSF)
        return models.RrfQuery(rrf=models.Rrf(k=spec.rrf_k, weights=spec.weights))

    def _recommend(self, positives: list[Any]) -> Any:
        strategy = models.RecommendStrategy.BEST_SCORE
        return models.RecommendQuery(
            recommend=models.RecommendInput(positive=positives, strategy=strategy)
        )

    def _prefetch(self, branch: Branch, flt: Any, depth: int) -> models.Prefetch:
        return models.Prefetch(
            query=branch.query,
            using=SPARSE_VECTOR if branch.sparse else None,
            filter=flt,
            limit=depth,
            score_threshold=branch.score_threshold,
        )

    def _request(
        self,
        n: int,
        branch: Branch,
        flt: Any,
        prefetch: list[Any] | None = None,
        *,
        vectors: bool = False,
        payload: bool | list[str] = True,
    ) -> models.QueryRequest:
        return models.QueryRequest(
            with_vector=[""] if vectors else False,
            prefetch=prefetch,
            query=branch.query,
            using=SPARSE_VECTOR if branch.sparse else None,
            filter=flt,
            limit=n,
            score_threshold=branch.score_threshold,
            with_payload=payload,
        )

    # --- engine calls -----------------------------------------------------------------
    def _scroll_page(
        self, flt: Any, limit: int, offset: Any, *, payload: bool | list[str], vector: bool
    ) -> tuple[Any, Any]:
        records, next_offset = self._call(
            "scroll",
            self._client.scroll,
            self._collection,
            scroll_filter=flt,
            limit=limit,
            offset=offset,
            with_payload=payload,
            with_vectors=[""] if vector else False,
        )
        return records, next_offset

    def _facet(self, key: str, limit: int) -> list[tuple[Any, int]]:
        # Local mode counts over its payloads in Python (it has no indexes); a server
        # reads the keyword index ensure_collection made.
        response = self._call(
            "facet", self._client.facet, self._collection, key, limit=limit, exact=True
        )
        return [(h.value, h.count) for h in response.hits]

    def _query(self, request: Any) -> Any:
        return self._query_batch([request])[0]

    def _query_batch(self, requests: list[Any]) -> Any:
        if self._local:
            responses = self._call(
                "query_batch_points", self._client.query_batch_points, self._collection, requests
            )
            return [r.points for r in responses]
        # One round trip, without the client's per-request copies (app/store/qdrant_wire.py).
        return self._call(
            "query_batch_points",
            self._nodes.run,
            lambda client: query_batch(client, self._collection, requests, grpc=self._grpc),
        )

    def _grouped(
        self, requests: Sequence[Request], limits: Sequence[int], chunks_per_product: int
    ) -> list[list[ProductHit]]:
        # Qdrant's group-by takes one search per request: several (the shop's shelves) go
        # as one batch grouped here (bench/shelves.py measures both ways).
        if not self._native_groups or len(requests) != 1:
            return super()._grouped(requests, limits, chunks_per_product)
        return [self._native_grouped(requests[0], limits[0], chunks_per_product)]

    def _native_grouped(
        self, request: Request, limit: int, chunks_per_product: int
    ) -> list[ProductHit]:
        # A server groups inside the engine: the same request, with group_by. Branch
        # depth in chunks: a product brings up to chunks_per_product of them.
        req = request(limit * chunks_per_product, None)
        result = self._call(
            "query_points_groups",
            self._client.query_points_groups,
            self._collection,
            group_by=GROUP_FIELD,
            query=req.query,
            using=req.using,
            prefetch=req.prefetch,
            query_filter=req.filter,
            limit=limit,
            group_size=chunks_per_product,
            score_threshold=req.score_threshold,
            with_payload=req.with_payload,
        )
        hits: list[ProductHit] = []
        for group in result.groups:
            chunks = [stored_hit(p) for p in group.hits]
            if chunks:
                hits.append(
                    ProductHit(product_id=int(group.id), score=chunks[0].score, chunks=chunks)
                )
        hits.sort(key=lambda h: (-h.score, h.product_id))  # equal scores as group_hits has them
        return hits

    # --- checkpoint -------------------------------------------------------------------
    def load_state(self) -> dict[str, Any] | None:
        name, client = self._collection, self._client
        if not self._call("collection_exists", client.collection_exists, name):
            return None
        info = self._call("get_collection", client.get_collection, name)
        raw = (info.config.metadata or {}).get(_STATE_KEY)
        if not isinstance(raw, str):
            return None
        state = json.loads(raw)
        return state if isinstance(state, dict) else None

    def save_state(self, state: dict[str, Any]) -> None:
        # One JSON string, not a nested object: metadata updates merge nested keys, and a
        # checkpoint must be replaced whole. Writes above were all sent with wait=True, so
        # this never runs ahead of the vectors.
        metadata = {_STATE_KEY: json.dumps(state, sort_keys=True)}
        self._call(
            "save_state", self._writer.update_collection, self._collection, metadata=metadata
        )

    # --- sync lease (app/sync/lease.py) ------------------------------------------------
    def _lease_collection(self) -> str:
        name, client = self._lease_name, self._client
        if not self._call("collection_exists", client.collection_exists, name):
            try:
                # One point: one shard, replicated like the products (a lost lease would let
                # a second syncer in while the first still writes).
                self._call(
                    "create_collection",
                    client.create_collection,
                    name,
                    vectors_config={},
                    **self._layout.create_args(shards=1),
                )
            except StoreError:
                if not self._call("collection_exists", client.collection_exists, name):
                    raise  # not another claimant creating it first
        if not self._local and not self._lease_replicas_ready:
            self._await_replicas(name)
        return name

    def _epoch_is(self, epoch: int) -> Any:
        # Epoch 0 is a lease point written before epochs existed (or none at all).
        if epoch:
            return self._match("epoch", epoch)
        return models.IsEmptyCondition(is_empty=models.PayloadField(key="epoch"))

    def _write_lease(
        self, name: str, payload: dict[str, Any], condition: models.Filter, *, update_only: bool
    ) -> None:
        # The condition is checked by the server against the stored point, in update order.
        self._call(
            "write_lease",
            self._client.upsert,
            name,
            [models.PointStruct(id=_LEASE_POINT, vector={}, payload=payload)],
            update_filter=condition,
            update_mode=models.UpdateMode.UPDATE_ONLY if update_only else None,
            # On a cluster the claims to one point go through one replica, the shard's
            # leader. MEDIUM elects another when it dies; STRONG's leader is fixed, and with
            # its node down every claim failed until it returned (docs/scale-out.md).
            ordering=models.WriteOrdering.MEDIUM,
            wait=True,
        )

    def claim_lease(
        self, holder: str, until: float, now: float, *, epoch: int, seen: int
    ) -> dict[str, Any] | None:
        name = self._lease_collection()
        if epoch == seen:  # a renewal: still ours at our epoch
            must = [self._match("holder", holder), self._epoch_is(epoch)]
        else:  # a takeover: expired, and nobody moved the epoch on since it was read
            must = [
                models.FieldCondition(key="until", range=models.Range(lt=now)),
                self._epoch_is(seen),
            ]
        # A missing point is inserted whatever the condition (the first claim, epoch 1).
        payload = {"holder": holder, "until": until, "epoch": epoch}
        self._write_lease(name, payload, models.Filter(must=must), update_only=False)
        return self.read_lease()

    def _await_replicas(self, name: str) -> None:
        """Until no replica of a new collection is still initializing (bounded): none of
        them can lead a MEDIUM-ordered write yet ("no leader could be selected", seen on a
        cluster when claimants raced right after the lease collection was made)."""
        deadline = time.monotonic() + REPLICA_INIT_SECONDS
        while True:
            info = self._call("collection_cluster_info", self._client.collection_cluster_info, name)
            states = [r.state for r in info.local_shards]
            states += [r.state for r in info.remote_shards]
            if models.ReplicaState.INITIALIZING not in states:
                self._lease_replicas_ready = True
                return
            if time.monotonic() > deadline:
                return  # the claim reports what is wrong; the sync loop retries
            time.sleep(0.05)

    def release_lease(self, holder: str, epoch: int) -> None:
        name = self._lease_collection()
        mine = models.Filter(must=[self._match("holder", holder), self._epoch_is(epoch)])
        payload = {"holder": holder, "until": 0.0, "epoch": epoch}
        self._write_lease(name, payload, mine, update_only=True)

    def read_lease(self) -> dict[str, Any] | None:
        name, client = self._lease_name, self._client
        if not self._call("collection_exists", client.collection_exists, name):
            return None
        records = self._call("read_lease", client.retrieve, name, [_LEASE_POINT])
        return dict(records[0].payload or {}) if records else None

    def optimize(self) -> bool:
        # A server indexes in the background; local mode is brute force with nothing to build.
        return False

    def close(self) -> None:
        if self._fenced is not None:
            self._call("close", self._fenced.close)
        self._call("close", self._nodes.close)
