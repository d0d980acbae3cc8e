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
