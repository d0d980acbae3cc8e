"""Vector store: congruence of the two backends, checkpoint, persistence, errors.

The same calls run against qdrant-client's in-memory local mode and the embedded
qdrant-edge engine on disk; every answer must match exactly (scores to float32
precision). Data: 40 products with 1-4 chunks each, plus product 99 with 40 chunks
clustered around one direction (it crowds a plain top-k, forcing the edge backend to
widen its fetch), 16-d vectors from a fixed seed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
    StoreLockedError,
    VectorStore,
    open_store,
)
from app.store.edge_store import EdgeStore

DIM = 16
CATEGORIES = ["audio", "shoes", "kitchen", None]
DOMINANT = 99


def _chunk_id(product_id: int, index: int, text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{product_id}/{index}/{text}"))


def _point(
    pid: int,
    index: int,
    vector: Any,
    *,
    category: str | None,
    price: float | None,
    count: int | None = None,
) -> ChunkPoint:
    text = f"product {pid} chunk {index}"
    payload: dict[str, Any] = {
        "product_id": pid,
        "chunk_hash": f"h{pid}-{index}",
        "chunk_index": index,
        # As the sync writes it; odd products leave it out, as chunks stored before the
        # field existed do, so searches run both the skip and the fill (app.store.grouping).
        **({"chunk_count": count} if count is not None else {}),
        "text": text,
        "name": f"Product {pid}",
        "category": category,
        "brand": "acme" if pid % 2 else None,
        "price": price,
        "ts": 1_700_000_000_000 + pid,
    }
    return ChunkPoint(id=_chunk_id(pid, index, text), vector=vector, payload=payload)


def make_points(seed: int = 7) -> list[ChunkPoint]:
    rng = np.random.default_rng(seed)
    points = []
    for pid in range(40):
        category = CATEGORIES[pid % len(CATEGORIES)]
        price = None if pid % 9 == 0 else round(float(rng.uniform(5, 200)), 2)
        count = 1 + pid % 4
        for index in range(count):
            vector = rng.normal(size=DIM).astype(np.float32)
            known = count if pid % 2 == 0 else None
            points.append(_point(pid, index, vector, category=category, price=price, count=known))
    center = np.ones(DIM, dtype=np.float32)
    for index in range(40):
        vector = center + rng.normal(scale=0.05, size=DIM).astype(np.float32)
        points.append(_point(DOMINANT, index, vector, category="audio", price=50.0, count=40))
    return points


@pytest.fixture
def client_store() -> Iterator[VectorStore]:
    from app.store.qdrant_client_store import QdrantClientStore  # slow import (~2.5 s)

    store = open_store(Settings(qdrant_url=None, qdrant_path=":memory:", qdrant_collection="t"))
    assert isinstance(store, QdrantClientStore)
    yield store
    store.close()


@pytest.fixture
def oracle_store() -> Iterator[VectorStore]:
    """Local mode with qdrant-client's own group-by: the reference for grouped search."""
    from qdrant_client import QdrantClient

    from app.store.qdrant_client_store import QdrantClientStore

    store = QdrantClientStore(QdrantClient(":memory:"), "oracle", local=True, native_groups=True)
    yield store
    store.close()


@pytest.fixture
def edge_store(tmp_path: Path) -> Iterator[VectorStore]:
    store = open_store(Settings(qdrant_url=None, qdrant_path=str(tmp_path / "edge")))
    assert isinstance(store, EdgeStore)
    yield store
    store.close()


def _snapshot(store: VectorStore) -> list[tuple[str, int, dict[str, Any]]]:
    return sorted((c.id, c.product_id, c.payload) for c in store.iter_chunks(batch=7))


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


