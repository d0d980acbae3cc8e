"""VectorStore on qdrant-edge: the Qdrant engine embedded in this process, on disk.

One folder is one shard (= one collection). Every update goes to the engine's
write-ahead log before it is applied, so an acknowledged write survives a killed process;
`flush()` (fsync) runs every FLUSH_AFTER_POINTS points or FLUSH_AFTER_SECONDS, which bounds
what an OS crash can lose and how much WAL a reopen replays. The sync checkpoint is a JSON
file in the same folder, written only after a flush, so it is never ahead of the vectors:
after a crash the next cycle re-reads its window and rewrites what is missing (content
keys make that idempotent). Why this holds, and what it costs:
docs/decisions/embedded-vector-engine.md#durability.

The engine builds no HNSW index by itself: `optimize()` does (the sync calls it every
engine.ROLL_AFTER_POINTS it writes, so segments become memory-mapped instead of
heap-resident). Dense vectors are stored `memory=cold` (read on demand, not mapped whole
into every process that opens the shard); an older shard is switched in `_open_shard`.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import qdrant_edge as qe

from app.store.base import (
    INDEXED_FIELDS,
    ChunkPoint,
    PayloadUpdate,
    StoreDimensionError,
    StoreError,
    StoreLockedError,
    StoreSchemaError,
)
from app.store.core import Branch, StoreCore
from app.store.hybrid import SPARSE_VECTOR, FusionSpec, SparseVec

logger = logging.getLogger(__name__)

BACKEND = "qdrant-edge"
STATE_FILE = "sync_state.json"
# Written by the engine when a shard is created; its presence means "load, don't create".
_SHARD_MARKER = "edge_config.json"
# Flush (fsync WAL + segments, truncate the WAL) once this many points were written since
# the last flush, or on the first write this long after it; `save_state`, `optimize` and
# `close` always flush. A flush after each 256-point upsert cost ~0.17 s apiece, 15% of a
# 4,000-chunk bootstrap (BENCHMARKS.md, issue 11); these bounds allow one per 30 s or
# 20k points, and keep an unflushed WAL under ~70 MB and ~1.5 s of replay on load.
FLUSH_AFTER_POINTS = 20_000
FLUSH_AFTER_SECONDS = 30.0
DENSE_MEMORY = qe.Memory.Cold
# Everything an optimized (non-appendable) segment keeps is memory-mapped and read on
# demand: the BM25 inverted index, the id tracker, the payload indexes and the HNSW graph.
# (An appendable segment keeps its BM25 index, id tracker and payload indexes on the heap
# whatever these say: ~1.1 KB per point, 1.1 GB at 1M points in one appendable segment.)
INDEX_MEMORY = qe.Memory.Cold
# The engine's own HNSW defaults (m, ef_construct, full-scan threshold in KB), graph cold.
HNSW_M = 16
HNSW_EF_CONSTRUCT = 100
HNSW_FULL_SCAN_KB = 10_000
# Points per optimized segment: the sync rolls the appendable segment into an indexed one
# after this many (engine.ROLL_AFTER_POINTS), and the merge optimizer never merges segments
# that already reach it (a merge rebuilds the merged HNSW graph: superlinear). It only
# merges smaller ones (small increments) up to this size, once there are more than
# MAX_SEGMENTS.
SEGMENT_POINTS = 100_000
MAX_SEGMENTS = 16
# A segment is indexed (HNSW, cold layout) by an optimize once its dense vectors reach this
# many KB: the engine's default (~6.7k points of 384-d).
INDEXING_THRESHOLD_KB = 10_000
# A filter no point matches: probes that must check the shard's vectors without reading them.
_NO_POINT = qe.Filter(must=[qe.HasIdCondition({"00000000-0000-0000-0000-000000000000"})])


class EdgeStore(StoreCore):
    """Args:
    path: the shard folder; created by `ensure_collection` if it holds no shard yet.
    collection: a name for log and error context only (the folder is the collection).
    search_threads: the engine's search pool size (QDRANT_SEARCH_THREADS); None = the
        engine's default, one per CPU.
    """

    # Index params rather than bare types: `memory` places an optimized segment's payload
    # index (an appendable segment's is always on the heap). The one integer field,
    # product_id, is only ever matched (one product, a list of them, or all but one): no
    # range index, and no extra HNSW links per range of ids (a filter on one product is
    # answered from the payload index; they were half the cost of building the index).
    _SCHEMA_TYPES: ClassVar[dict[str, Any]] = {
        "integer": qe.IntegerIndexParams(
            lookup=True, range=False, enable_hnsw=False, memory=INDEX_MEMORY
        ),
        "keyword": qe.KeywordIndexParams(memory=INDEX_MEMORY),
        "float": qe.FloatIndexParams(memory=INDEX_MEMORY),
        # Whole lowercase words, no stemmer and no stopwords ("over" in "over-ear" counts):
        # what base.name_forms expects of every engine.
        "text": qe.TextIndexParams(
            tokenizer=qe.TokenizerType.Word, lowercase=True, memory=INDEX_MEMORY
        ),
    }

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        collection: str = "products",
        search_threads: int | None = None,
    ) -> None:
        super().__init__(backend=BACKEND, collection=collection)
        self._path = Path(path)
        self._search_threads = search_threads
        self._shard: qe.EdgeShard | None = None
        self._checked_dim: int | None = None
        # Points written since the last flush, and when that flush was (monotonic).
        self._unflushed = 0
        self._flushed_at = time.monotonic()
        if (self._path / _SHARD_MARKER).exists():
            started = time.perf_counter()
            self._shard = self._open_shard()
            logger.info("opened edge shard %s in %.2fs", self._path, time.perf_counter() - started)

    def _open_shard(self) -> qe.EdgeShard:
        """Load the shard with this process's search pool size (persisted by the engine);
        one created with its dense vectors `cached` is switched to `cold`.

        The engine persists the new config (edge_config.json) and writes new segments cold
        at once; a segment written before keeps its layout, so it still works, and still
        maps its vectors whole on open, until an `optimize()` rewrites it (the sync runs one
        after OPTIMIZE_AFTER_UNINDEXED new chunks). Nothing is rebuilt or re-embedded.
        """
        path = str(self._path)
        dense = _persisted_dense_params(self._path / _SHARD_MARKER)
        cold = dense is not None and dense.get("memory") == "cold"
        if dense is None or (cold and self._search_threads is None):
            return self._call("load", qe.EdgeShard.load, path)  # nothing to change
        if not cold:
            logger.warning(
                "edge shard %s keeps its dense vectors in RAM (memory=%s, the engine's old "
                "default): switching it to memory=cold; segments written from now on are cold, "
                "the existing ones until the next optimize rewrites them",
                self._path,
                dense.get("memory", "cached"),
            )
        # A load config must name a vector: the dense one as persisted, cold. Given no
        # sparse config the engine keeps the shard's own (none on a pre-hybrid shard, which
        # ensure_collection then reports with the way out).
        vectors = qe.EdgeVectorParams(
            size=int(dense["size"]),
            distance=getattr(qe.Distance, str(dense["distance"])),
            memory=DENSE_MEMORY,
        )
        config = qe.EdgeConfig(vectors=vectors, max_search_threads=self._search_threads)
        return self._call("load", qe.EdgeShard.load, path, config)

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
        return super()._error(message, cause)

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise self._store_error(f"no shard at {self._path}: call ensure_collection first")
        return self._shard

    def _update(self, what: str, *ops: qe.UpdateOperation, points: int = 0) -> None:
        """Apply `ops` (WAL first: durable across a killed process, see the module
        docstring); flush when FLUSH_AFTER_POINTS or FLUSH_AFTER_SECONDS is reached."""
        shard = self._require()
        for op in ops:
            self._call(what, shard.update, op)
        self._unflushed += points
        if (
            self._unflushed >= FLUSH_AFTER_POINTS
            or time.monotonic() - self._flushed_at >= FLUSH_AFTER_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        """fsync the WAL and every segment (and truncate the WAL): durable past an OS crash."""
        self._call("flush", self._require().flush)
        self._unflushed = 0
        self._flushed_at = time.monotonic()

    # --- schema -------------------------------------------------------------------
    def ensure_collection(self, dim: int) -> None:
        if self._shard is not None and self._checked_dim == dim:
            return  # the open shard cannot be dropped under this process: checked once
        if self._shard is None:
            logger.info("creating edge shard %s (%d-d, cosine)", self._path, dim)
            config = _shard_config(dim, self._search_threads)
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
            # with a dimension error if the shard was built for another model. Filtered to
            # no point, it checks the size without reading (and mapping) every vector.
            probe = qe.QueryRequest(limit=1, query=qe.Query.Nearest([1.0] * dim), filter=_NO_POINT)
            self._call(f"probe for {dim}-d vectors", self._shard.query, probe)
            self._require_sparse(self._shard)
        existing = self._call("info", self._require().info).payload_schema
        missing = self._index_schemas([f for f in INDEXED_FIELDS if f not in existing])
        ops = [qe.UpdateOperation.create_field_index(f, kind) for f, kind in missing.items()]
        if ops:
            self._update("create_field_index", *ops)
            self.flush()  # once per shard: its schema is fsynced from the start
        self._checked_dim = dim

    def _require_sparse(self, shard: qe.EdgeShard) -> None:
        probe = qe.QueryRequest(
            limit=1,
            query=qe.Query.Nearest(qe.SparseVector([0], [1.0]), using=SPARSE_VECTOR),
            filter=_NO_POINT,
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
        ops = [qe.UpdateOperation.upsert_points(b) for b in self._point_batches(points)]
        if ops:
            self._update("upsert", *ops, points=len(points))

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            op = qe.UpdateOperation.delete_points(self._ids(ids))
            self._update("delete", op, points=len(ids))

    def delete_products(self, product_ids: Sequence[int]) -> None:
        if product_ids:
            op = qe.UpdateOperation.delete_points_by_filter(self._product_filter(product_ids))
            self._update("delete_products", op, points=len(product_ids))

    def set_payloads(self, updates: Sequence[PayloadUpdate]) -> None:
        ops = [
            qe.UpdateOperation.set_payload(self._ids(u.ids), u.payload) for u in updates if u.ids
        ]
        if ops:
            self._update("set_payload", *ops, points=sum(len(u.ids) for u in updates))

    def _update_vectors(self, points: list[tuple[str, dict[str, Any]]]) -> None:
        vectors = [qe.PointVectors(i, v) for i, v in points]
        self._update(
            "update_vectors", qe.UpdateOperation.update_vectors(vectors), points=len(points)
        )

    def count(self) -> int:
        shard = self._require()
        return int(self._call("count", shard.count, qe.CountRequest(exact=True)))

    # --- engine types -----------------------------------------------------------------
    def _match(self, key: str, value: Any) -> qe.FieldCondition:
        return qe.FieldCondition(key=key, match=qe.MatchValue(value))

    def _match_text(self, key: str, text: str) -> qe.FieldCondition:
        return qe.FieldCondition(key=key, match=qe.MatchText(text))

    def _match_any(self, key: str, values: list[int] | list[str]) -> qe.FieldCondition:
        return qe.FieldCondition(key=key, match=qe.MatchAny(values))

    def _range(self, key: str, gte: float | None, lte: float | None) -> qe.FieldCondition:
        return qe.FieldCondition(key=key, range=qe.RangeFloat(gte=gte, lte=lte))

    def _has_vector(self, name: str) -> qe.HasVectorCondition:
        return qe.HasVectorCondition(name)

    def _filter(self, must: list[Any], must_not: list[Any]) -> qe.Filter:
        return qe.Filter(must=must, must_not=must_not) if must_not else qe.Filter(must=must)

    def _sparse_vector(self, v: SparseVec) -> qe.SparseVector:
        return qe.SparseVector(v.indices, v.values)

    def _make_point(self, point_id: str, vectors: dict[str, Any], payload: dict[str, Any]) -> Any:
        return qe.Point(point_id, vectors, payload)

    def _dense_query(self, vector: list[float]) -> Any:
        return qe.Query.Nearest(vector)

    def _sparse_query(self, sparse: SparseVec) -> Any:
        return qe.Query.Nearest(self._sparse_vector(sparse), using=SPARSE_VECTOR)

    def _fusion(self, spec: FusionSpec) -> Any:
        # Any: the stubs type QueryRequest.query as `Fusion`, the variants' enclosing class.
        if spec.method == "dbsf":
            return qe.Fusion.Dbsf()
        return qe.Fusion.Rrf(k=spec.rrf_k, weights=spec.weights)

    def _recommend(self, positives: list[Any]) -> Any:
        return qe.Query.RecommendBestScore(qe.RecommendQuery(positives, []))

    def _prefetch(self, branch: Branch, flt: Any, depth: int) -> qe.Prefetch:
        # An edge sparse query names its vector itself (`using=` in _sparse_query).
        return qe.Prefetch(depth, branch.query, filter=flt, score_threshold=branch.score_threshold)

    def _request(
        self,
        n: int,
        branch: Branch,
        flt: Any,
        prefetch: list[Any] | None = None,
        *,
        vectors: bool = False,
        payload: bool | list[str] = True,
    ) -> qe.QueryRequest:
        extra: dict[str, Any] = {}
        if vectors:
            extra["with_vector"] = [""]
        if prefetch is not None:
            extra["prefetches"] = prefetch
        if branch.score_threshold is not None:
            extra["score_threshold"] = branch.score_threshold
        with_payload: Any = (
            qe.PayloadSelector.Include(payload) if isinstance(payload, list) else payload
        )
        return qe.QueryRequest(
            limit=n, query=branch.query, filter=flt, with_payload=with_payload, **extra
        )

    # --- engine calls -----------------------------------------------------------------
    def _scroll_page(
        self, flt: Any, limit: int, offset: Any, *, payload: bool | list[str], vector: bool
    ) -> tuple[Any, Any]:
        shard = self._require()
        with_payload: Any = (
            qe.PayloadSelector.Include(payload) if isinstance(payload, list) else payload
        )
        request = qe.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=flt,
            with_payload=with_payload,
            with_vector=[""] if vector else False,
        )
        records, next_offset = self._call("scroll", shard.scroll, request)
        return records, next_offset

    def _facet(self, key: str, limit: int) -> list[tuple[Any, int]]:
        request = qe.FacetRequest(key, limit=limit, exact=True)
        hits = self._call("facet", self._require().facet, request)
        return [(h.value, h.count) for h in hits]

    def _query(self, request: Any) -> Any:
        return self._call("query", self._require().query, request)

    def _query_batch(self, requests: list[Any]) -> Any:
        batch = qe.QueryBatchRequest(requests)
        return self._call("query_batch", self._require().query_batch, batch)

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
        # Vectors first, fsynced: a checkpoint on disk must never claim more than the shard
        # holds, not even after an OS crash (the WAL alone covers a killed process only).
        self.flush()
        try:
            write_atomically(self._path / STATE_FILE, json.dumps(state, sort_keys=True))
        except OSError as e:
            raise self._error("cannot write checkpoint", e) from e

    def optimize(self) -> bool:
        """Build HNSW and merge segments (blocking; ~minutes at 100k points)."""
        shard = self._require()
        started = time.perf_counter()
        changed = self._call("optimize", shard.optimize)
        self.flush()
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


def _shard_config(dim: int, search_threads: int | None) -> qe.EdgeConfig:
    vectors = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, memory=DENSE_MEMORY)
    # IDF is computed by the engine over the shard at query time.
    sparse = {
        SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=INDEX_MEMORY)
    }
    return qe.EdgeConfig(
        vectors=vectors,
        sparse_vectors=sparse,
        hnsw_config=qe.HnswIndexConfig(
            m=HNSW_M,
            ef_construct=HNSW_EF_CONSTRUCT,
            full_scan_threshold=HNSW_FULL_SCAN_KB,
            memory=INDEX_MEMORY,
        ),
        optimizers=qe.EdgeOptimizersConfig(
            default_segment_number=MAX_SEGMENTS,
            max_segment_size=segment_kb(dim),
            indexing_threshold=INDEXING_THRESHOLD_KB,
        ),
        payload_memory=INDEX_MEMORY,
        id_tracker_memory=INDEX_MEMORY,
        max_search_threads=search_threads,
    )


def segment_kb(dim: int) -> int:
    """The engine's max segment size (KB of dense vectors) for SEGMENT_POINTS points."""
    return SEGMENT_POINTS * dim * 4 // 1024


def _persisted_dense_params(config_file: Path) -> dict[str, Any] | None:
    """The default dense vector's params as the engine persisted them, None if unreadable
    (then the shard is loaded as it is: the switch to cold is an optimisation only)."""
    try:
        params = json.loads(config_file.read_text(encoding="utf-8"))["vectors"][""]
        if (
            isinstance(params, dict)
            and "size" in params
            and hasattr(qe.Distance, str(params.get("distance")))
        ):
            return params
    except (OSError, ValueError, KeyError, TypeError):
        pass
    logger.warning("cannot read the dense vector params in %s: loading as is", config_file)
    return None


def write_atomically(path: Path, text: str) -> None:
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
