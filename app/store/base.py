"""The vector-store contract shared by the sync (writer) and retrieval (reader).

Two backends implement it: `QdrantClientStore` (a Qdrant server, or qdrant-client's
in-memory local mode for tests) and `EdgeStore` (the embedded qdrant-edge engine on
disk). Both must give the same answers for the same calls;
tests/store/test_store_contract.py checks that.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from app.core.errors import RecommenderError, TerminalError
from app.core.words import plain_forms, split_words
from app.store.hybrid import FusionSpec, SparseVec

VectorLike = Sequence[float] | npt.NDArray[np.floating[Any]]

# Payload fields with an index: product_id for grouping and per-product deletes, the
# others for the retrieval filters (applied inside the vector search) and their facets;
# name's words for the words a shopper does not want ("not over-ear").
INDEXED_FIELDS: dict[str, str] = {
    "product_id": "integer",
    "category": "keyword",
    "price": "float",
    "brand": "keyword",
    "name": "text",
}
NAME_FIELD = "name"
GROUP_FIELD = "product_id"
# How many chunks the chunk's product has (written by the sync; read by app.store.grouping).
COUNT_FIELD = "chunk_count"


class StoreError(RecommenderError):
    """Any failure of the vector store; raw client/engine errors are chained as __cause__."""

    def __init__(self, message: str, *, backend: str, collection: str | None = None) -> None:
        self.backend = backend
        self.collection = collection
        where = f"backend={backend}" + (f", collection={collection}" if collection else "")
        super().__init__(f"{message} ({where})")


class StoreDimensionError(StoreError, TerminalError):
    """The existing collection was built for vectors of another size (a different model)."""


class StoreSchemaError(StoreError, TerminalError):
    """The existing collection lacks a vector this version writes (built before hybrid search)."""


class StoreLockedError(StoreError):
    """The on-disk store is open in another process (the embedded engine is single-writer)."""


class StoreFencedError(StoreError):
    """The server refused a write fenced by a sync lease that passed to another syncer."""


@dataclass(frozen=True, slots=True)
class ChunkPoint:
    """One chunk as the sync writes it. `id` is a UUID string keyed by content."""

    id: str
    vector: VectorLike
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SparseRewrite:
    """A kept chunk's BM25 vector to compute again (from its text and its product's title)."""

    id: str
    text: str
    title: str | None


@dataclass(frozen=True, slots=True)
class PayloadUpdate:
    """Fields to merge into the payload of existing points."""

    ids: Sequence[str]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """One chunk as reads give it back (payload only, no vector)."""

    id: str
    product_id: int
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredChunkHit:
    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BranchSignals:
    """What each branch of a relevance-fused search said about one product: the inputs a
    learned ranker reads (app.ranking.features), the same at training and at serving.

    `dense_rank` / `lexical_rank` are 1-based places in that branch's own product list;
    None when the branch did not find the product (its cosine is then read apart, and its
    BM25 is 0).
    """

    cosine: float
    bm25: float
    bm25_share: float
    dense_rank: int | None
    lexical_rank: int | None
    fused: float


@dataclass(frozen=True, slots=True)
class ProductHit:
    """One distinct product from a grouped search; `chunks` are best first. `signals`:
    per-branch scores, set by relevance fusion only."""

    product_id: int
    score: float
    chunks: list[StoredChunkHit] = field(default_factory=list)
    signals: BranchSignals | None = None


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Retrieval filters; bounds are inclusive. All None (and no brands) means no filter.

    `brands`: only products of one of these (exact payload values); `exclude_brands`: none
    of these (a product without a brand is never excluded). `exclude_words`: no product
    whose name uses all the words of one of these phrases (any case, the last word also
    singular or plural: `name_forms`). `products`: only these products (a question about
    products shown); `exclude_products`: none of these ("show me more": those shown
    already). `outside_price`: the price
    bounds turned inside out, only products outside them or without a price (the search
    for the closest products when too few fit a budget). `outer_min_price` /
    `outer_max_price`: bounds no product passes, inside the price bounds or outside them:
    the wider ones a narrower bound replaced in a conversation (after "under $200",
    "cheaper" caps the price at $140; what is offered above the cap stays under $200).
    """

    category: str | None = None
    min_price: float | None = None
    max_price: float | None = None
    brands: tuple[str, ...] = ()
    exclude_brands: tuple[str, ...] = ()
    exclude_words: tuple[str, ...] = ()
    products: tuple[int, ...] = ()
    exclude_products: tuple[int, ...] = ()
    outside_price: bool = False
    outer_min_price: float | None = None
    outer_max_price: float | None = None

    @property
    def is_empty(self) -> bool:
        return (
            self.category is None
            and self.min_price is None
            and self.max_price is None
            and not self.brands
            and not self.exclude_brands
            and not self.exclude_words
            and not self.products
            and not self.exclude_products
            and self.outer_min_price is None
            and self.outer_max_price is None
        )


def name_forms(phrase: str) -> list[str]:
    """The phrases a name must not use for `phrase` to exclude it: the phrase with its last
    word in each of its plain forms ("backpacks": "backpack"). The engines match a phrase's
    words in any order and case, whole words only (word tokenizer, no stemmer: qdrant-client's
    local mode can do no more, so every engine answers alike)."""
    words = split_words(phrase)
    if not words:
        return []
    *head, last = words
    return [" ".join([*head, f]) for f in plain_forms(last)]


