"""Retriever over an in-memory store filled the way the sync fills it (no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from app.core.catalog import Product
from app.core.config import Settings
from app.eval.index import build_chunk_index
from app.query import FilterPlan, constrained_retrieve
from app.retrieval import Retriever, chunk_body
from app.store import SearchFilter
from app.store.hybrid import FusionSpec


def test_chunk_body_drops_the_header_line_only() -> None:
    assert chunk_body("Mug\nHolds tea.\nAnd coffee.") == "Holds tea.\nAnd coffee."
    assert chunk_body("Mug") == "Mug"


def _products() -> list[Product]:
    def p(pid: int, name: str, text: str, cat: str, price: float) -> Product:
        return Product(pid, 1, name, text, cat, "Acme", price)

    return [
        p(1, "Swim Buds", "Waterproof earbuds for swimming laps in the pool.", "audio", 59.0),
        p(2, "Trail Tent", "A two-person tent for backpacking and camping.", "outdoor", 199.0),
        p(3, "Pool Phones", "Bone-conduction headphones for open-water swimming.", "audio", 129.0),
        p(4, "Coffee Grinder", "Burr grinder for espresso and filter coffee.", "kitchen", 89.0),
    ]


def test_retrieve_groups_filters_and_thresholds(embedder: Any) -> None:
    settings = Settings(
        qdrant_path=":memory:",
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        retrieval_mode="dense",
    )
    store = build_chunk_index(_products(), settings, embedder)
    retriever = Retriever(embedder, store, settings)

    hits = retriever.retrieve("headphones for swimming", top_k=2)
    assert {h.id for h in hits} == {1, 3}
    assert hits[0].score >= hits[1].score >= settings.similarity_threshold
    assert hits[0].matched_content[0].startswith(("Waterproof", "Bone-conduction"))

    cheap = retriever.retrieve(
        "headphones for swimming", top_k=4, filters=SearchFilter(max_price=100)
    )
    assert cheap and all(h.price is not None and h.price <= 100 for h in cheap)
    assert [h.id for h in retriever.retrieve("camping", 4, SearchFilter(category="audio"))] in (
        [],
        [1],
        [3],
        [1, 3],
        [3, 1],
    )
    # Nothing about unrelated text clears the threshold.
    strict = Retriever(embedder, store, settings.model_copy(update={"similarity_threshold": 0.99}))
    assert strict.retrieve("headphones for swimming", top_k=4) == []


def test_the_relevance_floor_cuts_the_fused_score_bm25_matches_included(embedder: Any) -> None:
    settings = Settings(qdrant_path=":memory:", max_chunk_tokens=64, chunk_overlap_tokens=8)
    store = build_chunk_index(_products(), settings, embedder)
    hybrid = Retriever(embedder, store, settings)
    # The service's fusion, without feedback: the cosine part is the query's own.
    assert hybrid.fusion == FusionSpec(lexical_weight=0.4, min_cosine=0.15)
    assert settings.retrieval_mode == "hybrid"
    hits = hybrid.retrieve("headphones for swimming", top_k=2)
    assert [h.id for h in hits] == [3, 1]
    dense = Retriever(embedder, store, settings.model_copy(update={"retrieval_mode": "dense"}))
    cosine = {h.id: h.score for h in dense.retrieve("headphones for swimming", top_k=4)}
    # Relevance = cosine + the lexical weight x BM25 / the best BM25: 3 has both words (the
    # best BM25 match), 1 only "swimming" (stemmed "swim").
    weight = settings.fusion_lexical_weight
    assert hits[0].score == pytest.approx(cosine[3] + weight, abs=1e-5)
    assert cosine[1] < hits[1].score < cosine[1] + weight

    # A floor above every fused score leaves nothing: a BM25 match does not bypass it (as
    # it did when the floor bounded the dense branch only and RRF fused the ranks).
    floor = hits[0].score + 0.01
    strict = Retriever(embedder, store, settings.model_copy(update={"similarity_threshold": floor}))
    assert strict.retrieve("headphones for swimming", top_k=4) == []
    # A query with no BM25 term left (all stopwords) is dense-only, and cut by the floor.
    assert strict.retrieve("for the", top_k=4) == []
    sparse_only = Retriever(
        embedder, store, settings.model_copy(update={"retrieval_mode": "sparse"})
    )
    assert sparse_only.retrieve("for the", top_k=4) == []
    assert [h.id for h in sparse_only.retrieve("espresso", top_k=4)] == [4]


def test_a_shared_word_does_not_carry_an_unrelated_product_past_the_cosine_floor(
    embedder: Any,
) -> None:
    """The fused floor lets the best BM25 match add the whole lexical weight, whatever its
    cosine; RELEVANCE_MIN_COSINE is the floor on meaning alone."""
    settings = Settings(qdrant_path=":memory:", max_chunk_tokens=64, chunk_overlap_tokens=8)
    store = build_chunk_index(_products(), settings, embedder)
    query = "bone broth soup"  # "bone": the headphones' bone conduction, not their kind
    off = Retriever(embedder, store, settings.model_copy(update={"relevance_min_cosine": -1.0}))
    (phones,) = [h for h in off.candidates(query, 4) if h.product_id == 3]
    assert phones.signals is not None and phones.signals.bm25_share == 1.0
    floor = settings.relevance_min_cosine
    assert phones.signals.cosine < floor <= phones.score - settings.similarity_threshold
    assert 3 in [h.id for h in off.retrieve(query, top_k=4)]  # past the fused floor alone
    served = Retriever(embedder, store, settings)
    assert 3 not in [h.id for h in served.retrieve(query, top_k=4)]
    # Products that mean the query keep their places.
    assert [h.id for h in served.retrieve("headphones for swimming", top_k=2)] == [3, 1]


class _CountingEncoder:
    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> Any:
        self.texts.extend(texts)
        return self.embedder.embed(texts)


def test_a_request_that_searches_twice_embeds_its_query_once(embedder: Any) -> None:
    # Nothing inside the price bounds: the nearest-matches search runs after the first.
    settings = Settings(qdrant_path=":memory:", max_chunk_tokens=64, chunk_overlap_tokens=8)
    store = build_chunk_index(_products(), settings, embedder)
    encoder = _CountingEncoder(embedder)
    retriever = Retriever(encoder, store, settings)
    plan = FilterPlan(SearchFilter(max_price=10.0), applied=(), prefer_low_price=False)
    outcome = constrained_retrieve(retriever, "headphones for swimming", 2, plan)
    assert outcome.nearest and {p.id for p in outcome.products} == {1, 3}
    assert encoder.texts == ["headphones for swimming"]


def test_inside_a_category_its_own_name_is_no_word_match(embedder: Any) -> None:
    """The demo's "a book about space" (books heard as the category): "the first book in a
    trilogy" made a historical novel the query's best BM25 match, worth the whole lexical
    weight over the night-sky guide, for a word every product in the filter is."""

    def book(pid: int, name: str, text: str) -> Product:
        return Product(pid, 1, name, text, "books", "Blue Lantern Books", 20.0)

    novel = "A richly imagined story about family. The first book in a trilogy."
    guide = "A pocket field guide to the stars, planets and constellations."
    catalog = [
        book(1, "Drift Plus Historical Novel", novel),
        book(2, "Ember 3 Night Sky Field Guide", guide),
        *_products(),
    ]
    settings = Settings(qdrant_path=":memory:", max_chunk_tokens=64, chunk_overlap_tokens=8)
    store = build_chunk_index(catalog, settings, embedder)
    retriever = Retriever(embedder, store, settings)
    books = SearchFilter(category="books")
    query = "a book about space"
    hits = {h.product_id: h for h in retriever.candidates(query, 2, books)}
    assert set(hits) == {1, 2}
    assert all(h.signals is not None and h.signals.bm25 == 0 for h in hits.values())
    assert hits[2].score > hits[1].score
    # Without the filter the word still counts: there it tells a book from the rest.
    anywhere = {h.product_id: h for h in retriever.candidates(query, 6)}
    assert anywhere[1].signals is not None and anywhere[1].signals.bm25_share == 1.0
    assert anywhere[1].score > anywhere[2].score
    # The name alone is the query's every word ("books under 15"): it stays a term, so the
    # books that say it are still word matches (the "nothing close" bar counts on that).
    (alone,) = retriever.candidates("books", 1, books)
    assert alone.product_id == 1 and alone.signals is not None and alone.signals.bm25 > 0
    # The name is no stopword to the other words: "trilogy" still matches.
    (first,) = retriever.candidates("a trilogy book", 1, books)
    assert first.product_id == 1 and first.signals is not None and first.signals.bm25 > 0
