"""Query → distinct products: embed with the chunks' model, search the store, shape results.

By default a query runs both ways, dense (the chunks' model) and BM25 with title words
weighted twice (app.store.hybrid), fused per product by relevance (app.store.relevance):
on real catalogs, titles only and long descriptions alike, it scores at least as well as
the better branch alone (`python -m app.eval --dataset`, BENCHMARKS.md). Grouping, filters
and the relevance floor all run inside the store's search (`VectorStore.search_products`),
so a filter never shrinks a page that enough matching products could fill. A product
ranks by its best chunk.

With a learned ranker (LEARNED_MODEL, app.ranking) a hybrid search fetches
RANKER_CANDIDATES products (or the page, if larger), re-orders the first
RANKER_CANDIDATES by the ranker (a larger page keeps the rest in the fused order below
them) and scores each with its calibrated probability of relevance; without one, the fused
order and score as they are. `candidates` is the search alone, what training reads features of.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from app.core.config import Settings
from app.embedding.model import Vectors
from app.ranking import Ranker
from app.retrieval.popularity import popularity
from app.retrieval.types import RetrievedProduct
from app.store.base import NAME_FIELD, ProductHit, SearchFilter, VectorStore
from app.store.hybrid import FusionSpec, RetrievalMode, SparseVec, query_sparse

logger = logging.getLogger(__name__)


# The cut's threshold when neither RANKER_MIN_PROBABILITY nor the model's cut.json sets one.
DEFAULT_MIN_PROBABILITY = 0.3


def _min_probability(settings: Settings, ranker: Ranker | None) -> float:
    if settings.ranker_min_probability is not None:
        return settings.ranker_min_probability
    if ranker is not None and ranker.min_probability is not None:
        return ranker.min_probability
    return DEFAULT_MIN_PROBABILITY


def chunk_body(text: str) -> str:
    """A chunk's text without its header line (the product name).

    Header-only chunks (products without a description) keep the header: it is all there is.
    """
    _, sep, body = text.partition("\n")
    return body.strip() if sep and body.strip() else text.strip()


def to_retrieved(hit: ProductHit, score: float | None = None) -> RetrievedProduct:
    """The product as retrieval returns it; `score` replaces the hit's (a ranker's)."""
    payload = hit.chunks[0].payload if hit.chunks else {}
    price = payload.get("price")
    return RetrievedProduct(
        id=hit.product_id,
        name=str(payload.get("name") or ""),
        category=payload.get("category"),
        brand=payload.get("brand"),
        price=float(price) if isinstance(price, int | float) else None,
        score=round(hit.score if score is None else score, 6),
        matched_content=[chunk_body(str(c.payload.get("text", ""))) for c in hit.chunks],
        popularity=popularity(payload),
    )


class QueryEncoder(Protocol):
    def embed(self, texts: list[str]) -> Vectors: ...


@dataclass(slots=True)
class Query:
    """A query's text and its two vectors, each computed on first use and then kept.

    Pass one `Query` to every search of one request: the nearest-matches search after an
    empty page re-used to embed the text again (a third of the bench's filtered requests,
    ~2 ms each). Per request only: it is not a cache, and not shared between threads.
    """

    text: str
    dense: npt.NDArray[np.float32] | None = None
    sparse: SparseVec | None = None
    # The words BM25 matches, when not all of `text` ("a gift for a runner": "for a runner").
    lexical: str | None = None

    @property
    def words(self) -> str:
        """What is matched word for word: BM25, and the ranker's word-match features."""
        return self.text if self.lexical is None else self.lexical


