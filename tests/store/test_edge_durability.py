"""The edge engine's own durability: reopen, the WAL after a killed process, the flush
policy, the single-process lock, a shard's config changed under it.

Each test owns a shard under tmp_path and writes the 140 sample points
(tests/store/sample_points.py) or a slice of them; the kill tests write from a child
process that never closes the shard. What both engines must do alike is in
test_store_contract.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from app.store import PayloadUpdate, StoreDimensionError, StoreLockedError
from app.store.edge_store import EdgeStore
from tests.store.sample_points import DIM, DOMINANT, make_points


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
        from tests.store.sample_points import make_points
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
        from tests.store.sample_points import make_points
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
