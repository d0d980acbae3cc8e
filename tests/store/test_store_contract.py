"""The store contract: every operation, on each engine, with exact answers; and the
engines' congruence, where the same calls must give the same answers.

Engines: qdrant-client's local mode in memory (`:memory:`), the embedded qdrant-edge
engine on disk (a shard under tmp_path), and a real Qdrant server when the environment
names one (tests/qdrant_server.py; a collection per test). The congruence test adds
qdrant-client's local group-by as the reference for grouped search, and the server (which
groups inside the engine) when there is one. Data: tests/store/sample_points.py
(140 chunks: products 0..39 with 1-4 chunks, product 99 with 40 clustered ones).
The edge engine's own durability (WAL, kill, locking, reopen): test_edge_durability.py.
"""

from __future__ import annotations

import re
import shutil
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.core.config import Settings
from app.store import (
    ChunkPoint,
    PayloadUpdate,
    ProductHit,
    SearchFilter,
    StoreDimensionError,
    StoreError,
    VectorStore,
    open_store,
)
from app.store.base import name_forms
from app.store.edge_store import EdgeStore
from tests.qdrant_server import qdrant_server_fixture  # noqa: F401
from tests.store.sample_points import CATEGORIES, DIM, DOMINANT, make_points, name, point

POINTS = make_points()
BACKEND = {"memory": "qdrant-local", "edge": "qdrant-edge", "server": "qdrant-remote"}


def _open(engine: str, tmp_path: Path, server: str | None = None) -> VectorStore:
    from app.store.qdrant_client_store import QdrantClientStore  # slow import (~2.5 s)

    if engine == "server":
        # One server per session: each test gets a collection of its own.
        name = f"t_{uuid.uuid4().hex[:12]}"
        store = open_store(Settings(qdrant_url=server, qdrant_collection=name))
        assert isinstance(store, QdrantClientStore)
        return store
    path = ":memory:" if engine == "memory" else str(tmp_path / "edge")
    store = open_store(Settings(qdrant_url=None, qdrant_path=path, qdrant_collection="t"))
    assert isinstance(store, QdrantClientStore if engine == "memory" else EdgeStore)
    return store


@pytest.fixture(params=["memory", "edge", pytest.param("server", marks=pytest.mark.server)])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[VectorStore]:
    """A store with no collection yet."""
    server = request.getfixturevalue("qdrant_server") if engine == "server" else None
    s = _open(engine, tmp_path, server)
    yield s
    s.close()


@pytest.fixture
def filled(store: VectorStore) -> VectorStore:
    """The store holding the 140 sample points."""
    store.ensure_collection(DIM)
    store.ensure_collection(DIM)  # idempotent
    store.upsert(POINTS)
    return store


@pytest.fixture
def both(tmp_path: Path) -> Iterator[tuple[VectorStore, VectorStore]]:
    stores = (_open("memory", tmp_path), _open("edge", tmp_path))
    yield stores
    for s in stores:
        s.close()


@pytest.fixture
def oracle() -> Iterator[VectorStore]:
    """Local mode with qdrant-client's own group-by: the reference for grouped search."""
    from qdrant_client import QdrantClient

    from app.store.qdrant_client_store import QdrantClientStore

    store = QdrantClientStore(QdrantClient(":memory:"), "oracle", local=True, native_groups=True)
    yield store
    store.close()


def _snapshot(store: VectorStore) -> list[tuple[str, int, dict[str, Any]]]:
    return sorted((c.id, c.product_id, c.payload) for c in store.iter_chunks(batch=7))


def _ids_of(products: set[int], points: Sequence[ChunkPoint] = POINTS) -> set[str]:
    return {p.id for p in points if p.payload["product_id"] in products}


# --- one operation at a time, exact answers on each engine ------------------------------
def test_upserted_chunks_read_back_as_written(filled: VectorStore) -> None:
    assert filled.count() == len(POINTS) == 140
    assert _snapshot(filled) == sorted((p.id, p.payload["product_id"], p.payload) for p in POINTS)
    assert {c.id for c in filled.iter_chunks()} == {p.id for p in POINTS}


def test_chunks_for_products_returns_all_their_chunks(filled: VectorStore) -> None:
    got = sorted(c.id for c in filled.chunks_for_products([3, 7, 12, 1000]))
    assert got == sorted(_ids_of({3, 7, 12}))
    assert len(got) == 4 + 4 + 1  # products 3 and 7 have 4 chunks, 12 has 1