FILTERS = [
    None,
    SearchFilter(category="audio"),
    SearchFilter(min_price=20.0, max_price=120.0),
    SearchFilter(category="shoes", max_price=150.0),
    SearchFilter(category="no-such-category"),
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
    return compared


def test_backends_agree_on_every_call(
    oracle_store: VectorStore, client_store: VectorStore, edge_store: VectorStore
) -> None:
    # The oracle groups with qdrant-client's query_points_groups; the other two
    # over-fetch and group in Python (app.store.grouping) against different engines.
    stores = (oracle_store, client_store, edge_store)
    points = make_points()
    for store in stores:
        store.ensure_collection(DIM)
        store.ensure_collection(DIM)  # idempotent
        store.upsert(points)

    assert oracle_store.count() == client_store.count() == edge_store.count() == len(points) == 140
    assert _snapshot(oracle_store) == _snapshot(client_store) == _snapshot(edge_store)
    assert {c.id for c in client_store.iter_chunks()} == {p.id for p in points}

    chunks = [sorted(c.id for c in s.chunks_for_products([3, 7, 12, 1000])) for s in stores]
    assert chunks[0] == chunks[1] == chunks[2]
    assert len(chunks[0]) == 4 + 4 + 1  # products 3 and 7 have 4 chunks, 12 has 1

    # The dominant product fills the unfiltered top-k: grouping must still find 3 others.
    for store in stores:
        dominant_hits = store.search_products(
            np.ones(DIM), limit=4, chunks_per_product=1, score_threshold=None, flt=None
        )
        assert dominant_hits[0].product_id == DOMINANT and len(dominant_hits) == 4
    assert _compare_searches(oracle_store, [client_store, edge_store], seed=1) == 5 * 5 * 4

    # A price-only update merges into the payload, vectors and other fields untouched.
    ids_3 = [c.id for c in edge_store.chunks_for_products([3])]
    for store in stores:
        store.set_payloads([PayloadUpdate(ids_3, {"price": 9.5, "ts": 1})])
    for store in stores:
        updated = store.chunks_for_products([3])
        assert {c.payload["price"] for c in updated} == {9.5}
        assert {c.payload["name"] for c in updated} == {"Product 3"}
    assert _snapshot(oracle_store) == _snapshot(client_store) == _snapshot(edge_store)

    # Deletes: whole products, single chunks, unknown ids are no-ops.
    for store in stores:
        store.delete_products([5, 6, DOMINANT])
        store.delete([ids_3[0], str(uuid.uuid4())])
        store.delete([])
        store.delete_products([])
    expected = len(points) - 2 - 3 - 40 - 1
    assert oracle_store.count() == client_store.count() == edge_store.count() == expected
    for store in stores:
        assert store.chunks_for_products([5, 6, DOMINANT]) == []
        assert len(store.chunks_for_products([3])) == 3
    assert _snapshot(oracle_store) == _snapshot(client_store) == _snapshot(edge_store)

    # An edited description with fewer chunks: the sync deletes stale ids, upserts new.
    rng = np.random.default_rng(3)
    new_7 = _point(7, 0, rng.normal(size=DIM), category="kitchen", price=12.0)
    for store in stores:
        store.delete([c.id for c in store.chunks_for_products([7])])
        store.upsert([new_7])
        assert [c.id for c in store.chunks_for_products([7])] == [new_7.id]
    assert _snapshot(oracle_store) == _snapshot(client_store) == _snapshot(edge_store)
    assert _compare_searches(oracle_store, [client_store, edge_store], seed=2) == 100


def test_backends_agree_on_keyword_counts(
    client_store: VectorStore, edge_store: VectorStore
) -> None:
    # The category vocabulary's read (app.query.category): exact chunk counts per value,
    # following inserts, payload edits and deletes, from the engine's facet, not a scroll.
    stores = (client_store, edge_store)
    points = make_points()
    for store in stores:
        store.ensure_collection(DIM)
        assert store.keyword_counts("category", limit=100) == {}  # empty store
        store.upsert(points)
    category = {p.id: p.payload["category"] for p in points}

    def expected() -> dict[str, int]:
        return dict(Counter(c for c in category.values() if c is not None))

    def counts() -> dict[str, int]:
        got = [store.keyword_counts("category", limit=100) for store in stores]
        assert got[0] == got[1]
        return got[0]

    # 40 products cycle audio/shoes/kitchen/None with 1-4 chunks; 40 more audio (DOMINANT).
    assert counts() == expected() == {"audio": 50, "shoes": 20, "kitchen": 30}
    assert [s.keyword_counts("category", limit=1) for s in stores] == [{"audio": 50}] * 2

    # A product re-filed (payload only), then every shoe product deleted and one chunk of
    # product 6: "shoes" drops out, the counts follow.
    ids_2 = [c.id for c in edge_store.chunks_for_products([2])]
    shoes = [pid for pid in range(40) if CATEGORIES[pid % len(CATEGORIES)] == "shoes"]
    ids_6 = sorted(c.id for c in edge_store.chunks_for_products([6]))
    for store in stores:
        store.set_payloads([PayloadUpdate(ids_2, {"category": "garden"})])
        store.delete_products(shoes)
        store.delete(ids_6[:1])
    category.update(dict.fromkeys(ids_2, "garden"))
    gone = {p.id for p in points if p.payload["product_id"] in shoes} | {ids_6[0]}
    category = {i: c for i, c in category.items() if i not in gone}
    assert counts() == expected()
    assert "shoes" not in expected() and expected()["garden"] == len(ids_2)
    edge_store.optimize()  # merged segments count the same
    assert counts() == expected()

    for store in stores:
        with pytest.raises(ValueError, match="keyword"):
            store.keyword_counts("price", limit=10)  # indexed, but not a keyword
        with pytest.raises(ValueError, match="keyword"):
            store.keyword_counts("brand", limit=10)  # not indexed
        store.delete(list(category))
    assert counts() == {}


def test_state_round_trip_and_lifetime(client_store: VectorStore, edge_store: VectorStore) -> None:
    state = {"checkpoint": "20250101000000000", "table_base": "/x", "counts": {"chunks": 3}}
    for store in (client_store, edge_store):
        store.ensure_collection(DIM)
        assert store.load_state() is None
        store.save_state(state)
        assert store.load_state() == state
        store.save_state({**state, "checkpoint": "2"})
        assert store.load_state() == {**state, "checkpoint": "2"}


def test_edge_reopen_sees_points_and_state(tmp_path: Path) -> None:
    path = tmp_path / "shard"
    store = EdgeStore(path)
    store.ensure_collection(DIM)
    points = make_points()
    store.upsert(points)
    store.delete_products([DOMINANT])
    store.save_state({"checkpoint": "c1"})
    store.close()
    store.close()  # idempotent

    reopened = EdgeStore(path)
    try:
        reopened.ensure_collection(DIM)
        assert reopened.count() == len(points) - 40
        assert reopened.load_state() == {"checkpoint": "c1"}
        assert sorted(c.id for c in reopened.iter_chunks()) == sorted(
            p.id for p in points if p.payload["product_id"] != DOMINANT
        )
        with pytest.raises(StoreDimensionError):
            reopened.ensure_collection(DIM * 2)
    finally:
        reopened.close()


def test_edge_search_threads_apply_to_an_existing_shard(tmp_path: Path) -> None:
    # QDRANT_SEARCH_THREADS reaches the engine on create and on every later load (where
    # the engine persists it in its config), and changing it keeps the data as it is.
    import json

    path = tmp_path / "shard"
    store = EdgeStore(path, search_threads=3)
    store.ensure_collection(DIM)
    points = make_points()
    store.upsert(points)
    query = np.asarray(points[0].vector, dtype=np.float32)
    before = store.search_products(query, limit=5, chunks_per_product=2)
    store.close()
    assert json.loads((path / "edge_config.json").read_text())["max_search_threads"] == 3

    reopened = EdgeStore(path, search_threads=1)
    try:
        reopened.ensure_collection(DIM)
        assert json.loads((path / "edge_config.json").read_text())["max_search_threads"] == 1
        assert reopened.count() == len(points)
        assert reopened.search_products(query, limit=5, chunks_per_product=2) == before
    finally:
        reopened.close()


def test_edge_shard_with_vectors_in_ram_is_switched_to_cold_on_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard created before DENSE_MEMORY (the engine's default, cached) keeps working
    and is switched to memory=cold when opened; an optimize rewrites its old segment."""
    import json

    import qdrant_edge as qe

    from app.store import edge_store
    from app.store.hybrid import SPARSE_VECTOR

    path = tmp_path / "shard"
    old_config = qe.EdgeConfig(  # what EdgeStore created before this change
        vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine),
        sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )
    monkeypatch.setattr(edge_store, "_shard_config", lambda dim, threads: old_config)
    store = EdgeStore(path)
    store.ensure_collection(DIM)
    points = make_points()
    store.upsert(points)
    before = store.search_products(points[0].vector, limit=5, chunks_per_product=1)
    store.save_state({"checkpoint": "c1"})
    store.close()
    monkeypatch.undo()
    assert "memory" not in json.loads((path / "edge_config.json").read_text())["vectors"][""]

    with caplog.at_level("WARNING", logger="app.store.edge_store"):
        reopened = EdgeStore(path)
    try:
        assert "switching it to memory=cold" in caplog.text
        persisted = json.loads((path / "edge_config.json").read_text())["vectors"][""]
        assert persisted["memory"] == "cold"
        assert persisted["size"] == DIM
        reopened.ensure_collection(DIM)
        assert reopened.count() == len(points)
        assert reopened.load_state() == {"checkpoint": "c1"}
        same = reopened.search_products(points[0].vector, limit=5, chunks_per_product=1)
        assert [h.product_id for h in same] == [h.product_id for h in before]
        reopened.optimize()
        segments = [json.loads(f.read_text()) for f in path.glob("segments/*/segment.json")]
        assert segments
        assert all(
            s["config"]["vector_data"][""]["storage_type"] in ("ChunkedMmap", "Mmap")
            for s in segments
        )
        assert reopened.count() == len(points)
    finally:
        reopened.close()
    caplog.clear()
    with caplog.at_level("WARNING", logger="app.store.edge_store"):
        EdgeStore(path).close()  # already cold: loaded as it is
    assert "switching" not in caplog.text


def test_edge_acknowledged_writes_survive_a_killed_process(tmp_path: Path) -> None:
    # The writer never closes the shard: os._exit skips every clean-up path.
    path = tmp_path / "shard"
    script = textwrap.dedent(
        f"""
        import os, numpy as np
        from app.store import PayloadUpdate
        from app.store.edge_store import EdgeStore
        from tests.store.test_store import make_points
        store = EdgeStore({str(path)!r})
        store.ensure_collection({DIM})
        points = make_points()
        store.upsert(points)
        store.set_payloads([PayloadUpdate([points[0].id], {{"price": 1.25}})])
        store.save_state({{"checkpoint": "killed"}})
        os._exit(0)
        """
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", script], check=True, cwd=root, timeout=120)
    store = EdgeStore(path)
    try:
        assert store.count() == 140
        assert store.load_state() == {"checkpoint": "killed"}
        first = make_points()[0]
        [chunk] = [c for c in store.chunks_for_products([0]) if c.id == first.id]
        assert chunk.payload["price"] == 1.25
    finally:
        store.close()


def test_edge_unflushed_writes_survive_a_killed_process(tmp_path: Path) -> None:
    # What EdgeStore's flush policy rests on (module docstring, "Durability"): the engine's
    # WAL is replayed on load, so writes never flushed (no save_state, no close, the flush
    # bounds out of reach) are all there after SIGKILL: upserts, payload updates, deletes.
    # If a qdrant-edge upgrade breaks this, flush per call again (FLUSH_AFTER_POINTS = 0).
    path = tmp_path / "shard"
    script = textwrap.dedent(
        f"""
        import os, signal
        from app.store import PayloadUpdate
        from app.store import edge_store
        from tests.store.test_store import make_points
        edge_store.FLUSH_AFTER_POINTS = 10**9
        edge_store.FLUSH_AFTER_SECONDS = float("inf")
        store = edge_store.EdgeStore({str(path)!r})
        store.ensure_collection({DIM})
        flushes = []
        real_flush = store.flush
        store.flush = lambda: flushes.append(1) or real_flush()
        points = make_points()
        store.upsert(points[:100])
        store.upsert(points[100:])
        store.set_payloads([PayloadUpdate([points[0].id], {{"price": 1.25}})])
        store.delete([points[1].id])
        assert store.count() == 139 and not flushes
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, timeout=120)
    assert done.returncode == -9  # killed, not an assertion failure in the script
    store = EdgeStore(path)
    try:
        assert store.count() == 139
        assert store.load_state() is None
        points = make_points()
        chunks = {c.id: c for c in store.chunks_for_products([0])}
        assert chunks[points[0].id].payload["price"] == 1.25
        assert points[1].id not in chunks
        stored = {c.id for c in store.iter_chunks()}
        assert stored == {p.id for p in points} - {points[1].id}
    finally:
        store.close()


def test_edge_flushes_every_n_points_or_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.store import edge_store

    store = EdgeStore(tmp_path / "shard")
    store.ensure_collection(DIM)
    flushes: list[int] = []
    real_flush = store.flush

    def counted() -> None:
        flushes.append(1)
        real_flush()

    monkeypatch.setattr(store, "flush", counted)
    monkeypatch.setattr(edge_store, "FLUSH_AFTER_POINTS", 100)
    monkeypatch.setattr(edge_store, "FLUSH_AFTER_SECONDS", float("inf"))
    points = make_points()
    try:
        store.upsert(points[:60])
        assert not flushes
        store.upsert(points[60:120])  # 120 unflushed >= 100
        assert len(flushes) == 1
        store.upsert(points[120:])  # 20 since the flush
        assert len(flushes) == 1
        monkeypatch.setattr(edge_store, "FLUSH_AFTER_SECONDS", 0.0)
        store.set_payloads([PayloadUpdate([points[0].id], {"price": 2.5})])
        assert len(flushes) == 2
        monkeypatch.setattr(edge_store, "FLUSH_AFTER_SECONDS", float("inf"))
        store.delete([points[1].id])
        assert len(flushes) == 2
        store.save_state({"checkpoint": "x"})  # the checkpoint is always written after one
        assert len(flushes) == 3
        assert store.count() == len(points) - 1  # unflushed writes are visible at once
    finally:
        store.close()


def test_edge_shard_is_single_process(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "shard")
    store.ensure_collection(DIM)
    try:
        with pytest.raises(StoreLockedError, match="open in another process"):
            EdgeStore(tmp_path / "shard")
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["client", "edge"])
def test_errors_are_store_errors(backend: str, tmp_path: Path) -> None:
    store: VectorStore
    if backend == "client":
        store = open_store(Settings(qdrant_url=None, qdrant_path=":memory:"))
    else:
        store = open_store(Settings(qdrant_url=None, qdrant_path=str(tmp_path / "e")))
    try:
        with pytest.raises(StoreError):
            store.count()  # no collection yet
        store.ensure_collection(DIM)
        with pytest.raises(StoreDimensionError) as info:
            store.ensure_collection(DIM + 1)
        assert info.value.backend in {"qdrant-local", "qdrant-edge"}
        assert info.value.__cause__ is not None or backend == "client"
        with pytest.raises(StoreError, match="not a UUID"):
            store.delete(["not-a-uuid"])
        with pytest.raises(StoreError):
            store.set_payloads(
                [PayloadUpdate([str(uuid.uuid4())], {"price": 1.0})]
            )  # unknown point
        with pytest.raises(StoreError) as wrong_dim:
            store.upsert([ChunkPoint(str(uuid.uuid4()), [0.5] * (DIM - 1), {"product_id": 1})])
        assert wrong_dim.value.__cause__ is not None
        assert store.count() == 0
    finally:
        store.close()


