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

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

from qdrant_client import QdrantClient, models

from app.store.base import (
    GROUP_FIELD,
    INDEXED_FIELDS,
    ChunkPoint,
    PayloadUpdate,
    ProductHit,
    SearchFilter,
    StoredChunk,
    StoredChunkHit,
    StoreDimensionError,
    StoreError,
    StoreSchemaError,
    VectorLike,
    as_float_list,
    normalize_id,
    stored_chunk,
)
from app.store.grouping import grouped_search
from app.store.hybrid import (
    SPARSE_VECTOR,
    FusionSpec,
    SparseVec,
    document_sparse,
    prefetch_limit,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

_SCHEMAS = {
    "integer": models.PayloadSchemaType.INTEGER,
    "keyword": models.PayloadSchemaType.KEYWORD,
    "float": models.PayloadSchemaType.FLOAT,
}
_STATE_KEY = "sync_state"
# Keeps a remote upsert request well under the server's 32 MB body limit at 384-d.
_UPSERT_BATCH = 512


def build_filter(flt: SearchFilter | None, *, exclude: int | None = None) -> models.Filter | None:
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    if exclude is not None:
        must_not.append(
            models.FieldCondition(key=GROUP_FIELD, match=models.MatchValue(value=exclude))
        )
    if flt is None or flt.is_empty:
        return models.Filter(must_not=must_not) if must_not else None
    if flt.category is not None:
        must.append(
            models.FieldCondition(key="category", match=models.MatchValue(value=flt.category))
        )
    if flt.min_price is not None or flt.max_price is not None:
        must.append(
            models.FieldCondition(
                key="price", range=models.Range(gte=flt.min_price, lte=flt.max_price)
            )
        )
    return models.Filter(must=must, must_not=must_not or None)


def _fusion(spec: FusionSpec) -> models.Query:
    if spec.method == "dbsf":
        return models.FusionQuery(fusion=models.Fusion.DBSF)
    return models.RrfQuery(rrf=models.Rrf(k=spec.rrf_k, weights=spec.weights))


def _point(p: ChunkPoint, backend: str) -> models.PointStruct:
    # Dense and BM25 in one point, so one upsert writes both: the sparse side never lags.
    bm25 = document_sparse(str(p.payload.get("text", "")))
    vectors: dict[str, Any] = {
        "": as_float_list(p.vector),
        SPARSE_VECTOR: models.SparseVector(indices=bm25.indices, values=bm25.values),
    }
    return models.PointStruct(
        id=normalize_id(p.id, backend=backend), vector=vectors, payload=p.payload
    )


def _product_filter(product_ids: Sequence[int]) -> models.Filter:
    return models.Filter(
        must=[
            models.FieldCondition(
                key=GROUP_FIELD, match=models.MatchAny(any=[int(p) for p in product_ids])
            )
        ]
    )


def _with_product(flt: models.Filter | None, product_id: int) -> models.Filter:
    only = models.FieldCondition(key=GROUP_FIELD, match=models.MatchValue(value=product_id))
    return models.Filter(must=[only] if flt is None else [flt, only])


class QdrantClientStore:
    """Args:
    client: an open QdrantClient (remote or local).
    collection: collection name; the checkpoint goes to `<collection>__state`.
    local: True for qdrant-client's local mode, which has no payload indexes.
    native_groups: use `query_points_groups`. Default: only for a server; local mode's
        version scores and copies every point per query (~0.35 s at 5k points), so it
        over-fetches and groups in Python instead (app.store.grouping), like the edge.
    """

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        *,
        local: bool,
        native_groups: bool | None = None,
    ) -> None:
        self._client = client
        self._collection = collection
        self._local = local
        # RLock: a scroll or grouped search makes nested calls through `_call`.
        self._guard: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if local else contextlib.nullcontext()
        )
        self._backend = "qdrant-local" if local else "qdrant-remote"
        self._native_groups = not local if native_groups is None else native_groups

    def _call(self, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            with self._guard:
                return fn(*args, **kwargs)
        except StoreError:
            raise
        except Exception as e:  # qdrant-client raises ValueError/KeyError/HTTP errors alike
            raise StoreError(
                f"{what} failed: {e}", backend=self._backend, collection=self._collection
            ) from e

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
            self._call(
                "create_collection",
                client.create_collection,
                name,
                vectors_config=params,
                sparse_vectors_config=sparse,
            )
        if self._local:
            return  # local mode ignores payload indexes (and warns on each one)
        for field_name, schema in INDEXED_FIELDS.items():
            # Idempotent on the server; also repairs a collection made without indexes.
            self._call(
                "create_payload_index",
                client.create_payload_index,
                name,
                field_name,
                field_schema=_SCHEMAS[schema],
                wait=True,
            )

    # --- writes ---------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [_point(p, self._backend) for p in points[start : start + _UPSERT_BATCH]]
            self._call("upsert", self._client.upsert, self._collection, batch, wait=True)

    def _ids(self, ids: Sequence[str]) -> list[models.ExtendedPointId]:
        return [normalize_id(i, backend=self._backend) for i in ids]

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = models.PointIdsList(points=self._ids(ids))
        self._call(
            "delete", self._client.delete, self._collection, points_selector=selector, wait=True
        )

    def delete_products(self, product_ids: Sequence[int]) -> None:
        if not product_ids:
            return
        selector = models.FilterSelector(filter=_product_filter(product_ids))
        self._call(
            "delete_products",
            self._client.delete,
            self._collection,
            points_selector=selector,
            wait=True,
        )

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

    # --- reads ---------------------------------------------------------------------
    def _scroll(
        self, flt: models.Filter | None, batch: int, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        offset: models.ExtendedPointId | None = None
        payload: bool | list[str] = True if fields is None else list(fields)
        while True:
            records, offset = self._call(
                "scroll",
                self._client.scroll,
                self._collection,
                scroll_filter=flt,
                limit=batch,
                offset=offset,
                with_payload=payload,
                with_vectors=False,
            )
            for record in records:
                yield stored_chunk(record.id, record.payload)
            if offset is None:
                return

    def chunks_for_products(self, product_ids: Sequence[int]) -> list[StoredChunk]:
        if not product_ids:
            return []
        return list(self._scroll(_product_filter(product_ids), 2048))

    def iter_chunks(
        self, batch: int = 2048, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        return self._scroll(None, batch, fields)

    def count(self) -> int:
        return int(self._call("count", self._client.count, self._collection, exact=True).count)

    def chunk_ids_without_sparse(self) -> list[str]:
        missing = models.Filter(must_not=[models.HasVectorCondition(has_vector=SPARSE_VECTOR)])
        return [c.id for c in self._scroll(missing, 2048, fields=[GROUP_FIELD])]

    def search_products(
        self,
        vector: VectorLike | None,
        *,
        limit: int,
        chunks_per_product: int,
        score_threshold: float | None = None,
        flt: SearchFilter | None = None,
        sparse: SparseVec | None = None,
        fusion: FusionSpec | None = None,
    ) -> list[ProductHit]:
        dense = as_float_list(vector) if vector is not None else None
        lexical = (
            models.SparseVector(indices=sparse.indices, values=sparse.values) if sparse else None
        )
        spec = fusion or FusionSpec()
        query_filter = build_filter(flt)

        def request(n: int, f: models.Filter | None) -> models.QueryRequest:
            if dense is not None and lexical is not None:
                depth = prefetch_limit(n)
                # The filter goes into each branch: a branch without it would fill the
                # fusion with products the shopper excluded.
                return models.QueryRequest(
                    prefetch=[
                        models.Prefetch(
                            query=dense, filter=f, limit=depth, score_threshold=score_threshold
                        ),
                        models.Prefetch(query=lexical, using=SPARSE_VECTOR, filter=f, limit=depth),
                    ],
                    query=_fusion(spec),
                    filter=f,
                    limit=n,
                    with_payload=True,
                )
            if dense is not None:
                return models.QueryRequest(
                    query=dense,
                    filter=f,
                    limit=n,
                    score_threshold=score_threshold,
                    with_payload=True,
                )
            if lexical is None:
                raise ValueError("search_products needs a dense or a sparse query vector")
            return models.QueryRequest(
                query=lexical, using=SPARSE_VECTOR, filter=f, limit=n, with_payload=True
            )

        return self._grouped(request, query_filter, limit, chunks_per_product)

    def similar_products(
        self,
        product_id: int,
        *,
        limit: int,
        chunks_per_product: int,
        flt: SearchFilter | None = None,
    ) -> list[ProductHit] | None:
        own = self._call(
            "scroll",
            self._client.scroll,
            self._collection,
            scroll_filter=_product_filter([product_id]),
            limit=64,
            with_payload=False,
            with_vectors=[""],
        )[0]
        # Asking for the default vector alone returns it bare (a list), not by name.
        positives: list[Any] = [r.vector for r in own if isinstance(r.vector, list)]
        if not positives:
            return None
        recommend = models.RecommendQuery(
            recommend=models.RecommendInput(
                positive=positives, strategy=models.RecommendStrategy.BEST_SCORE
            )
        )

        def request(n: int, f: models.Filter | None) -> models.QueryRequest:
            return models.QueryRequest(query=recommend, filter=f, limit=n, with_payload=True)

        return self._grouped(
            request, build_filter(flt, exclude=product_id), limit, chunks_per_product
        )

    def _grouped(
        self,
        request: Callable[[int, models.Filter | None], models.QueryRequest],
        query_filter: models.Filter | None,
        limit: int,
        chunks_per_product: int,
    ) -> list[ProductHit]:
        if self._native_groups:
            # Branch depth in chunks: a product brings up to chunks_per_product of them.
            req = request(limit * chunks_per_product, query_filter)
            return self._native_grouped(req, limit, chunks_per_product)

        def hits(points: Sequence[models.ScoredPoint]) -> list[StoredChunkHit]:
            return [
                StoredChunkHit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {}))
                for p in points
            ]

        def top(n: int) -> list[StoredChunkHit]:
            responses = self._call(
                "query_batch_points",
                self._client.query_batch_points,
                self._collection,
                [request(n, query_filter)],
            )
            return hits(responses[0].points)

        def fill(product_ids: Sequence[int]) -> list[list[StoredChunkHit]]:
            requests = [
                request(chunks_per_product, _with_product(query_filter, pid)) for pid in product_ids
            ]
            responses = self._call(
                "query_batch_points", self._client.query_batch_points, self._collection, requests
            )
            return [hits(r.points) for r in responses]

        return grouped_search(top, fill, limit=limit, chunks_per_product=chunks_per_product)

    def _native_grouped(
        self, req: models.QueryRequest, limit: int, chunks_per_product: int
    ) -> list[ProductHit]:
        # A server groups inside the engine: the same request, with group_by.
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
            chunks = [
                StoredChunkHit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {}))
                for p in group.hits
            ]
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

    def optimize(self) -> bool:
        # A server indexes in the background; local mode is brute force with nothing to build.
        return False

    def close(self) -> None:
        self._call("close", self._client.close)
