"""The sync over committed Spark-written tables aged past archival: no JVM needed.

tests/fixtures/tables/make_tables.py states each table's history. Their first commits are
archived, so an incremental read from "0" returns 12 rows (COW) and 0 rows (MOR) of the
118 in the snapshot: a bootstrap, a full cycle and --verify must read the snapshot.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

from tests.fixtures.tables.make_tables import (
    DELETED_ID,
    EXPECTED_IDS,
    HERE,
    MERGE_DELETED_ID,
    TABLES,
)
from tests.synctools import ENGINES, engine_settings, make_harness


@pytest.fixture(params=sorted(TABLES))
def aged_table(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    # A copy, so nothing a test does can touch the committed files.
    dest = tmp_path / str(request.param)
    shutil.copytree(HERE / str(request.param), dest)
    return dest


def _ids(path: Path, opts: HudiReadOptions) -> set[int]:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    return {int(v) for b in table.read(opts) for v in b.column("id").to_pylist()}


def test_fixture_is_really_archived(aged_table: Path) -> None:
    assert _ids(aged_table, HudiReadOptions()) == EXPECTED_IDS
    incremental = HudiReadOptions().with_query_type(HudiQueryType.Incremental)
    assert len(_ids(aged_table, incremental.with_start_timestamp("0"))) < 20
    assert (aged_table / ".hoodie" / "timeline" / "history").is_dir()


@pytest.mark.parametrize("engine", ENGINES)
def test_bootstrap_full_and_verify_match_the_snapshot(
    aged_table: Path, embedder: Any, engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    h = make_harness(aged_table, embedder, **engine_settings(engine, request, tmp_path))
    boot = h.cycle()
    assert boot.mode == "bootstrap"
    mirror = h.assert_mirror()
    assert mirror.products == len(EXPECTED_IDS) == 118
    stored = {c.product_id for c in h.store.iter_chunks(fields=["product_id"])}
    assert stored == EXPECTED_IDS
    assert DELETED_ID not in stored and MERGE_DELETED_ID not in stored

    full = h.cycle(full=True)
    assert (full.mode, full.embedded, full.deleted) == ("full", 0, 0)
    assert h.assert_mirror().stored_chunks == mirror.stored_chunks
    h.store.close()


def test_a_store_from_before_chunk_count_gets_it_from_one_full_cycle_that_embeds_nothing(
    aged_table: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.sync import chunking

    # The store as the previous payload format wrote it: no `chunk_count`, old signature.
    with monkeypatch.context() as m:
        m.setattr(chunking, "PAYLOAD_FORMAT", "p1")
        m.setattr(
            chunking.ProductChunk, "position", property(lambda c: {"chunk_index": c.chunk_index})
        )
        h = make_harness(aged_table, embedder)
        assert h.cycle().mode == "bootstrap"
    chunks = h.store.count()
    assert not any("chunk_count" in c.payload for c in h.store.iter_chunks())

    before = h.verify()
    assert (before.missing, before.stale, before.extra) == (0, chunks, 0)
    upgrade = h.cycle()
    assert upgrade.mode == "full" and "chunking/model changed" in upgrade.reason
    assert (upgrade.embedded, upgrade.deleted, upgrade.payload_updates) == (0, 0, chunks)
    h.assert_mirror()
    assert all(isinstance(c.payload["chunk_count"], int) for c in h.store.iter_chunks())
    assert h.cycle().mode != "full"


def test_a_bootstrap_rolls_its_writes_into_indexed_cold_segments(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a cycle the sync builds the index every ROLL_AFTER_POINTS points, so the
    engine's appendable segment (whose BM25 index, id tracker and payload indexes live on
    the heap) never holds more than that. The mirror holds across the rolls; every rolled
    segment is indexed and memory-mapped; nothing is merged that already reached the size."""
    import json

    from app.store import edge_store
    from app.sync import engine as engine_module

    monkeypatch.setattr(engine_module, "PRODUCT_BATCH", 16)
    monkeypatch.setattr(engine_module, "ROLL_AFTER_POINTS", 40)
    monkeypatch.setattr(edge_store, "SEGMENT_POINTS", 40)
    monkeypatch.setattr(edge_store, "INDEXING_THRESHOLD_KB", 1)
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    qdrant = tmp_path / "qdrant"
    h = make_harness(table, embedder, qdrant_path=str(qdrant))

    boot = h.cycle()
    assert (boot.mode, boot.optimized) == ("bootstrap", True)
    mirror = h.assert_mirror()
    assert mirror.products == len(EXPECTED_IDS)
    checkpoint = h.engine.checkpoint()
    assert checkpoint is not None and checkpoint.unindexed < 40

    configs = [json.loads(f.read_text())["config"] for f in qdrant.glob("segments/*/segment.json")]
    rolled = [c for c in configs if c["vector_data"][""]["index"]["type"] == "hnsw"]
    # Each roll indexed >= 40 points of ~2.5 per product: at least a handful of segments.
    assert len(rolled) >= mirror.stored_chunks // 80
    assert len(configs) - len(rolled) == 1  # one appendable segment left for new writes
    for c in rolled:
        assert c["vector_data"][""]["storage_type"] == "Mmap"
        assert c["vector_data"][""]["index"]["options"]["memory"] == "cold"
        assert c["sparse_vector_data"]["bm25"]["index"]["index_type"] == "Mmap"
        assert c["id_tracker_memory"] == "cold"

    # Deletes, a full cycle and search work across the rolled segments.
    gone = sorted(EXPECTED_IDS)[:3]
    h.store.delete_products(gone)
    full = h.cycle(full=True)
    assert full.mode == "full" and full.embedded > 0
    assert h.assert_mirror().stored_chunks == mirror.stored_chunks
    hits = h.store.search_products(embedder.embed(["a product"])[0], limit=5, chunks_per_product=1)
    assert len(hits) == 5