def test_edge_serves_searches_while_the_sync_writes(tmp_path: Path) -> None:
    # The API searches from request threads while the sync upserts from another thread.
    store = EdgeStore(tmp_path / "shard")
    store.ensure_collection(DIM)
    points = make_points()
    store.upsert(points[:40])
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        rng = np.random.default_rng(0)
        try:
            while not done.is_set():
                store.search_products(rng.normal(size=DIM), limit=5, chunks_per_product=2)
        except BaseException as e:  # surfaced below
            errors.append(e)

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for start in range(40, len(points), 10):
            store.upsert(points[start : start + 10])
    finally:
        done.set()
        for reader in readers:
            reader.join(timeout=30)
    assert errors == []
    assert store.count() == len(points)
    store.close()


def test_qdrant_client_checkpoint_is_dropped_with_its_collection(client_store: Any) -> None:
    client_store.ensure_collection(DIM)
    client_store.upsert(make_points()[:10])
    client_store.save_state({"completed": "c1"})
    assert client_store.load_state() == {"completed": "c1"}
    # What an operator (or a server reset) does under a running service.
    client_store._client.delete_collection("t")
    assert client_store.load_state() is None
    client_store.ensure_collection(DIM)
    assert (client_store.load_state(), client_store.count()) == (None, 0)