class Retriever:
    """Args:
    embedder: the model the chunks were embedded with, or an encoder giving the same
        vectors faster (app.embedding.onnx_query).
    store: the vector store the sync writes.
    settings: threshold, chunks-per-product, mode and lexical weight come from here.
    fusion: how a hybrid query fuses; by default the service's relevance fusion at
        FUSION_LEXICAL_WEIGHT (`python -m app.eval` passes others to compare).
    ranker: a learned ranker (app.ranking.ranker_for(LEARNED_MODEL)); None keeps the
        fused order.
    version: which encoder and ranking answer (`<model id>|<ranking>`), shown on every
        answer and recorded with its impression (app/api/services.py).
    """

    def __init__(
        self,
        embedder: QueryEncoder,
        store: VectorStore,
        settings: Settings,
        fusion: FusionSpec | None = None,
        ranker: Ranker | None = None,
        version: str = "",
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.ranker = ranker
        self.version = version
        self.ranker_candidates = settings.ranker_candidates
        self.min_probability = _min_probability(settings, ranker)
        self.similarity_threshold = settings.similarity_threshold
        self.chunks_per_product = settings.max_chunks_per_product
        self.default_top_k = settings.vector_search_top_k
        self.mode = settings.retrieval_mode
        self.relevance_margin = settings.relevance_margin
        self._close_match = settings.relevance_close_match
        self._popularity_weight = settings.popularity_weight
        self.fusion = fusion or FusionSpec(
            lexical_weight=settings.fusion_lexical_weight,
            min_cosine=settings.relevance_min_cosine,
        )

    @property
    def scores_are_similarities(self) -> bool:
        """Whether scores are on one scale for every query (so a margin or a price
        trade-off means the same everywhere): cosine (dense), relevance (hybrid fused by
        relevance) or, with a ranker over it, a probability; not BM25 or RRF."""
        return self.mode == "dense" or self._fused_by_relevance(self.mode)

    @property
    def popularity_weight(self) -> float:
        """What a product's popularity adds to its relevance at most; 0 under a learned
        ranker, which reads the product signals itself and scores by P(relevant): a re-sort
        by those scores plus a prior would throw its order away."""
        return 0.0 if self.ranks_by_probability else self._popularity_weight

    @property
    def close_match_score(self) -> float | None:
        """The relevance the best match needs to be called a close one (RELEVANCE_CLOSE_MATCH),
        or None: scores on another scale (a ranker's probability, whose cut decides; a
        cosine alone; a similarity to a product)."""
        if self.ranker is not None or not self._fused_by_relevance(self.mode):
            return None
        return self._close_match or None

    @property
    def ranks_by_probability(self) -> bool:
        """Whether `retrieve` (in the default mode) scores by a calibrated P(relevant)."""
        return self.ranker is not None and self._fused_by_relevance(self.mode)

    def _fused_by_relevance(self, mode: RetrievalMode) -> bool:
        return mode == "hybrid" and self.fusion.method == "relevance"

    def retrieve(
        self,
        query: str | Query,
        top_k: int | None = None,
        filters: SearchFilter | None = None,
        *,
        mode: RetrievalMode | None = None,
        floor: bool = True,
    ) -> list[RetrievedProduct]:
        """Up to `top_k` distinct products for `query`, best first (blocking: call off-loop).

        Args:
            query: the text, or a `Query` whose vectors this call computes if missing and
                leaves in it for the request's next search.
            mode: overrides RETRIEVAL_MODE for this call, e.g. "dense" where a caller
                compares scores as similarities (RRF scores are rank-based).
            floor: False leaves SIMILARITY_THRESHOLD out (a shopper browsing a category,
                where every product is what was asked for).

        Raises:
            StoreError: the vector store failed.
        """
        mode = mode or self.mode
        limit = top_k or self.default_top_k
        q = query if isinstance(query, Query) else Query(query)
        flt = None if filters is None or filters.is_empty else filters
        if self.ranker is None or not self._fused_by_relevance(mode):
            hits = self.candidates(q, limit, flt, mode=mode, floor=floor)
            return [to_retrieved(h) for h in hits]
        # A page deeper than RANKER_CANDIDATES (app.eval's top 100) keeps the top the service
        # shows: the ranker re-orders the first RANKER_CANDIDATES, the rest stay fused.
        hits = self.candidates(q, max(limit, self.ranker_candidates), flt, mode=mode, floor=floor)
        ranked = self.ranker.rank(q.words, flt, hits, self.ranker_candidates)[:limit]
        return [to_retrieved(r.hit, r.probability) for r in ranked]

    def candidates(
        self,
        query: str | Query,
        limit: int,
        filters: SearchFilter | None = None,
        *,
        mode: RetrievalMode | None = None,
        floor: bool = True,
    ) -> list[ProductHit]:
        """The store's products for `query` in the fused order, with their branch signals
        (what a ranker re-orders, at training and at serving alike).

        Raises:
            StoreError: the vector store failed.
        """
        (page,) = self._search(query, [(filters, limit)], mode or self.mode, floor)
        return page

    def retrieve_each(
        self,
        query: str | Query,
        searches: Sequence[tuple[SearchFilter | None, int]],
        *,
        mode: RetrievalMode | None = None,
        floor: bool = True,
    ) -> list[list[RetrievedProduct]]:
        """`retrieve` under each (filters, top_k), in their order: with the fused ranking,
        in one batch of engine requests (one round trip to a server), when they share a
        category; else one search after another.

        Raises:
            StoreError: the vector store failed.
        """
        mode = mode or self.mode
        q = query if isinstance(query, Query) else Query(query)
        categories = {f.category if f is not None else None for f, _ in searches}
        if (self.ranker is not None and self._fused_by_relevance(mode)) or len(categories) > 1:
            return [self.retrieve(q, k, f, mode=mode, floor=floor) for f, k in searches]
        pages = self._search(q, searches, mode, floor)
        return [[to_retrieved(h) for h in page] for page in pages]

    def browse_each(
        self, searches: Sequence[tuple[Query, SearchFilter | None, int]]
    ) -> list[list[RetrievedProduct]]:
        """Up to `top_k` products for each (query, filters, top_k), in their order, by
        meaning alone and with no floor (a shelf: a category browsed by its name, where
        every product is one of what was asked for): the vectors the queries lack from one
        encoder call, every search in one store call (one round trip to a server that
        groups in the client; Qdrant's group-by takes one search at a time).

        Raises:
            StoreError: the vector store failed.
        """
        missing = list({id(q): q for q, _, _ in searches if q.dense is None}.values())
        if missing:
            vectors = self.embedder.embed([q.text for q in missing])
            for q, vector in zip(missing, vectors, strict=True):
                q.dense = vector
        pages = self.store.search_dense_each(
            [(_vector(q), None if f is None or f.is_empty else f, k) for q, f, k in searches],
            chunks_per_product=self.chunks_per_product,
        )
        return [[to_retrieved(h) for h in page] for page in pages]

    def _search(
        self,
        query: str | Query,
        searches: Sequence[tuple[SearchFilter | None, int]],
        mode: RetrievalMode,
        floor: bool = True,
    ) -> list[list[ProductHit]]:
        """The store's pages for `query` under each (filters, limit); the filters share one
        category (it shapes the BM25 query)."""
        q = query if isinstance(query, Query) else Query(query)
        if mode != "sparse" and q.dense is None:
            q.dense = self.embedder.embed([q.text])[0]
        if mode != "dense" and q.sparse is None:
            q.sparse = query_sparse(q.words)
        vector = q.dense if mode != "sparse" else None
        sparse = q.sparse if mode != "dense" else None
        category = searches[0][0].category if searches and searches[0][0] is not None else None
        if vector is not None and sparse is not None and category:
            # Inside a category its own name tells its products apart only by whether their
            # text happens to repeat it: "a book about space" put the novel whose blurb says
            # "the first book in a trilogy" above the night-sky guides. Not when the name is
            # all the words there are ("books under 15": every product there is one), and
            # not without a dense branch (BM25 would have nothing left to rank by).
            rest = sparse.without(query_sparse(category).words)
            sparse = rest if rest.words else sparse
        if sparse is not None and not sparse.indices:
            # No term survives (only stopwords/punctuation): BM25 has nothing to add.
            sparse = None
            if vector is None:
                return [[] for _ in searches]
        return self.store.search_products_each(
            vector,
            [(None if f is None or f.is_empty else f, limit) for f, limit in searches],
            chunks_per_product=self.chunks_per_product,
            score_threshold=self.similarity_threshold if floor else None,
            sparse=sparse,
            fusion=self.fusion,
        )

    def about(
        self, product_ids: Sequence[int], text: str, *, ranked: bool = False
    ) -> list[RetrievedProduct]:
        """The products `product_ids` in that order (`ranked`: nearest to `text` first), each
        with its chunks nearest to `text` (a question about products shown: "is the second
        one waterproof?"), however far: no threshold, no cut. A product no longer in the
        index is left out (blocking).

        Raises:
            StoreError: the vector store failed.
        """
        ids = tuple(dict.fromkeys(product_ids))
        if not ids:
            return []
        hits = self.store.search_products(
            self.embedder.embed([text])[0],
            limit=len(ids),
            chunks_per_product=self.chunks_per_product,
            flt=SearchFilter(products=ids),
        )
        if ranked:
            return [to_retrieved(h) for h in hits]
        found = {h.product_id: to_retrieved(h) for h in hits}
        return [found[i] for i in ids if i in found]

    def product_name(self, product_id: int) -> str | None:
        """The product's name as the index holds it; None when it is not in the index
        (blocking).

        Raises:
            StoreError: the vector store failed.
        """
        for chunk in self.store.chunks_for_products([product_id]):
            name = chunk.payload.get(NAME_FIELD)
            if isinstance(name, str):
                return name
        return None

    def similar(
        self,
        product_id: int,
        top_k: int | None = None,
        filters: SearchFilter | None = None,
        among: Sequence[int] = (),
    ) -> list[RetrievedProduct] | None:
        """Products like `product_id` (its own chunks as the example), itself excluded, only
        `among` these when given; None when the product is not in the index (blocking: call
        off-loop).

        Raises:
            StoreError: the vector store failed.
        """
        hits = self.store.similar_products(
            product_id,
            limit=top_k or self.default_top_k,
            chunks_per_product=self.chunks_per_product,
            flt=None if filters is None or filters.is_empty else filters,
            among=among,
        )
        return None if hits is None else [to_retrieved(h) for h in hits]


def _vector(query: Query) -> npt.NDArray[np.float32]:
    if query.dense is None:
        raise ValueError(f"no vector for {query.text!r}")  # browse_each embeds them first
    return query.dense
