"""Hybrid search in both engines: BM25 written with every point, filters in every branch,
the two engines agreeing, the recommend query, and an index built before hybrid search.

Data: 300 products, one chunk each, 16-d vectors from a fixed seed; every product's text
names its category's goods, and product 0..2 also say "swimming" (the query's keyword).
Category "audio" holds every tenth product (30), so a query aimed elsewhere finds few
audio products among either branch's first candidates: a filter applied after the
prefetch instead of inside it would come back short.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe

from app.core.config import Settings
from app.store import ChunkPoint, ProductHit, SearchFilter, VectorStore, open_store
from app.store.base import StoreSchemaError
from app.store.edge_store import EdgeStore
from app.store.hybrid import SPARSE_VECTOR, FusionSpec, query_sparse, relevance_depth

DIM = 16
GOODS = {
    "audio": "wireless earbuds",
    "outdoor": "trail tent",
    "kitchen": "coffee grinder",
    "shoes": "running shoe",
}


def _category(pid: int) -> str:
    return "audio" if pid % 10 == 0 else ["outdoor", "kitchen", "shoes"][pid % 3]


def _points() -> list[ChunkPoint]:
    rng = np.random.default_rng(11)
    points = []
    for pid in range(300):
        category = _category(pid)
        text = f"Product {pid}\n{GOODS[category]} model {pid}"
        if pid % 100 < 3:
            # Lengths differ, so no two BM25 scores tie.
            text += " for swimming" + " pools" * (pid % 100 + 3 * (pid // 100))
        payload: dict[str, Any] = {
            "product_id": pid,
            "chunk_index": 0,
            "text": text,
            "name": f"Product {pid}",
            "category": category,
            "price": float(10 + pid % 50),
        }
        point_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"hybrid/{pid}"))
        points.append(ChunkPoint(point_id, rng.normal(size=DIM).astype(np.float32), payload))
    return points


POINTS = _points()
# Aimed at product 7 (outdoor) densely, at "swimming" lexically.
QUERY = np.asarray(POINTS[7].vector) + 0.1
WORDS = query_sparse("swimming")


@pytest.fixture(params=["client", "edge"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    path = ":memory:" if request.param == "client" else str(tmp_path / "edge")
    s = open_store(Settings(qdrant_url=None, qdrant_path=path, qdrant_collection="h"))
    s.ensure_collection(DIM)
    s.upsert(POINTS)
    yield s
    s.close()


@pytest.fixture
def both(tmp_path: Path) -> Iterator[tuple[VectorStore, VectorStore]]:
    stores = [
        open_store(Settings(qdrant_url=None, qdrant_path=p, qdrant_collection="h"))
        for p in (":memory:", str(tmp_path / "edge"))
    ]
    for s in stores:
        s.ensure_collection(DIM)
        s.upsert(POINTS)
    yield stores[0], stores[1]
    for s in stores:
        s.close()


def _ids(hits: list[ProductHit]) -> list[int]:
    return [h.product_id for h in hits]


def _fused(hits: list[ProductHit]) -> list[tuple[float, int]]:
    """Fused scores and ids: RRF gives equal scores to a dense-only and a BM25-only hit at
    the same rank, and the engines may order such ties either way."""
    return sorted((-round(h.score, 5), h.product_id) for h in hits)


def _same(a: list[ProductHit], b: list[ProductHit]) -> bool:
    """Same products in the same order, scores equal to float32 precision."""
    return _ids(a) == _ids(b) and [h.score for h in a] == pytest.approx(
        [h.score for h in b], rel=1e-5
    )


def _search(store: VectorStore, **kw: Any) -> list[ProductHit]:
    """The engine's fusion (RRF) unless `fusion` says otherwise: the orderings asserted
    below are rank-based; relevance fusion has its own test."""
    args: dict[str, Any] = {
        "limit": 10,
        "chunks_per_product": 1,
        "sparse": WORDS,
        "fusion": FusionSpec(method="rrf"),
    }
    return store.search_products(QUERY, **(args | kw))


def _expected_relevance(
    store: VectorStore, weight: float, flt: SearchFilter | None = None, query: Any = QUERY
) -> list[tuple[int, float]]:
    """Every product the filter allows, scored as relevance fusion must score it: its
    cosine (numpy) + weight x its BM25 / the store's best BM25, whatever the filter (a
    BM25-only search), best first."""
    vectors = np.stack([np.asarray(p.vector) for p in POINTS])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ (query / np.linalg.norm(query))
    lexical = store.search_products(None, limit=300, chunks_per_product=1, sparse=WORDS)
    bm25 = {h.product_id: h.score for h in lexical}
    best = max(bm25.values())
    allowed = [p for p in range(300) if flt is None or _category(p) == flt.category]
    fused = {p: float(cosine[p]) + weight * bm25.get(p, 0.0) / best for p in allowed}
    return sorted(fused.items(), key=lambda kv: -kv[1])


def test_relevance_fusion_scores_every_product_by_cosine_plus_its_bm25_share(
    store: VectorStore,
) -> None:
    # Most "swimming" products are far from the dense query: their cosine comes from the
    # per-product fill, so every score below is exact, not only where the branches overlap.
    # "shoes" leaves out product 0, the best BM25 match: the shares stay shares of it.
    shoes = SearchFilter(category="shoes")
    for weight, flt in (
        (0.5, None),
        (0.5, SearchFilter(category="audio")),
        (0.5, shoes),
        (2.0, None),
    ):
        spec = FusionSpec(method="relevance", lexical_weight=weight)
        hits = _search(store, fusion=spec, flt=flt)
        expected = _expected_relevance(store, weight, flt)[:10]
        assert _ids(hits) == [p for p, _ in expected], (weight, flt)
        assert [h.score for h in hits] == pytest.approx([v for _, v in expected], abs=1e-5)
        # Found by BM25 alone or not, every product comes back with its chunks' text.
        assert all(
            c.payload["text"] == POINTS[h.product_id].payload["text"]
            for h in hits
            for c in h.chunks
        )
    # With a large weight the BM25 matches lead; the relevance floor cuts the fused score.
    assert set(_ids(_search(store, fusion=FusionSpec(lexical_weight=2.0)))[:9]) == {
        0,
        1,
        2,
        100,
        101,
        102,
        200,
        201,
        202,
    }
    floor = _expected_relevance(store, 0.5)[4][1]
    kept = _search(store, fusion=FusionSpec(lexical_weight=0.5), score_threshold=floor)
    assert len(kept) == 5 and min(h.score for h in kept) >= floor - 1e-6


def test_a_number_alone_is_no_lexical_match(store: VectorStore) -> None:
    # "3" is in product 3's name and text only ("model 3"; not "103"), "swimming" in nine
    # products' text: the rarer number would be the best BM25 match of "3 swimming".
    mixed = query_sparse("3 swimming")
    assert len(mixed.numbers) == 1 and mixed.words == frozenset(WORDS.indices)
    alone = _search(store, fusion=FusionSpec(lexical_weight=2.0), sparse=query_sparse("3"))
    assert alone[0].product_id == 3  # a query of numbers only keeps their matches
    # With words beside it, product 3 shares only the number: no BM25 share, and the
    # swimming products are scored as for "swimming" alone.
    hits = _search(store, fusion=FusionSpec(lexical_weight=2.0), sparse=mixed)
    assert set(_ids(hits)[:9]) == {0, 1, 2, 100, 101, 102, 200, 201, 202}
    hits = _search(store, fusion=FusionSpec(lexical_weight=0.5), sparse=mixed, limit=300)
    expected = _expected_relevance(store, 0.5)
    assert _ids(hits) == [p for p, _ in expected]
    assert [h.score for h in hits] == pytest.approx([v for _, v in expected], abs=1e-5)
    only_number = next(h for h in hits if h.product_id == 3)
    assert only_number.signals is not None and only_number.signals.bm25 == 0


@pytest.mark.parametrize(
    ("query", "numbers"),
    [
        ("3 burner stove", 1),
        ("2-person tent", 1),
        ("1/2 in. pvc pipe", 2),
        ("65w charger", 1),
        ("2x4 lumber", 2),
        ("v8 engine", 0),
        ("model 7x", 0),
        ("running shoes", 0),
    ],
)
def test_a_querys_numbers_are_its_terms_of_digits_alone(query: str, numbers: int) -> None:
    q = query_sparse(query)
    assert len(q.numbers) == numbers and q.numbers <= frozenset(q.indices)


def test_feedback_searches_again_from_the_query_moved_towards_the_best_five(
    store: VectorStore,
) -> None:
    spec = FusionSpec(lexical_weight=0.5, feedback_weight=0.5, feedback_products=5)
    hits = _search(store, fusion=spec)
    vectors = np.stack([np.asarray(p.vector) for p in POINTS])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    # The feedback comes from the first fusion's best among what the dense branch found
    # (its first relevance_depth(10, 1) = 64 products), which has their vectors at hand.
    dense_found = set(np.argsort(-(unit @ QUERY))[: relevance_depth(10, 1)].tolist())
    first = [p for p, _ in _expected_relevance(store, 0.5) if p in dense_found][:5]
    moved = QUERY / np.linalg.norm(QUERY) + 0.5 * unit[first].mean(axis=0)
    expected = _expected_relevance(store, 0.5, query=moved)[:10]
    assert _ids(hits) == [p for p, _ in expected]
    assert [h.score for h in hits] == pytest.approx([v for _, v in expected], abs=1e-5)
    assert _ids(hits) != _ids(_search(store, fusion=FusionSpec(lexical_weight=0.5)))


def test_filtered_hybrid_never_leaves_the_filter_and_fills_the_page(store: VectorStore) -> None:
    unfiltered = _search(store)
    assert 7 in _ids(unfiltered)  # dense rank 1 (outdoor), no BM25 match
    # The keyword side brings the "swimming" products, whatever their vectors.
    assert {0, 1, 2, 100, 101, 102, 200, 201, 202} & set(_ids(unfiltered))
    assert any(_category(pid) != "audio" for pid in _ids(unfiltered))

    audio = _search(store, flt=SearchFilter(category="audio"))
    # A full page of audio products only; the audio "swimming" ones (0, 100, 200) lead,
    # as they are the only audio products in the keyword branch.
    assert len(audio) == 10
    assert {_category(pid) for pid in _ids(audio)} == {"audio"}
    assert set(_ids(audio)[:3]) == {0, 100, 200}

    cheap = _search(store, flt=SearchFilter(category="audio", max_price=30))
    assert cheap and all(_category(h.product_id) == "audio" for h in cheap)
    assert all(float(h.chunks[0].payload["price"]) <= 30 for h in cheap)
    # 18 audio products cost 10 + pid % 50 <= 30 (pid % 50 in {0, 10, 20}): a full page.
    allowed = {pid for pid in range(0, 300, 10) if pid % 50 <= 20}
    assert len(allowed) == 18 and len(cheap) == 10 and set(_ids(cheap)) <= allowed
    assert set(_ids(cheap)[:3]) == {0, 100, 200}


def test_the_price_bounds_turned_outside_keep_exactly_the_rest(store: VectorStore) -> None:
    # One product without a price: it fits no bound, so it belongs outside.
    unpriced = ChunkPoint(
        str(uuid.uuid5(uuid.NAMESPACE_URL, "hybrid/unpriced")),
        np.asarray(POINTS[7].vector),
        {"product_id": 300, "chunk_index": 0, "text": "trail tent", "category": "outdoor"},
    )
    store.upsert([unpriced])

    def found(flt: SearchFilter | None) -> set[int]:
        return set(_ids(_search(store, flt=flt, limit=400, fusion=FusionSpec("relevance"))))

    bounds = SearchFilter(min_price=20, max_price=40)
    inside, outside = found(bounds), found(replace(bounds, outside_price=True))
    assert outside == {pid for pid in range(300) if not 20 <= 10 + pid % 50 <= 40} | {300}
    assert inside | outside == found(None) and not inside & outside
    # The other filters still hold.
    audio = found(SearchFilter(category="audio", min_price=20, max_price=40, outside_price=True))
    assert audio == {pid for pid in range(0, 300, 10) if pid % 50 in (0, 40)}  # $10 or $50
    # Outer bounds hold inside and outside: a cap said before ("cheaper" after "under $55").
    within = replace(bounds, outer_max_price=55)
    assert found(within) == inside
    price = {pid: 10 + pid % 50 for pid in range(300)}
    assert found(replace(within, outside_price=True)) == {
        pid for pid, p in price.items() if not 20 <= p <= 40 and p <= 55
    }


def test_every_point_carries_its_bm25_vector_and_a_missing_one_is_found(
    store: VectorStore,
) -> None:
    assert store.chunk_ids_without_sparse() == []
    damaged = POINTS[5].id
    # Produce the condition for real: the engine drops the named vector from one point.
    if isinstance(store, EdgeStore):
        shard = store._require()
        shard.update(qe.UpdateOperation.delete_vectors([damaged], [SPARSE_VECTOR]))
    else:
        client = store._client  # type: ignore[attr-defined]
        client.delete_vectors("h", vectors=[SPARSE_VECTOR], points=[damaged])
    assert store.chunk_ids_without_sparse() == [damaged]
    # Rewriting the point (what the sync does) restores it in the same upsert.
    store.upsert([POINTS[5]])
    assert store.chunk_ids_without_sparse() == []


def test_engines_agree_on_hybrid_dense_sparse_and_similar(
    both: tuple[VectorStore, VectorStore],
) -> None:
    client, edge = both
    for kw in (
        {},
        {"flt": SearchFilter(category="audio")},
        {"flt": SearchFilter(min_price=20, max_price=40)},
        {"fusion": FusionSpec(dense_weight=1.0, sparse_weight=3.0)},
        {"fusion": FusionSpec(method="dbsf")},
        {"fusion": FusionSpec(method="relevance")},
        {"fusion": FusionSpec(method="relevance"), "flt": SearchFilter(min_price=20, max_price=40)},
        {"sparse": None},
    ):
        a, b = _search(client, **kw), _search(edge, **kw)
        assert _fused(a) == _fused(b), kw
    sparse_a = client.search_products(None, limit=20, chunks_per_product=1, sparse=WORDS)
    sparse_b = edge.search_products(None, limit=20, chunks_per_product=1, sparse=WORDS)
    # BM25 alone: exactly the nine "swimming" products, shortest text first.
    assert _ids(sparse_a) == [0, 1, 2, 100, 101, 102, 200, 201, 202]
    assert _same(sparse_a, sparse_b)

    sim_a = client.similar_products(7, limit=5, chunks_per_product=1)
    sim_b = edge.similar_products(7, limit=5, chunks_per_product=1)
    assert sim_a is not None and sim_b is not None
    assert _ids(sim_a) == _ids(sim_b)
    # Nearest by cosine to product 7's vector, 7 itself excluded.
    vectors = np.stack([np.asarray(p.vector) for p in POINTS])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    order = [int(i) for i in np.argsort(-(unit @ unit[7])) if i != 7]
    assert _ids(sim_a) == order[:5]
    shoes = client.similar_products(7, limit=5, chunks_per_product=1, flt=SearchFilter("shoes"))
    assert shoes is not None
    assert _ids(shoes) == [pid for pid in order if _category(pid) == "shoes"][:5]
    # Among given products only (a conversation's matches), in the same order, on both.
    among = order[3:9:2]
    for store in (client, edge):
        within = store.similar_products(7, limit=5, chunks_per_product=1, among=among)
        assert within is not None and _ids(within) == [pid for pid in order if pid in among]
    assert client.similar_products(12345, limit=5, chunks_per_product=1) is None
    assert edge.similar_products(12345, limit=5, chunks_per_product=1) is None


def test_an_index_built_before_hybrid_search_is_refused(tmp_path: Path) -> None:
    # What the previous version created: a dense vector and nothing else.
    old = tmp_path / "old"
    old.mkdir()
    dense_only = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine))
    qe.EdgeShard.create(str(old), dense_only).close()
    edge = EdgeStore(old)
    with pytest.raises(StoreSchemaError, match="no sparse vector 'bm25'"):
        edge.ensure_collection(DIM)
    edge.close()
    # Opened with a search pool size (the service's way), the shard is loaded with a
    # config (dense vector + thread count, no sparse one): still refused the same way.
    edge = EdgeStore(old, search_threads=1)
    with pytest.raises(StoreSchemaError, match="no sparse vector 'bm25'"):
        edge.ensure_collection(DIM)
    edge.close()

    from qdrant_client import QdrantClient, models

    from app.store.qdrant_client_store import QdrantClientStore

    client = QdrantClient(":memory:")
    params = models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    client.create_collection("old", vectors_config=params)
    with pytest.raises(StoreSchemaError, match="no sparse vector 'bm25'"):
        QdrantClientStore(client, "old", local=True).ensure_collection(DIM)
    client.close()
