"""VectorStore on qdrant-client: a Qdrant server (`url=`) or the in-process local mode.

The sync checkpoint lives in the collection's own metadata (`sync_state`), so it has the
vectors' lifetime exactly: dropping the collection drops it, an in-memory client loses
both, a server keeps both. (A companion collection outlived a dropped products collection,
and the next cycle resumed over an empty store.) Collection metadata needs Qdrant 1.16+.

qdrant-client's local mode has no locking of its own: a search while the sync writes fails
intermittently (numpy arrays resized under the reader). Every local call is serialised
here; a server does its own concurrency.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from qdrant_client import QdrantClient, models

from app.store.base import (
    GROUP_FIELD,
    ChunkPoint,
    PayloadUpdate,
    ProductHit,
    StoreDimensionError,
    StoreError,
    StoreSchemaError,
)
from app.store.core import Branch, Request, StoreCore, stored_hit
from app.store.hybrid import SPARSE_VECTOR, FusionSpec, SparseVec

logger = logging.getLogger(__name__)

_STATE_KEY = "sync_state"
# The sync lease's one point (app/sync/lease.py), in a companion collection without vectors.
_LEASE_SUFFIX = "__sync_lease"
_LEASE_POINT = "5e1f0000-0000-4000-8000-000000000001"


class QdrantClientStore(StoreCore):
    """Args:
    client: an open QdrantClient (remote or local).
    collection: collection name; the checkpoint goes to `<collection>__state`.
    local: True for qdrant-client's local mode, which has no payload indexes.
    native_groups: use `query_points_groups`. Default: only for a server; local mode's
        version scores and copies every point per query (~0.35 s at 5k points), so it
        over-fetches and groups in Python instead (app.store.grouping), like the edge.
    lease_name: the collection whose companion keeps the sync lease; default
        `collection`. QDRANT_COLLECTION for every encoder's index (app/store/slots.py).
    """

    _SCHEMA_TYPES: ClassVar[dict[str, Any]] = {
        "integer": models.PayloadSchemaType.INTEGER,
        "keyword": models.PayloadSchemaType.KEYWORD,
        "float": models.PayloadSchemaType.FLOAT,
    }

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        *,
        local: bool,
        native_groups: bool | None = None,
        lease_name: str | None = None,
    ) -> None:
        # RLock for local mode: a scroll or grouped search makes nested calls through `_call`.
        super().__init__(
            backend="qdrant-local" if local else "qdrant-remote",
            collection=collection,
            guard=threading.RLock() if local else None,
        )
        self._client = client
        self._local = local
        self._native_groups = not local if native_groups is None else native_groups
        self._lease_collection = (lease_name or collection) + _LEASE_SUFFIX

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
        else:
            logger.info("creating collection %s (%d-d, cosine, + %s)", name, dim, SPARSE_VECTOR)
            params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
            # IDF is computed by the engine over the collection at query time.
            sparse = {SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)}
            try:
                self._call(
                    "create_collection",
                    client.create_collection,
                    name,
                    vectors_config=params,
                    sparse_vectors_config=sparse,
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
                client.create_payload_index,
                name,
                field_name,
                field_schema=schema,
                wait=True,
            )

    # --- writes ---------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        for batch in self._point_batches(points):
            self._call("upsert", self._client.upsert, self._collection, batch, wait=True)

    def _delete(self, what: str, selector: models.PointsSelector) -> None:
        self._call(what, self._client.delete, self._collection, points_selector=selector, wait=True)

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
                "set_payload", self._client.batch_update_points, self._collection, ops, wait=True
            )

    def count(self) -> int:
        return int(self._call("count", self._client.count, self._collection, exact=True).count)

    # --- engine types -----------------------------------------------------------------
    def _match(self, key: str, value: Any) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

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
        responses = self._call(
            "query_batch_points", self._client.query_batch_points, self._collection, requests
        )
        return [r.points for r in responses]

    def _grouped(self, request: Request, limit: int, chunks_per_product: int) -> list[ProductHit]:
        if not self._native_groups:
            return super()._grouped(request, limit, chunks_per_product)
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
            with_payload=True,
        )
        hits: list[ProductHit] = []
        for group in result.groups:
            chunks = [stored_hit(p) for p in group.hits]
            if chunks:
                hits.append(
                    ProductHit(product_id=int(group.id), score=chunks[0].score, chunks=chunks)
                )
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
            "save_state", self._client.update_collection, self._collection, metadata=metadata
        )

    # --- sync lease (app/sync/lease.py) ------------------------------------------------
    def claim_lease(
        self, holder: str, until: float, now: float, *, release: bool = False
    ) -> dict[str, Any] | None:
        name, client = self._lease_collection, self._client
        if not self._call("collection_exists", client.collection_exists, name):
            try:
                self._call("create_collection", client.create_collection, name, vectors_config={})
            except StoreError:
                if not self._call("collection_exists", client.collection_exists, name):
                    raise  # not another claimant creating it first
        mine = self._match("holder", holder)
        # The condition is checked by the server against the stored point, in update order:
        # renew our own lease or take an expired one; a missing point is inserted.
        condition = (
            models.Filter(must=[mine])
            if release
            else models.Filter(
                should=[mine, models.FieldCondition(key="until", range=models.Range(lt=now))]
            )
        )
        payload = {"holder": holder, "until": until}
        self._call(
            "claim_lease",
            client.upsert,
            name,
            [models.PointStruct(id=_LEASE_POINT, vector={}, payload=payload)],
            update_filter=condition,
            update_mode=models.UpdateMode.UPDATE_ONLY if release else None,
            ordering=models.WriteOrdering.STRONG,
            wait=True,
        )
        return self.read_lease()

    def read_lease(self) -> dict[str, Any] | None:
        name, client = self._lease_collection, self._client
        if not self._call("collection_exists", client.collection_exists, name):
            return None
        records = self._call("read_lease", client.retrieve, name, [_LEASE_POINT])
        return dict(records[0].payload or {}) if records else None

    def optimize(self) -> bool:
        # A server indexes in the background; local mode is brute force with nothing to build.
        return False

    def close(self) -> None:
        self._call("close", self._client.close)
