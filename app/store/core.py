"""The store core: everything both engines do the same way, written once.

`StoreCore` owns the scroll loop, the batch sizes, id normalisation, error wrapping
(`_call`), the filter built from a `SearchFilter`, the payload-index schema mapping, the
hit -> record conversion and the query plans of `search_products` / `similar_products`.
An engine subclass supplies only what differs: the engine's types (small constructor
hooks) and its client calls (`_scroll_page`, `_facet`, `_query`, `_query_batch`), plus
the writes, the schema check and where the sync checkpoint lives.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, ParamSpec, TypeVar

import numpy as np

from app.core.catalog import PAYLOAD_COLUMNS
from app.store.base import (
    COUNT_FIELD,
    GROUP_FIELD,
    INDEXED_FIELDS,
    NAME_FIELD,
    ChunkPoint,
    ProductHit,
    SearchFilter,
    SparseRewrite,
    StoredChunk,
    StoredChunkHit,
    StoreError,
    VectorLike,
    as_float_list,
    name_forms,
    normalize_id,
    stored_chunk,
)
from app.store.grouping import chunk_count, group_hits, grouped_search
from app.store.hybrid import (
    SPARSE_VECTOR,
    FusionSpec,
    SparseVec,
    document_sparse,
    document_terms,
    lexical_depth,
    prefetch_limit,
    relevance_depth,
)
from app.store.relevance import fuse_products

T = TypeVar("T")
P = ParamSpec("P")

# One batch-size policy for both engines. Upserts: 512 points of 384-d dense + BM25 keep a
# remote request well under the server's 32 MB body limit, and are as fast on the embedded
# engine (one WAL op each). Scrolls: payload only, no vectors, so pages can be larger.
UPSERT_BATCH = 512
SCROLL_BATCH = 2048
# The payload fields a search reads when it needs no text: grouping and group sizes.
KEY_FIELDS = [GROUP_FIELD, COUNT_FIELD]
# The payload fields a search returns with each chunk: grouping, the chunk's text and the
# product-level fields an answer shows or a ranker reads (not the sync's bookkeeping).
SEARCH_FIELDS = [*KEY_FIELDS, "text", *PAYLOAD_COLUMNS]
# The catalog's best BM25 chunks read to find its best word match (a number-only match
# aside) when a search is filtered.
NORMALISER_DEPTH = 5
# Chunks assumed for a product stored without its chunk count (before the field existed).
UNKNOWN_CHUNK_COUNT = 16
# How many of a product's own chunk vectors seed a "similar products" recommend query.
SIMILAR_SEEDS = 64

Request = Callable[[int, int | None], Any]


@dataclass(frozen=True, slots=True)
class Branch:
    """One engine query and how to run it: against the BM25 vector or the dense one, and
    with a cosine floor (dense only)."""

    query: Any
    sparse: bool = False
    score_threshold: float | None = None


def dense_vector(point: Any) -> list[float] | None:
    """The dense vector a scored point came back with: bare (a list) or by its name ""."""
    v = point.vector
    if isinstance(v, dict):
        v = v.get("")
    return v if isinstance(v, list) else None


def feedback_query(
    vector: list[float], found: Sequence[list[float]], spec: FusionSpec
) -> list[float]:
    """The query moved towards the mean of the feedback chunks' vectors (unit length)."""
    if not found:
        return vector
    query = np.asarray(vector, dtype=np.float32)
    mean = np.mean(np.asarray(found, dtype=np.float32), axis=0)
    moved = query / np.linalg.norm(query) + spec.feedback_weight * mean
    return as_float_list(moved / np.linalg.norm(moved))


def stored_hit(point: Any) -> StoredChunkHit:
    """A scored point of either engine (both have .id, .score, .payload) as a record."""
    return StoredChunkHit(
        id=str(point.id), score=float(point.score), payload=dict(point.payload or {})
    )


def _products_holding(points: Sequence[Any], terms: frozenset[int]) -> set[Any]:
    """The products of `points` with a chunk whose BM25 side (its text and its product's
    name, as `document_sparse` indexes them) holds one of `terms`."""
    held = set()
    for p in points:
        payload = p.payload or {}
        for field in ("text", "name"):
            value = payload.get(field)
            if isinstance(value, str) and terms & document_terms(value):
                held.add(payload.get(GROUP_FIELD))
                break
    return held


