"""VectorStore on qdrant-edge: the Qdrant engine embedded in this process, on disk.

One folder is one shard (= one collection). Updates go through the engine's write-ahead
log and every mutating call ends with `flush()`, so an acknowledged write survives a
process restart. The sync checkpoint is a JSON file in the same folder, written only
after the shard is flushed: it is never ahead of the vectors it describes.

The engine builds no HNSW index by itself: `optimize()` does, and takes minutes at 100k
points. Until then search is exact (a few ms at 100k), which is correct, just slower.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import qdrant_edge as qe

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
    StoreLockedError,
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

BACKEND = "qdrant-edge"
STATE_FILE = "sync_state.json"
# Written by the engine when a shard is created; its presence means "load, don't create".
_SHARD_MARKER = "edge_config.json"
_SCHEMAS = {
    "integer": qe.PayloadSchemaType.Integer,
    "keyword": qe.PayloadSchemaType.Keyword,
    "float": qe.PayloadSchemaType.Float,
}
_UPSERT_BATCH = 1024


def build_filter(
    flt: SearchFilter | None, *, product_id: int | None = None, exclude: int | None = None
) -> qe.Filter | None:
    must: list[Any] = []
    if flt is not None and flt.category is not None:
        must.append(qe.FieldCondition(key="category", match=qe.MatchValue(flt.category)))
    if flt is not None and (flt.min_price is not None or flt.max_price is not None):
        price = qe.RangeFloat(gte=flt.min_price, lte=flt.max_price)
        must.append(qe.FieldCondition(key="price", range=price))
    if product_id is not None:
        must.append(qe.FieldCondition(key=GROUP_FIELD, match=qe.MatchValue(product_id)))
    if exclude is not None:
        not_it = qe.FieldCondition(key=GROUP_FIELD, match=qe.MatchValue(exclude))
        return qe.Filter(must=must, must_not=[not_it])
    return qe.Filter(must=must) if must else None


def _sparse(v: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(v.indices, v.values)


def _fusion(spec: FusionSpec) -> Any:
    # Any: the stubs type QueryRequest.query as `Fusion`, the variants' enclosing class.
    if spec.method == "dbsf":
        return qe.Fusion.Dbsf()
    return qe.Fusion.Rrf(k=spec.rrf_k, weights=spec.weights)


def _point(p: ChunkPoint) -> qe.Point:
    # Dense and BM25 in one point, so one upsert writes both: the sparse side never lags.
    vectors: dict[str, Any] = {
        "": as_float_list(p.vector),
        SPARSE_VECTOR: _sparse(document_sparse(str(p.payload.get("text", "")))),
    }
    return qe.Point(normalize_id(p.id, backend=BACKEND), vectors, p.payload)


def _product_filter(product_ids: Sequence[int]) -> qe.Filter:
    match = qe.MatchAny([int(p) for p in product_ids])
    return qe.Filter(must=[qe.FieldCondition(key=GROUP_FIELD, match=match)])


def _hit(point: qe.ScoredPoint) -> StoredChunkHit:
    return StoredChunkHit(id=str(point.id), score=float(point.score), payload=point.payload or {})


class EdgeStore:
    """Args:
    path: the shard folder; created by `ensure_collection` if it holds no shard yet.
    collection: a name for log and error context only (the folder is the collection).
    """

    def __init__(self, path: str | os.PathLike[str], *, collection: str = "products") -> None:
        self._path = Path(path)
        self._collection = collection
        self._shard: qe.EdgeShard | None = None
        self._checked_dim: int | None = None
        if (self._path / _SHARD_MARKER).exists():
            started = time.perf_counter()
            self._shard = self._call("load", qe.EdgeShard.load, str(self._path))
            logger.info("opened edge shard %s in %.2fs", self._path, time.perf_counter() - started)

    def _error(self, message: str, cause: Exception) -> StoreError:
        text = f"{message}: {cause}"
        if "WouldBlock" in str(cause):
            # The WAL is locked: another process (an API, a `--verify` run) has it open.
            return StoreLockedError(
                f"{text}; the shard at {self._path} is open in another process",
                backend=BACKEND,
                collection=self._collection,
            )
        if "dimension" in str(cause).lower():
            return StoreDimensionError(text, backend=BACKEND, collection=self._collection)
        return StoreError(text, backend=BACKEND, collection=self._collection)

    def _call(self, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except StoreError:
            raise
        except Exception as e:  # the engine raises bare Exception with a message
            raise self._error(f"{what} failed", e) from e

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise StoreError(
                f"no shard at {self._path}: call ensure_collection first",
                backend=BACKEND,
                collection=self._collection,
            )
        return self._shard

    def _update(self, what: str, *ops: qe.UpdateOperation) -> None:
        shard = self._require()
        for op in ops:
            self._call(what, shard.update, op)
        # The WAL alone survives a crashed process; flush makes the segments durable too.
        self._call("flush", shard.flush)

    # --- schema -------------------------------------------------------------------
    def ensure_collection(self, dim: int) -> None:
        if self._shard is not None and self._checked_dim == dim:
            return  # the open shard cannot be dropped under this process: checked once
        if self._shard is None:
            logger.info("creating edge shard %s (%d-d, cosine)", self._path, dim)
            vectors = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)
            # IDF is computed by the engine over the shard at query time.
            sparse = {SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
            config = qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)
            self._path.mkdir(parents=True, exist_ok=True)
            # A checkpoint left in the folder describes vectors that are gone: it must not
            # outlive them (the next cycle bootstraps instead of resuming over nothing).
            stale = self._path / STATE_FILE
            if stale.exists():
                logger.warning("dropping checkpoint %s: its shard is gone", stale)
                stale.unlink()
            self._shard = self._call("create", qe.EdgeShard.create, str(self._path), config)
        else:
            # The engine exposes no vector config; a probe query of the wanted size fails
            # with a dimension error if the shard was built for another model.
            probe = qe.QueryRequest(limit=1, query=qe.Query.Nearest([1.0] * dim))
            self._call(f"probe for {dim}-d vectors", self._shard.query, probe)
            self._require_sparse(self._shard)
        existing = self._call("info", self._require().info).payload_schema
        missing = [f for f in INDEXED_FIELDS if f not in existing]
        ops = [
            qe.UpdateOperation.create_field_index(f, _SCHEMAS[INDEXED_FIELDS[f]]) for f in missing
        ]
        if ops:
            self._update("create_field_index", *ops)
        self._checked_dim = dim

    def _require_sparse(self, shard: qe.EdgeShard) -> None:
        probe = qe.QueryRequest(
            limit=1, query=qe.Query.Nearest(qe.SparseVector([0], [1.0]), using=SPARSE_VECTOR)
        )
        try:
            shard.query(probe)
        except Exception as e:
            # The engine cannot add a vector to an existing shard (loading with the new
            # config fails as incompatible); the index is derived data, so rebuild it.
            raise StoreSchemaError(
                f"shard has no sparse vector {SPARSE_VECTOR!r} (built before hybrid search): "
                f"delete {self._path} and let the sync rebuild it ({e})",
                backend=BACKEND,
                collection=self._collection,
            ) from e

    # --- writes ---------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        if not points:
            return
        ops = [
            qe.UpdateOperation.upsert_points(
                [_point(p) for p in points[start : start + _UPSERT_BATCH]]
            )
            for start in range(0, len(points), _UPSERT_BATCH)
        ]
        self._update("upsert", *ops)

    def _ids(self, ids: Sequence[str]) -> list[qe.PointId]:
        return [normalize_id(i, backend=BACKEND) for i in ids]

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._update("delete", qe.UpdateOperation.delete_points(self._ids(ids)))

    def delete_products(self, product_ids: Sequence[int]) -> None:
        if product_ids:
            op = qe.UpdateOperation.delete_points_by_filter(_product_filter(product_ids))
            self._update("delete_products", op)

    def set_payloads(self, updates: Sequence[PayloadUpdate]) -> None:
        ops = [
            qe.UpdateOperation.set_payload(self._ids(u.ids), u.payload) for u in updates if u.ids
        ]
        if ops:
            self._update("set_payload", *ops)

    # --- reads ---------------------------------------------------------------------
    def _scroll(
        self, flt: qe.Filter | None, batch: int, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        shard = self._require()
        offset: qe.PointId | None = None
        payload: Any = True if fields is None else qe.PayloadSelector.Include(list(fields))
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=batch, filter=flt, with_payload=payload, with_vector=False
            )
            records, offset = self._call("scroll", shard.scroll, request)
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
        shard = self._require()
        return int(self._call("count", shard.count, qe.CountRequest(exact=True)))

    def chunk_ids_without_sparse(self) -> list[str]:
        missing = qe.Filter(must_not=[qe.HasVectorCondition(SPARSE_VECTOR)])
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
        dense = qe.Query.Nearest(as_float_list(vector)) if vector is not None else None
        lexical = qe.Query.Nearest(_sparse(sparse), using=SPARSE_VECTOR) if sparse else None
        spec = fusion or FusionSpec()

        def request(n: int, product_id: int | None = None) -> qe.QueryRequest:
            f = build_filter(flt, product_id=product_id)
            if dense is not None and lexical is not None:
                depth = prefetch_limit(n)
                # The filter goes into each branch: a branch without it would fill the
                # fusion with products the shopper excluded.
                return qe.QueryRequest(
                    limit=n,
                    prefetches=[
                        qe.Prefetch(depth, dense, filter=f, score_threshold=score_threshold),
                        qe.Prefetch(depth, lexical, filter=f),
                    ],
                    query=_fusion(spec),
                    filter=f,
                    with_payload=True,
                )
            if dense is not None:
                return qe.QueryRequest(
                    limit=n,
                    query=dense,
                    filter=f,
                    score_threshold=score_threshold,
                    with_payload=True,
                )
            if lexical is None:
                raise ValueError("search_products needs a dense or a sparse query vector")
            return qe.QueryRequest(limit=n, query=lexical, filter=f, with_payload=True)

        return self._grouped(request, limit, chunks_per_product)

    def similar_products(
        self,
        product_id: int,
        *,
        limit: int,
        chunks_per_product: int,
        flt: SearchFilter | None = None,
    ) -> list[ProductHit] | None:
        shard = self._require()
        own = _product_filter([product_id])
        request = qe.ScrollRequest(limit=64, filter=own, with_payload=False, with_vector=[""])
        records, _ = self._call("scroll", shard.scroll, request)
        # Asking for the default vector alone returns it bare (a list), not by name.
        positives: list[Any] = [r.vector for r in records if isinstance(r.vector, list)]
        if not positives:
            return None
        recommend = qe.Query.RecommendBestScore(qe.RecommendQuery(positives, []))

        def request_for(n: int, other: int | None = None) -> qe.QueryRequest:
            f = build_filter(flt, product_id=other, exclude=product_id)
            return qe.QueryRequest(limit=n, query=recommend, filter=f, with_payload=True)

        return self._grouped(request_for, limit, chunks_per_product)

    def _grouped(
        self,
        request: Callable[[int, int | None], qe.QueryRequest],
        limit: int,
        chunks_per_product: int,
    ) -> list[ProductHit]:
        shard = self._require()

        def query(n: int) -> list[StoredChunkHit]:
            return [_hit(p) for p in self._call("query", shard.query, request(n, None))]

        def fill(product_ids: Sequence[int]) -> list[list[StoredChunkHit]]:
            # One batch: the engine plans the small per-product searches together.
            batch = qe.QueryBatchRequest([request(chunks_per_product, p) for p in product_ids])
            results = self._call("query_batch", shard.query_batch, batch)
            return [[_hit(p) for p in points] for points in results]

        return grouped_search(query, fill, limit=limit, chunks_per_product=chunks_per_product)

    # --- checkpoint -------------------------------------------------------------------
    def load_state(self) -> dict[str, Any] | None:
        path = self._path / STATE_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self._error(f"cannot read {path}", e) from e
        try:
            state = json.loads(text)
        except ValueError as e:
            raise self._error(f"corrupt checkpoint {path}", e) from e
        return state if isinstance(state, dict) else None

    def save_state(self, state: dict[str, Any]) -> None:
        shard = self._require()
        # Vectors first: a checkpoint on disk must never claim more than the shard holds.
        self._call("flush", shard.flush)
        try:
            _write_atomically(self._path / STATE_FILE, json.dumps(state, sort_keys=True))
        except OSError as e:
            raise self._error("cannot write checkpoint", e) from e

    def optimize(self) -> bool:
        """Build HNSW and merge segments (blocking; ~minutes at 100k points)."""
        shard = self._require()
        started = time.perf_counter()
        changed = self._call("optimize", shard.optimize)
        self._call("flush", shard.flush)
        logger.info(
            "optimized %s in %.1fs (changed=%s)", self._path, time.perf_counter() - started, changed
        )
        return bool(changed)

    def close(self) -> None:
        shard, self._shard = self._shard, None
        self._checked_dim = None
        if shard is not None:
            self._call("flush", shard.flush)
            self._call("close", shard.close)


def _write_atomically(path: Path, text: str) -> None:
    """Write-temp, fsync, rename, fsync the folder: readers see the old or the new file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