class VectorStore(Protocol):
    """What the sync and retrieval need from a vector store. Scores are cosine similarity."""

    def ensure_collection(self, dim: int) -> None:
        """Create the collection (and payload indexes) if missing.

        Raises:
            StoreDimensionError: the existing collection holds vectors of another size.
        """
        ...

    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        """Insert or replace points; acknowledged and on disk (if persistent) on return."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""
        ...

    def delete_products(self, product_ids: Sequence[int]) -> None:
        """Delete every chunk of the given products."""
        ...

    def set_payloads(self, updates: Sequence[PayloadUpdate]) -> None:
        """Merge each update's payload into its points (no re-embedding), in one
        acknowledged round-trip: a price change of 1,000 products is one call, not 1,000.
        Unknown ids raise StoreError."""
        ...

    def rewrite_sparse(self, chunks: Sequence[SparseRewrite]) -> None:
        """Replace the BM25 vector of existing points (the current SPARSE_FORMAT), leaving
        their dense vector and payload as they are; acknowledged on return."""
        ...

    def chunks_for_products(self, product_ids: Sequence[int]) -> list[StoredChunk]:
        """All chunks of the given products, ordered by id."""
        ...

    def iter_chunks(
        self, batch: int = 2048, fields: Sequence[str] | None = None
    ) -> Iterator[StoredChunk]:
        """Every chunk in the store, ordered by id, fetched `batch` at a time.

        `fields` limits the payload returned (e.g. just product_id for a key reconciliation:
        200k chunk texts are ~200 MB to scroll through for nothing).
        """
        ...

    def count(self) -> int: ...

    def keyword_counts(self, field: str, *, limit: int) -> dict[str, int]:
        """How many chunks carry each value of an indexed keyword field, for the `limit`
        most frequent values; {} when no chunk has one (an empty store included).

        Counted exactly by the engine's facet over the field's payload index, not by
        reading points: milliseconds where a scroll of every chunk takes seconds at 1M
        (qdrant-client's local mode has no indexes and counts its payloads: tests only).
        Chunks, not products: a product counts once per chunk.

        Raises:
            ValueError: `field` is not a keyword field of INDEXED_FIELDS (the engines can
                only facet over an index).
            StoreError: the read failed (no collection yet included).
        """
        ...

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
        """Up to `limit` distinct products, best first, each with its best chunks.

        `vector` alone ranks by cosine, `sparse` alone by BM25, both by fusing the two
        branches (`fusion`; default relevance fusion per product, app.store.relevance;
        rrf / dbsf inside the engine, for comparison). In relevance fusion a product that
        shares only `sparse.numbers` with a query that has words too is no BM25 match.
        The filter applies in every branch; the threshold cuts the relevance score, or
        the dense branch's cosine.
        Filters and the threshold are applied inside the search, so a filter never
        shrinks the result below `limit` when enough matching products exist.
        """
        ...

    def search_products_each(
        self,
        vector: VectorLike | None,
        searches: Sequence[tuple[SearchFilter | None, int]],
        *,
        chunks_per_product: int,
        score_threshold: float | None = None,
        sparse: SparseVec | None = None,
        fusion: FusionSpec | None = None,
    ) -> list[list[ProductHit]]:
        """`search_products` under each (filter, limit) of `searches`, a page each, in
        their order; with relevance fusion every search's requests go in one batch (one
        round trip to a server)."""
        ...

    def search_dense_each(
        self,
        searches: Sequence[tuple[VectorLike, SearchFilter | None, int]],
        *,
        chunks_per_product: int,
        score_threshold: float | None = None,
    ) -> list[list[ProductHit]]:
        """A page of distinct products for each (query vector, filter, limit), by cosine
        alone, in their order: every search's requests in one batch where the engine can
        (one round trip to a server, not one per search)."""
        ...

    def similar_products(
        self,
        product_id: int,
        *,
        limit: int,
        chunks_per_product: int,
        flt: SearchFilter | None = None,
        among: Sequence[int] = (),
    ) -> list[ProductHit] | None:
        """Products whose chunks are nearest to this product's chunks (the engine's
        recommend query, best-score strategy), the product itself excluded, only `among`
        these when given; None when the product has no chunks in the store."""
        ...

    def chunk_ids_without_sparse(self) -> list[str]:
        """Ids of chunks stored without their BM25 vector (a mirror check: they are stale)."""
        ...

    def load_state(self) -> dict[str, Any] | None:
        """The sync checkpoint saved with these vectors, or None if there is none."""
        ...

    def save_state(self, state: dict[str, Any]) -> None:
        """Persist the sync checkpoint; durable on return, never ahead of the vectors."""
        ...

    def optimize(self) -> bool:
        """Build search indexes now if the backend needs it done by hand; True if work was done."""
        ...

    def close(self) -> None: ...


def normalize_id(point_id: str, *, backend: str) -> str:
    """Canonical UUID text, so both backends store and return the same id strings."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError as e:
        raise StoreError(f"point id {point_id!r} is not a UUID", backend=backend) from e


def as_float_list(vector: VectorLike) -> list[float]:
    # float32 first: both engines store float32, so the two backends score the same numbers.
    values: list[float] = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()
    return values


def stored_chunk(point_id: object, payload: dict[str, Any] | None) -> StoredChunk:
    body = dict(payload or {})
    return StoredChunk(id=str(point_id), product_id=int(body.get(GROUP_FIELD, -1)), payload=body)