def test_a_crowding_product_leaves_room_for_the_others(filled: VectorStore) -> None:
    # The dominant product fills the unfiltered top-k: grouping must still find 3 others,
    # each scored by its best chunk (cosine, computed here).
    query = np.ones(DIM, dtype=np.float32)
    vectors = np.stack([np.asarray(p.vector, dtype=np.float64) for p in POINTS])
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    best: dict[int, float] = {}
    for p, score in zip(POINTS, cosine, strict=True):
        pid = p.payload["product_id"]
        best[pid] = max(best.get(pid, -1.0), float(score))
    expected = sorted(best.items(), key=lambda kv: -kv[1])[:4]

    hits = filled.search_products(query, limit=4, chunks_per_product=1, score_threshold=None)
    assert hits[0].product_id == DOMINANT and len(hits) == 4
    assert [h.product_id for h in hits] == [pid for pid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_set_payloads_merges_into_the_payload(filled: VectorStore) -> None:
    # A price-only update: vectors and other fields untouched.
    before = {c.id: c.payload for c in filled.iter_chunks()}
    ids_3 = sorted(_ids_of({3}))
    filled.set_payloads([PayloadUpdate(ids_3, {"price": 9.5, "ts": 1})])
    updated = filled.chunks_for_products([3])
    assert {c.payload["price"] for c in updated} == {9.5}
    assert {c.payload["name"] for c in updated} == {name(3)}
    after = {c.id: c.payload for c in filled.iter_chunks()}
    assert after == {i: p | {"price": 9.5, "ts": 1} if i in ids_3 else p for i, p in before.items()}
    [own] = [p for p in POINTS if p.id == ids_3[0]]
    [hit] = filled.search_products(own.vector, limit=1, chunks_per_product=1)
    assert (hit.product_id, hit.chunks[0].id) == (3, own.id)
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_deletes_remove_products_and_chunks_and_skip_unknown_ids(filled: VectorStore) -> None:
    ids_3 = sorted(_ids_of({3}))
    filled.delete_products([5, 6, DOMINANT])
    filled.delete([ids_3[0], str(uuid.uuid4())])
    filled.delete([])
    filled.delete_products([])
    assert filled.count() == len(POINTS) - 2 - 3 - 40 - 1 == 94
    assert filled.chunks_for_products([5, 6, DOMINANT]) == []
    assert len(filled.chunks_for_products([3])) == 3
    gone = _ids_of({5, 6, DOMINANT}) | {ids_3[0]}
    assert {c.id for c in filled.iter_chunks()} == {p.id for p in POINTS} - gone


def test_a_shorter_description_replaces_its_chunks(filled: VectorStore) -> None:
    # An edited description with fewer chunks: the sync deletes stale ids, upserts new.
    new_7 = point(7, 0, np.random.default_rng(3).normal(size=DIM), category="kitchen", price=12.0)
    filled.delete([c.id for c in filled.chunks_for_products([7])])
    filled.upsert([new_7])
    [chunk] = filled.chunks_for_products([7])
    assert (chunk.id, chunk.payload) == (new_7.id, new_7.payload)
    assert filled.count() == len(POINTS) - 4 + 1


def test_name_exclusions_leave_exactly_the_other_products(filled: VectorStore) -> None:
    # "not over-ear": every product whose name lacks one of the words, and no other, also
    # under a category and once the names change; words in any case, a plural for its
    # singular, a word inside another ("Ear" in "Over-Ear") counts, a part of one does not.
    query = np.ones(DIM, dtype=np.float32)

    def shown(flt: SearchFilter) -> set[int]:
        return {
            h.product_id
            for h in filled.search_products(query, limit=100, chunks_per_product=1, flt=flt)
        }

    every = set(range(40)) | {DOMINANT}
    assert shown(SearchFilter()) == every
    assert shown(SearchFilter(exclude_words=("Over-Ear",))) == {p for p in every if p % 3}
    assert shown(SearchFilter(exclude_words=("headphones",))) == {p for p in every if p % 3 == 2}
    assert shown(SearchFilter(exclude_words=("bud", "ov"))) == {p for p in every if p % 3 != 2}
    assert shown(SearchFilter(category="shoes", exclude_words=("open ear",))) == {
        p for p in range(1, 40, 4) if p % 3 != 1
    }
    filled.set_payloads(
        [PayloadUpdate(sorted(_ids_of({1})), {"name": "Product 1 Over-Ear Headphones"})]
    )
    assert shown(SearchFilter(exclude_words=("over-ear",))) == {p for p in every if p % 3} - {1}


def test_keyword_counts_follow_every_write(store: VectorStore) -> None:
    # The category vocabulary's read (app.query.category): exact chunk counts per value,
    # following inserts, payload edits and deletes, from the engine's facet, not a scroll.
    store.ensure_collection(DIM)
    assert store.keyword_counts("category", limit=100) == {}  # empty store
    store.upsert(POINTS)
    category = {p.id: p.payload["category"] for p in POINTS}

    def expected() -> dict[str, int]:
        return dict(Counter(c for c in category.values() if c is not None))

    # 40 products cycle audio/shoes/kitchen/None with 1-4 chunks; 40 more audio (DOMINANT).
    assert store.keyword_counts("category", limit=100) == expected()
    assert expected() == {"audio": 50, "shoes": 20, "kitchen": 30}
    assert store.keyword_counts("category", limit=1) == {"audio": 50}
    # Brands too (the follow-ups' brand vocabulary): odd products are "acme".
    assert store.keyword_counts("brand", limit=10) == {
        "acme": sum(1 for p in POINTS if p.payload["brand"] == "acme")
    }

    # A product re-filed (payload only), then every shoe product deleted and one chunk of
    # product 6: "shoes" drops out, the counts follow.
    ids_2 = sorted(_ids_of({2}))
    shoes = [pid for pid in range(40) if CATEGORIES[pid % len(CATEGORIES)] == "shoes"]
    ids_6 = sorted(_ids_of({6}))
    store.set_payloads([PayloadUpdate(ids_2, {"category": "garden"})])
    store.delete_products(shoes)
    store.delete(ids_6[:1])
    category.update(dict.fromkeys(ids_2, "garden"))
    gone = _ids_of(set(shoes)) | {ids_6[0]}
    category = {i: c for i, c in category.items() if i not in gone}
    assert store.keyword_counts("category", limit=100) == expected()
    assert expected() == {"audio": 50, "kitchen": 26, "garden": len(ids_2)} and len(ids_2) == 3
    store.optimize()  # merged segments count the same
    assert store.keyword_counts("category", limit=100) == expected()

    with pytest.raises(ValueError, match="keyword"):
        store.keyword_counts("price", limit=10)  # indexed, but not a keyword
    with pytest.raises(ValueError, match="keyword"):
        store.keyword_counts("name", limit=10)  # not indexed
    store.delete(list(category))
    assert store.keyword_counts("category", limit=100) == {}


def test_state_round_trip(store: VectorStore) -> None:
    state = {"checkpoint": "20250101000000000", "table_base": "/x", "counts": {"chunks": 3}}
    store.ensure_collection(DIM)
    assert store.load_state() is None
    store.save_state(state)
    assert store.load_state() == state
    store.save_state({**state, "checkpoint": "2"})
    assert store.load_state() == {**state, "checkpoint": "2"}


def test_a_checkpoint_does_not_outlive_its_vectors(
    engine: str, store: VectorStore, tmp_path: Path
) -> None:
    store.ensure_collection(DIM)
    store.upsert(POINTS[:10])
    store.save_state({"completed": "c1"})
    assert store.load_state() == {"completed": "c1"}
    if engine in ("memory", "server"):
        # What an operator (or a server reset) does under a running service.
        client, name = store._client, store._collection  # type: ignore[attr-defined]
        client.delete_collection(name)
        assert store.load_state() is None
    else:
        # The shard is wiped, the checkpoint file next to it survives.
        store.close()
        shard = tmp_path / "edge"
        for child in shard.iterdir():
            if child.name != "sync_state.json":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        assert (shard / "sync_state.json").exists()
        store = EdgeStore(shard)
    try:
        store.ensure_collection(DIM)
        assert (store.load_state(), store.count()) == (None, 0)
    finally:
        store.close()


def test_errors_are_store_errors(engine: str, store: VectorStore) -> None:
    with pytest.raises(StoreError):
        store.count()  # no collection yet
    store.ensure_collection(DIM)
    with pytest.raises(StoreDimensionError) as info:
        store.ensure_collection(DIM + 1)
    assert info.value.backend == BACKEND[engine]
    # qdrant-client's stores check the size themselves; the edge engine's error is chained.
    assert info.value.__cause__ is not None or engine in ("memory", "server")
    with pytest.raises(StoreError, match="not a UUID"):
        store.delete(["not-a-uuid"])
    with pytest.raises(StoreError):
        store.set_payloads([PayloadUpdate([str(uuid.uuid4())], {"price": 1.0})])  # unknown point
    with pytest.raises(StoreError) as wrong_dim:
        store.upsert([ChunkPoint(str(uuid.uuid4()), [0.5] * (DIM - 1), {"product_id": 1})])
    assert wrong_dim.value.__cause__ is not None
    assert store.count() == 0


def test_readers_see_no_errors_while_a_writer_writes(store: VectorStore) -> None:
    """The API searches from request threads while the sync writes from another thread.
    qdrant-client's local mode has no locking of its own (276 failed reads in 6 s with one
    writer and two readers, unguarded); the store serialises its calls."""
    store.ensure_collection(DIM)
    store.upsert(POINTS[:40])
    errors: list[BaseException] = []
    reads = [0] * 4
    done = threading.Event()

    def read(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            while not done.is_set():
                store.search_products(rng.normal(size=DIM), limit=5, chunks_per_product=2)
                store.count()
                reads[k] += 1
        except BaseException as e:  # surfaced below
            errors.append(e)

    readers = [threading.Thread(target=read, args=(k,)) for k in range(4)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(3):  # grow, shrink and grow again: the arrays resize under readers
            for start in range(40, len(POINTS), 5):
                store.upsert(POINTS[start : start + 5])
            store.delete([p.id for p in POINTS[40:]])
        store.upsert(POINTS[40:])
    finally:
        done.set()
        for reader in readers:
            reader.join(timeout=30)
    assert errors == []
    assert min(reads) > 0
    assert store.count() == len(POINTS)


# --- congruence: the same calls, the same answers ---------------------------------------
def _search_key(hits: list[ProductHit]) -> list[tuple[int, list[str]]]:
    return [(h.product_id, [c.id for c in h.chunks]) for h in hits]


def _assert_search_invariants(
    hits: list[ProductHit],
    *,
    limit: int,
    chunks_per_product: int,
    threshold: float | None,
    flt: SearchFilter | None,
) -> None:
    assert len(hits) <= limit
    assert len({h.product_id for h in hits}) == len(hits), "products must be distinct"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        assert 1 <= len(hit.chunks) <= chunks_per_product
        assert hit.score == hit.chunks[0].score
        assert [c.score for c in hit.chunks] == sorted((c.score for c in hit.chunks), reverse=True)
        for chunk in hit.chunks:
            assert chunk.payload["product_id"] == hit.product_id
            if threshold is not None:
                assert chunk.score >= threshold
            if flt is not None and flt.category is not None:
                assert chunk.payload["category"] == flt.category
            if flt is not None and flt.min_price is not None:
                assert (
                    chunk.payload["price"] is not None and chunk.payload["price"] >= flt.min_price
                )
            if flt is not None and flt.max_price is not None:
                assert (
                    chunk.payload["price"] is not None and chunk.payload["price"] <= flt.max_price
                )
            if flt is not None and flt.brands:
                assert chunk.payload["brand"] in flt.brands
            if flt is not None and flt.exclude_brands:
                assert chunk.payload["brand"] not in flt.exclude_brands
            if flt is not None and flt.products:
                assert hit.product_id in flt.products
            for phrase in flt.exclude_words if flt is not None else ():
                words = set(re.findall(r"\w+", chunk.payload["name"].lower()))
                assert not any(set(f.split()) <= words for f in name_forms(phrase)), phrase


FILTERS = [
    None,
    SearchFilter(category="audio"),
    SearchFilter(min_price=20.0, max_price=120.0),
    SearchFilter(category="shoes", max_price=150.0),
    SearchFilter(category="no-such-category"),
    # Brands: odd products are "acme", even ones have none (an exclusion keeps those).
    SearchFilter(brands=("acme", "no-such-brand")),
    SearchFilter(category="audio", exclude_brands=("acme",), max_price=150.0),
    # Names: "over-ear" leaves the open-ear ones and the buds; "headphones" (and its
    # singular) leaves only the buds.
    SearchFilter(exclude_words=("over-ear",)),
    SearchFilter(category="audio", exclude_words=("HEADPHONES", "no-such-word")),
    # Only some products (a question about those shown), the crowding one among them.
    SearchFilter(products=(3, 4, 7, DOMINANT, 1000)),
]
SHAPES = [(5, 3, None), (3, 1, None), (10, 2, 0.2), (4, 3, 0.35)]


def _compare_searches(reference: VectorStore, others: Sequence[VectorStore], seed: int) -> int:
    rng = np.random.default_rng(seed)
    queries = [rng.normal(size=DIM).astype(np.float32) for _ in range(4)]
    queries.append(np.ones(DIM, dtype=np.float32))  # aims at the dominant product's cluster
    compared = 0
    for query in queries:
        for flt in FILTERS:
            for limit, per_product, threshold in SHAPES:
                kwargs: dict[str, Any] = {
                    "limit": limit,
                    "chunks_per_product": per_product,
                    "score_threshold": threshold,
                    "flt": flt,
                }
                got_a = reference.search_products(query, **kwargs)
                scores_a = [c.score for h in got_a for c in h.chunks]
                for other in others:
                    got_b = other.search_products(query, **kwargs)
                    assert _search_key(got_a) == _search_key(got_b), (other, flt, limit)
                    scores_b = [c.score for h in got_b for c in h.chunks]
                    assert scores_a == pytest.approx(scores_b, abs=1e-5)
                _assert_search_invariants(
                    got_a, limit=limit, chunks_per_product=per_product, threshold=threshold, flt=flt
                )
                compared += 1
    # Every query under every filter in one call (the shelves' batch): each page is the
    # reference's search alone, on every engine.
    for limit, per_product, threshold in SHAPES:
        searches = [(q, flt, limit) for q in queries for flt in FILTERS]
        alone = [
            _search_key(
                reference.search_products(
                    q,
                    limit=limit,
                    chunks_per_product=per_product,
                    score_threshold=threshold,
                    flt=flt,
                )
            )
            for q, flt, limit in searches
        ]
        for store in (reference, *others):
            pages = store.search_dense_each(
                searches, chunks_per_product=per_product, score_threshold=threshold
            )
            assert [_search_key(page) for page in pages] == alone, store
    return compared


@pytest.mark.parametrize("with_server", [False, pytest.param(True, marks=pytest.mark.server)])
def test_engines_agree_on_every_call(
    oracle: VectorStore,
    both: tuple[VectorStore, VectorStore],
    with_server: bool,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    # The oracle groups with qdrant-client's query_points_groups in local mode; a server
    # groups inside the engine; the other two over-fetch and group in Python
    # (app.store.grouping) against different engines.
    memory, edge = both
    url = request.getfixturevalue("qdrant_server") if with_server else None
    server = _open("server", tmp_path, url) if url else None
    stores = [oracle, memory, edge, *([server] if server is not None else [])]
    others = stores[1:]

    def agree() -> None:
        first = _snapshot(oracle)
        assert all(_snapshot(s) == first for s in others)

    try:
        for store in stores:
            store.ensure_collection(DIM)
            store.upsert(POINTS)
        agree()
        chunks = [sorted(c.id for c in s.chunks_for_products([3, 7, 12, 1000])) for s in stores]
        assert all(c == chunks[0] for c in chunks)
        for store in stores:
            dominant_hits = store.search_products(
                np.ones(DIM), limit=4, chunks_per_product=1, score_threshold=None, flt=None
            )
            assert dominant_hits[0].product_id == DOMINANT and len(dominant_hits) == 4
        assert _compare_searches(oracle, others, seed=1) == 5 * len(FILTERS) * 4

        ids_3 = [c.id for c in edge.chunks_for_products([3])]
        for store in stores:
            store.set_payloads([PayloadUpdate(ids_3, {"price": 9.5, "ts": 1})])
        agree()

        for store in stores:
            store.delete_products([5, 6, DOMINANT])
            store.delete([ids_3[0], str(uuid.uuid4())])
        assert len({s.count() for s in stores}) == 1
        agree()

        rng = np.random.default_rng(3)
        new_7 = point(7, 0, rng.normal(size=DIM), category="kitchen", price=12.0)
        for store in stores:
            store.delete([c.id for c in store.chunks_for_products([7])])
            store.upsert([new_7])
        agree()
        assert _compare_searches(oracle, others, seed=2) == 5 * len(FILTERS) * 4
    finally:
        if server is not None:
            server.close()


@pytest.mark.server
def test_the_server_version_is_checked_by_us_not_by_the_client(
    qdrant_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    from qdrant_client import QdrantClient

    from app.store import SUPPORTED_SERVER_VERSIONS, check_server_version

    client = QdrantClient(url=qdrant_server, check_compatibility=False)
    with caplog.at_level("INFO", logger="app.store"):
        found = check_server_version(client)
    assert found is not None
    low, high = SUPPORTED_SERVER_VERSIONS
    assert low <= found <= high  # the server the suite runs on is a supported one
    assert not [r for r in caplog.records if r.levelname == "WARNING"]

    class Newer:
        def info(self) -> Any:
            return type("Info", (), {"version": "2.0.1"})()

    caplog.clear()
    with caplog.at_level("INFO", logger="app.store"):
        assert check_server_version(Newer()) == (2, 0)
    assert "outside the versions this service is tested with" in caplog.text