def _best_word_match(points: Sequence[Any], word_terms: frozenset[int] | None) -> float:
    """The best BM25 score among `points` (best first) that is a word match: one holding a
    query term that is no number, when the query has both (see `_relevance_search`)."""
    if word_terms is not None:
        worded = _products_holding(points, word_terms)
        points = [p for p in points if (p.payload or {}).get(GROUP_FIELD) in worded]
    return max((float(p.score) for p in points), default=0.0)


class StoreCore(ABC):
    """The shared half of a `VectorStore`; see the module docstring for the split."""

    # Engine schema type for each INDEXED_FIELDS kind ("integer", "keyword", "float", "text").
    _SCHEMA_TYPES: ClassVar[dict[str, Any]]

    def __init__(
        self,
        *,
        backend: str,
        collection: str,
        guard: contextlib.AbstractContextManager[Any] | None = None,
    ) -> None:
        self._backend = backend
        self._collection = collection
        self._guard: contextlib.AbstractContextManager[Any] = guard or contextlib.nullcontext()

    # --- errors -------------------------------------------------------------------
    def _store_error(self, message: str) -> StoreError:
        return StoreError(message, backend=self._backend, collection=self._collection)

    def _error(self, message: str, cause: Exception) -> StoreError:
        """The StoreError for a raw engine/client failure; engines refine the class."""
        return self._store_error(f"{message}: {cause}")

    def _call(self, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            with self._guard:
                return self._invoke(fn, *args, **kwargs)
        except StoreError:
            raise
        except Exception as e:  # engines raise bare Exception, ValueError, HTTP errors alike
            raise self._error(f"{what} failed", e) from e

    def _invoke(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Where an engine call is made; a server's store sends it on to another node."""
        return fn(*args, **kwargs)

    # --- ids, points, schema ------------------------------------------------------------
    def _ids(self, ids: Sequence[str]) -> list[Any]:
        return [normalize_id(i, backend=self._backend) for i in ids]

    def _point_batches(self, points: Sequence[ChunkPoint]) -> Iterator[list[Any]]:
        """Engine points, UPSERT_BATCH at a time (built lazily, batch by batch)."""
        for start in range(0, len(points), UPSERT_BATCH):
            yield [self._point(p) for p in points[start : start + UPSERT_BATCH]]

    def _point(self, p: ChunkPoint) -> Any:
        # Dense and BM25 in one point, so one upsert writes both: the sparse side never lags.
        vectors: dict[str, Any] = {
            "": as_float_list(p.vector),
            SPARSE_VECTOR: self._sparse_vector(
                document_sparse(str(p.payload.get("text", "")), p.payload.get("name"))
            ),
        }
        return self._make_point(normalize_id(p.id, backend=self._backend), vectors, p.payload)

    def rewrite_sparse(self, chunks: Sequence[SparseRewrite]) -> None:
        """See `VectorStore.rewrite_sparse`: UPSERT_BATCH points per engine call."""
        for start in range(0, len(chunks), UPSERT_BATCH):
            batch = chunks[start : start + UPSERT_BATCH]
            self._update_vectors(
                [
                    (
                        normalize_id(c.id, backend=self._backend),
                        {SPARSE_VECTOR: self._sparse_vector(document_sparse(c.text, c.title))},
                    )
                    for c in batch
                ]
            )

    def _index_schemas(self, fields: Sequence[str] = tuple(INDEXED_FIELDS)) -> dict[str, Any]:
        """Engine schema type of each payload field to index."""
        return {f: self._SCHEMA_TYPES[INDEXED_FIELDS[f]] for f in fields}

    # --- filters --------------------------------------------------------------------
    def _build_filter(
        self,
        flt: SearchFilter | None,
        *,
        product_id: int | None = None,
        exclude: int | None = None,
        products: Sequence[int] = (),
    ) -> Any:
        must: list[Any] = []
        must_not: list[Any] = []
        if flt is not None and flt.category is not None:
            must.append(self._match("category", flt.category))
        if flt is not None and (flt.min_price is not None or flt.max_price is not None):
            bounds = self._range("price", flt.min_price, flt.max_price)
            # must_not also keeps the products without a price: none of them fits a bound.
            (must_not if flt.outside_price else must).append(bounds)
        if flt is not None and (flt.outer_min_price is not None or flt.outer_max_price is not None):
            must.append(self._range("price", flt.outer_min_price, flt.outer_max_price))
        if flt is not None and flt.brands:
            must.append(self._match_any("brand", list(flt.brands)))
        if flt is not None and flt.exclude_brands:
            must_not.append(self._match_any("brand", list(flt.exclude_brands)))
        if flt is not None:
            for phrase in flt.exclude_words:
                must_not += [self._match_text(NAME_FIELD, f) for f in name_forms(phrase)]
        if product_id is not None:
            must.append(self._match(GROUP_FIELD, product_id))
        for only in (products, flt.products if flt is not None else ()):
            if only:
                must.append(self._match_any(GROUP_FIELD, [int(p) for p in only]))
        if flt is not None and flt.exclude_products:
            must_not.append(self._match_any(GROUP_FIELD, [int(p) for p in flt.exclude_products]))
        if exclude is not None:
            must_not.append(self._match(GROUP_FIELD, exclude))
        return self._filter(must, must_not) if must or must_not else None

    def _product_filter(self, product_ids: Sequence[int]) -> Any:
        return self._filter([self._match_any(GROUP_FIELD, [int(p) for p in product_ids])], [])

    # --- reads ---------------------------------------------------------------------
    def _scroll(
        self, flt: Any, batch: int, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        offset: Any = None
        payload: bool | list[str] = True if fields is None else list(fields)
        while True:
            records, offset = self._scroll_page(flt, batch, offset, payload=payload, vector=False)
            for record in records:
                yield stored_chunk(record.id, record.payload)
            if offset is None:
                return

    def chunks_for_products(self, product_ids: Sequence[int]) -> list[StoredChunk]:
        if not product_ids:
            return []
        return list(self._scroll(self._product_filter(product_ids), SCROLL_BATCH))

    def iter_chunks(
        self, batch: int = SCROLL_BATCH, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        return self._scroll(None, batch, fields)

    def keyword_counts(self, field: str, *, limit: int) -> dict[str, int]:
        """See `VectorStore.keyword_counts`."""
        if INDEXED_FIELDS.get(field) != "keyword":
            raise ValueError(f"{field!r} is not an indexed keyword field: {INDEXED_FIELDS}")
        # The edge engine keeps a value whose points were all deleted, counted 0.
        return {str(value): int(n) for value, n in self._facet(field, limit) if n > 0}

    def chunk_ids_without_sparse(self) -> list[str]:
        missing = self._filter([], [self._has_vector(SPARSE_VECTOR)])
        return [c.id for c in self._scroll(missing, SCROLL_BATCH, fields=[GROUP_FIELD])]

    # --- search --------------------------------------------------------------------
    def search_products(
        self,
        vector: VectorLike | None,
        *,
        score_threshold: float | None = None,
        flt: SearchFilter | None = None,
        sparse: SparseVec | None = None,
        fusion: FusionSpec | None = None,
        limit: int,
        chunks_per_product: int,
    ) -> list[ProductHit]:
        """See `VectorStore.search_products`."""
        (page,) = self.search_products_each(
            vector,
            [(flt, limit)],
            score_threshold=score_threshold,
            sparse=sparse,
            fusion=fusion,
            chunks_per_product=chunks_per_product,
        )
        return page

    def search_products_each(
        self,
        vector: VectorLike | None,
        searches: Sequence[tuple[SearchFilter | None, int]],
        *,
        score_threshold: float | None = None,
        sparse: SparseVec | None = None,
        fusion: FusionSpec | None = None,
        chunks_per_product: int,
    ) -> list[list[ProductHit]]:
        """See `VectorStore.search_products_each`. One plan for both engines: dense and
        sparse branches fused by relevance here (every search's requests in one batch), or
        by rrf / dbsf inside the engine, or one of them alone; the filter in every branch,
        the threshold on the fused or dense score."""
        dense = lexical = word_terms = None
        if vector is not None:
            dense = Branch(
                self._dense_query(as_float_list(vector)), score_threshold=score_threshold
            )
        if sparse:
            lexical = Branch(self._sparse_query(sparse), sparse=True)
            if sparse.numbers and sparse.words:
                word_terms = sparse.words
        spec = fusion or FusionSpec()
        if vector is None or lexical is None or spec.method != "relevance":
            requests = [self._branch_request(flt, dense, lexical, spec) for flt, _ in searches]
            limits = [limit for _, limit in searches]
            return self._grouped(requests, limits, chunks_per_product)
        pages = self._relevance_search(
            as_float_list(vector),
            lexical,
            searches,
            spec,
            chunks_per_product=chunks_per_product,
            word_terms=word_terms,
        )
        return [
            [h for h in hits if score_threshold is None or h.score >= score_threshold]
            for hits in pages
        ]

    def search_dense_each(
        self,
        searches: Sequence[tuple[VectorLike, SearchFilter | None, int]],
        *,
        chunks_per_product: int,
        score_threshold: float | None = None,
    ) -> list[list[ProductHit]]:
        """See `VectorStore.search_dense_each`."""
        requests = [
            self._branch_request(
                flt, Branch(self._dense_query(as_float_list(v)), score_threshold=score_threshold)
            )
            for v, flt, _ in searches
        ]
        return self._grouped(requests, [limit for _, _, limit in searches], chunks_per_product)

    def _branch_request(
        self,
        flt: SearchFilter | None,
        dense: Branch | None,
        lexical: Branch | None = None,
        spec: FusionSpec | None = None,
    ) -> Request:
        """One branch alone, or both fused inside the engine (rrf / dbsf), as a request for
        `n` chunks (of one product when given) that `_grouped` groups."""

        def request(n: int, product_id: int | None = None) -> Any:
            f = self._build_filter(flt, product_id=product_id)
            if dense is not None and lexical is not None:
                depth = prefetch_limit(n)
                # The filter goes into each branch: a branch without it would fill the
                # fusion with products the shopper excluded.
                branches = [self._prefetch(dense, f, depth), self._prefetch(lexical, f, depth)]
                fused = Branch(self._fusion(spec or FusionSpec()))
                return self._request(n, fused, f, prefetch=branches, payload=SEARCH_FIELDS)
            if dense is not None:
                return self._request(n, dense, f, payload=SEARCH_FIELDS)
            if lexical is None:
                raise ValueError("search_products needs a dense or a sparse query vector")
            return self._request(n, lexical, f, payload=SEARCH_FIELDS)

        return request

    def _relevance_search(
        self,
        vector: list[float],
        lexical: Branch,
        searches: Sequence[tuple[SearchFilter | None, int]],
        spec: FusionSpec,
        *,
        chunks_per_product: int,
        word_terms: frozenset[int] | None = None,
    ) -> list[list[ProductHit]]:
        """Up to `limit` products under each (filter, limit), fused by relevance
        (app.store.relevance).

        Both branches in one batch, grouped per product here, then fused: every candidate
        of either branch gets a cosine score, so the fusion covers the whole pool, not only
        where the branches overlap.

        One batch is one round trip to a server, every search's requests in it: the dense
        branch, the BM25 branch, and the BM25 branch's chunks scored by cosine (a
        prefetch), each with the payload it needs; under a filter, the catalog's best BM25
        chunks once, what every share is of (a product scores the same under any filter
        that keeps it). A product only BM25 found is scored by the chunks that matched the
        words: its other chunks all lie outside the dense branch's window, so they could
        raise its cosine only where its matched chunks score below the window's last, and
        never above it (docs/decisions/relevance-fusion.md, "What it costs").

        `word_terms`: the query's terms that are not numbers, when it has both. A product whose
        matched chunks hold none of them shares only a number with the query ("Aero 3
        Notebook" for "3 burner stove"): it is no BM25 match, and keeps its cosine alone.

        With feedback (`spec.feedback`) the dense branch runs a second time, its
        query moved towards the best chunks of the first fusion's top products
        (pseudo-relevance feedback): the shopper's few words gain the vocabulary of the
        products that fit them best.
        """
        cosine = Branch(self._dense_query(vector))  # no floor per branch: it cuts the fusion
        built = [(flt, self._build_filter(flt), limit) for flt, limit in searches]
        requests = []
        for _, f, limit in built:
            depth, words = relevance_depth(limit, chunks_per_product), lexical_depth(limit)
            requests += [
                self._request(depth, cosine, f, vectors=spec.feedback, payload=SEARCH_FIELDS),
                # BM25 scores need no text: these chunks are read again below if they matter.
                self._request(words, lexical, f, payload=KEY_FIELDS),
            ]
            # Not with feedback: it moves the query, and these cosines would be the old one's.
            if not spec.feedback:
                lexical_first = [self._prefetch(lexical, f, words)]
                requests.append(
                    self._request(words, cosine, f, lexical_first, payload=SEARCH_FIELDS)
                )
        filtered = any(f is not None for _, f, _ in built)
        if filtered:
            # The best word match of the whole catalog, what a share is of: under "under $80"
            # a waterproof headlamp was the best match of "waterproof hiking backpack" and
            # got the whole lexical weight (docs/decisions/relevance-fusion.md).
            anywhere = SEARCH_FIELDS if word_terms is not None else KEY_FIELDS
            requests.append(self._request(NORMALISER_DEPTH, lexical, None, payload=anywhere))
        answers = self._query_batch(requests)
        lexical_best = _best_word_match(answers[-1], word_terms) if filtered else 0.0
        each = 2 if spec.feedback else 3
        return [
            self._fused_page(
                answers[i * each : (i + 1) * each],
                vector,
                cosine,
                (flt, f, limit),
                spec,
                chunks_per_product=chunks_per_product,
                word_terms=word_terms,
                lexical_best=lexical_best,
            )
            for i, (flt, f, limit) in enumerate(built)
        ]

    def _fused_page(
        self,
        answers: Sequence[Sequence[Any]],
        vector: list[float],
        cosine: Branch,
        search: tuple[SearchFilter | None, Any, int],
        spec: FusionSpec,
        *,
        chunks_per_product: int,
        word_terms: frozenset[int] | None,
        lexical_best: float,
    ) -> list[ProductHit]:
        """One search's page from its answers in the batch (see `_relevance_search`)."""
        flt, f, limit = search
        depth = relevance_depth(limit, chunks_per_product)
        dense_points, lexical_points, *rescored = answers
        by_words = group_hits(map(stored_hit, lexical_points), limit=depth, chunks_per_product=1)
        if word_terms is not None and rescored:
            # The BM25 branch's chunks again, with their text (feedback has none: no check).
            worded = _products_holding(rescored[0], word_terms)
            by_words = [h for h in by_words if h.product_id in worded]
        by_cosine = group_hits(
            map(stored_hit, dense_points), limit=depth, chunks_per_product=chunks_per_product
        )
        if spec.feedback and by_cosine:
            first = fuse_products(
                by_cosine, by_words, spec.lexical_weight, lexical_best=lexical_best
            )
            best_chunks = {h.chunks[0].id for h in first[: spec.feedback_products]}
            seeds = [dense_vector(p) for p in dense_points if str(p.id) in best_chunks]
            moved = feedback_query(vector, [v for v in seeds if v is not None], spec)
            cosine = Branch(self._dense_query(moved))
            by_cosine = group_hits(
                map(
                    stored_hit, self._query(self._request(depth, cosine, f, payload=SEARCH_FIELDS))
                ),
                limit=depth,
                chunks_per_product=chunks_per_product,
            )
        seen = {h.product_id for h in by_cosine}
        dense_found = len(by_cosine)
        missing = [h for h in by_words if h.product_id not in seen]
        if missing:
            known = rescored[0] if rescored else []
            by_cosine += self._cosine_of(missing, known, cosine, flt, chunks_per_product)
        best = fuse_products(
            by_cosine,
            by_words,
            spec.lexical_weight,
            dense_found=dense_found,
            lexical_best=lexical_best,
        )
        if spec.min_cosine is not None:
            # Before the page is cut: a product below the floor leaves room for the next.
            best = [h for h in best if h.signals is None or h.signals.cosine >= spec.min_cosine]
        return best[:limit]

    def _cosine_of(
        self,
        products: list[ProductHit],
        known: Sequence[Any],
        cosine: Branch,
        flt: SearchFilter | None,
        per_product: int,
    ) -> list[ProductHit]:
        """Each product's best chunks by cosine among `known` (the BM25 branch's chunks
        scored by cosine), best product first; one request for the products `known` lacks
        (with feedback, which moves the query after those were scored)."""
        wanted = {h.product_id for h in products}
        points = [p for p in known if (p.payload or {}).get(GROUP_FIELD) in wanted]
        held = {(p.payload or {}).get(GROUP_FIELD) for p in points}
        rest = [h for h in products if h.product_id not in held]
        if rest:
            # Every chunk of those products: each one's best is exact.
            every_chunk = sum(chunk_count(h, default=UNKNOWN_CHUNK_COUNT) for h in rest)
            only = self._build_filter(flt, products=[h.product_id for h in rest])
            points += self._query(self._request(every_chunk, cosine, only, payload=SEARCH_FIELDS))
        # Best first across both sources, as one request's answer would be (sort is stable).
        points.sort(key=lambda p: float(p.score), reverse=True)
        return group_hits(
            map(stored_hit, points), limit=len(products), chunks_per_product=per_product
        )

    def similar_products(
        self,
        product_id: int,
        *,
        flt: SearchFilter | None = None,
        limit: int,
        chunks_per_product: int,
        among: Sequence[int] = (),
    ) -> list[ProductHit] | None:
        """See `VectorStore.similar_products`: up to SIMILAR_SEEDS of the product's own
        chunk vectors seed one recommend query; the product itself is filtered out."""
        own = self._product_filter([product_id])
        records, _ = self._scroll_page(own, SIMILAR_SEEDS, None, payload=False, vector=True)
        # Asking for the default vector alone returns it bare (a list), not by name.
        positives: list[Any] = [r.vector for r in records if isinstance(r.vector, list)]
        if not positives:
            return None
        recommend = Branch(self._recommend(positives))

        def request(n: int, other: int | None = None) -> Any:
            f = self._build_filter(flt, product_id=other, exclude=product_id, products=among)
            return self._request(n, recommend, f, payload=SEARCH_FIELDS)

        (page,) = self._grouped([request], [limit], chunks_per_product)
        return page

    def _grouped(
        self, requests: Sequence[Request], limits: Sequence[int], chunks_per_product: int
    ) -> list[list[ProductHit]]:
        """A page of products for each request and its limit: chunks over-fetched and
        grouped by product (app.store.grouping), each round's requests in one batch."""

        def batch(requests: list[Any]) -> list[list[StoredChunkHit]]:
            return [[stored_hit(p) for p in points] for points in self._query_batch(requests)]

        def top(wanted: Sequence[tuple[int, int]]) -> list[list[StoredChunkHit]]:
            return batch([requests[i](n, None) for i, n in wanted])

        def fill(wanted: Sequence[tuple[int, int]]) -> list[list[StoredChunkHit]]:
            return batch([requests[i](chunks_per_product, p) for i, p in wanted])

        return grouped_search(top, fill, limits=limits, chunks_per_product=chunks_per_product)

    # --- engine hooks: types ------------------------------------------------------------
    @abstractmethod
    def _match(self, key: str, value: Any) -> Any: ...

    @abstractmethod
    def _match_any(self, key: str, values: list[int] | list[str]) -> Any: ...

    @abstractmethod
    def _match_text(self, key: str, text: str) -> Any:
        """Points whose `key` uses every word of `text` (a text-indexed field)."""

    @abstractmethod
    def _range(self, key: str, gte: float | None, lte: float | None) -> Any: ...

    @abstractmethod
    def _has_vector(self, name: str) -> Any: ...

    @abstractmethod
    def _filter(self, must: list[Any], must_not: list[Any]) -> Any: ...

    @abstractmethod
    def _sparse_vector(self, v: SparseVec) -> Any: ...

    @abstractmethod
    def _make_point(
        self, point_id: str, vectors: dict[str, Any], payload: dict[str, Any]
    ) -> Any: ...

    @abstractmethod
    def _dense_query(self, vector: list[float]) -> Any: ...

    @abstractmethod
    def _sparse_query(self, sparse: SparseVec) -> Any: ...

    @abstractmethod
    def _fusion(self, spec: FusionSpec) -> Any: ...

    @abstractmethod
    def _recommend(self, positives: list[Any]) -> Any:
        """A recommend query, best-score strategy, from the seed vectors."""

    @abstractmethod
    def _prefetch(self, branch: Branch, flt: Any, depth: int) -> Any:
        """A prefetch (one branch of a fused query), `depth` candidates deep."""

    @abstractmethod
    def _request(
        self,
        n: int,
        branch: Branch,
        flt: Any,
        prefetch: list[Any] | None = None,
        *,
        vectors: bool = False,
        payload: bool | list[str] = True,
    ) -> Any:
        """A query request for `n` points with their payload (or the named fields of it),
        and their dense vector if asked."""

    # --- engine hooks: calls ------------------------------------------------------------
    @abstractmethod
    def _update_vectors(self, points: list[tuple[str, dict[str, Any]]]) -> None:
        """Replace the named vectors of existing points (id, {name: vector}); acknowledged."""

    @abstractmethod
    def _scroll_page(
        self, flt: Any, limit: int, offset: Any, *, payload: bool | list[str], vector: bool
    ) -> tuple[Sequence[Any], Any]:
        """One scroll call: (records, next offset or None); `vector` asks for the dense one."""

    @abstractmethod
    def _facet(self, key: str, limit: int) -> list[tuple[Any, int]]:
        """One exact facet call over an indexed field: (value, points), most frequent first."""

    @abstractmethod
    def _query(self, request: Any) -> Sequence[Any]:
        """Run one request; its scored points."""

    @abstractmethod
    def _query_batch(self, requests: list[Any]) -> list[Sequence[Any]]:
        """Run requests in one batch; the scored points of each."""
