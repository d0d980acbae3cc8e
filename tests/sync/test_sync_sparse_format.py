"""A change of the BM25 format rewrites every sparse vector in place and embeds nothing.

The dense vector's key is (model, text) and the sparse vector's is the BM25 format alone
(app/sync/chunking.py), so a new format (here: k1 = 2.0 under a new SPARSE_FORMAT name, as
a release that retunes BM25 would ship it) makes the next cycle a full one that embeds 0,
rewrites each kept chunk's sparse vector from its text, and leaves the dense vectors and
the point ids as they were. On the committed `cow_aged` table (118 products), each engine.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.embedding import Embedder
from app.store import hybrid
from app.store.edge_store import EdgeStore
from app.store.hybrid import SPARSE_VECTOR, SparseVec, document_sparse
from app.store.qdrant_client_store import QdrantClientStore
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.synctools import ENGINES, Harness, engine_settings, make_harness


def _stored(store: Any, ids: list[str]) -> dict[str, tuple[list[float], SparseVec]]:
    """Each point's dense vector and BM25 vector, as the engine holds them."""
    records: list[Any]
    if isinstance(store, EdgeStore):
        records = list(store._require().retrieve(list[Any](ids), False, True))
    else:
        assert isinstance(store, QdrantClientStore)
        records = list(store._client.retrieve(store._collection, ids, with_vectors=True))
    out = {}
    for r in records:
        vectors: Any = r.vector
        sparse = vectors[SPARSE_VECTOR]
        out[str(r.id)] = (list(vectors[""]), SparseVec(list(sparse.indices), list(sparse.values)))
    return out


def _as_dict(v: SparseVec) -> dict[int, float]:
    return {i: round(x, 5) for i, x in zip(v.indices, v.values, strict=True)}


@pytest.fixture
def new_format(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def change() -> None:
        monkeypatch.setattr(hybrid, "SPARSE_FORMAT", "bm25-test-k1-2")
        monkeypatch.setattr(hybrid, "_BM25_K1", 2.0)
        hybrid._bm25.cache_clear()

    yield change  # type: ignore[misc]
    monkeypatch.undo()
    hybrid._bm25.cache_clear()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bm25_format_change_rewrites_sparse_vectors_and_embeds_nothing(
    engine: str,
    embedder: Embedder,
    new_format: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    h: Harness = make_harness(table, embedder, **engine_settings(engine, request, tmp_path))
    try:
        boot = h.cycle()
        chunks = h.store.count()
        assert boot.embedded == chunks and h.assert_mirror().products == len(EXPECTED_IDS)
        held = {c.id: c.payload for c in h.store.iter_chunks()}
        before = _stored(h.store, sorted(held))

        new_format()
        stale = h.verify()  # every chunk's BM25 vector is of the old format now
        assert (stale.missing, stale.stale, stale.extra) == (0, chunks, 0)
        cycle = h.cycle()
        assert cycle.mode == "full" and "bm25-test-k1-2" in cycle.reason
        assert (cycle.embedded, cycle.loaded, cycle.deleted) == (0, 0, 0)
        assert (cycle.sparse_rewrites, cycle.skipped, cycle.payload_updates) == (chunks, chunks, 0)
        h.assert_mirror()
        assert h.store.count() == chunks

        after = _stored(h.store, sorted(held))
        assert sorted(after) == sorted(before)  # the same points
        changed = 0
        for point_id, (dense, sparse) in after.items():
            payload = held[point_id]
            assert dense == before[point_id][0]  # not re-embedded
            want = document_sparse(payload["text"], payload.get("name"))
            assert _as_dict(sparse) == _as_dict(want)  # the new format's weights
            changed += _as_dict(sparse) != _as_dict(before[point_id][1])
        assert changed == chunks  # k1 moves every weight

        # The next cycle has nothing left to rewrite.
        again = h.cycle()
        assert (again.mode, again.embedded, again.sparse_rewrites) == ("noop", 0, 0)
    finally:
        h.store.close()
