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
from tests.synctools import make_harness


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


def test_bootstrap_full_and_verify_match_the_snapshot(aged_table: Path, embedder: Any) -> None:
    h = make_harness(aged_table, embedder)
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