def test_edge_checkpoint_does_not_outlive_its_shard(tmp_path: Path) -> None:
    path = tmp_path / "shard"
    store = EdgeStore(path)
    store.ensure_collection(DIM)
    store.upsert(make_points()[:10])
    store.save_state({"completed": "c1"})
    store.close()
    # The vectors are wiped, the checkpoint file next to them survives.
    for child in path.iterdir():
        if child.name != "sync_state.json":
            subprocess.run(["rm", "-rf", str(child)], check=True)
    assert (path / "sync_state.json").exists()
    fresh = EdgeStore(path)
    try:
        fresh.ensure_collection(DIM)
        assert (fresh.load_state(), fresh.count()) == (None, 0)
    finally:
        fresh.close()


def test_in_memory_store_one_writer_four_readers_no_errors(client_store: Any) -> None:
    """qdrant-client's local mode has no locking of its own (276 failed reads in 6 s with
    one writer and two readers, unguarded); the store serialises its calls."""
    client_store.ensure_collection(DIM)
    points = make_points()
    client_store.upsert(points[:40])
    errors: list[BaseException] = []
    reads = [0] * 4
    done = threading.Event()

    def read(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            while not done.is_set():
                client_store.search_products(rng.normal(size=DIM), limit=5, chunks_per_product=2)
                client_store.count()
                reads[k] += 1
        except BaseException as e:  # surfaced below
            errors.append(e)

    readers = [threading.Thread(target=read, args=(k,)) for k in range(4)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(3):  # grow, shrink and grow again: the arrays resize under readers
            for start in range(40, len(points), 5):
                client_store.upsert(points[start : start + 5])
            client_store.delete([p.id for p in points[40:]])
        client_store.upsert(points[40:])
    finally:
        done.set()
        for reader in readers:
            reader.join(timeout=30)
    assert errors == []
    assert min(reads) > 0
    assert client_store.count() == len(points)
