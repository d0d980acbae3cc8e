"""The mirror on a table aged past archival and cleaning by live Spark (MOR, inline compaction).

One MOR table with inline compaction every 2 delta commits is written once for the module:
12 upserts of 10 new products (ids 1..120) with keep.min/max.commits 3/4 and
cleaner.commits.retained 2 — three times keep.max.commits, so archival and cleaning have
really run (checked below, not assumed). Spark SQL's snapshot is the reference: 120 ids.
The last test ages the table further past a stored checkpoint.

The same history on COW is not rebuilt here: the committed `cow_aged` and `mor_aged`
tables (tests/sync/test_sync_fixture_tables.py, Spark-written, archived and cleaned) prove
bootstrap, full cycle and mirror on both types without a JVM. This module keeps what needs
a live writer: Spark SQL's view as the reference, `--verify` as its own process, and an
incremental cycle whose stored checkpoint Spark then archives. The MOR table ages through
the same archival and cleaning as a COW one; each table built here costs
12 Spark commits, so COW's copy was dropped (it re-proved what `cow_aged` proves).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.sync.hudi_source import TableSnapshot
from spark_jobs.create_table import create_table
from tests.hudi_writes import active_instants, archived_files, spark_ids, write_rows
from tests.synctools import Harness, long_text, make_harness, product, sync_cli_in_process

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
COMMITS, PER_COMMIT = 12, 10
ALL_IDS = set(range(1, COMMITS * PER_COMMIT + 1))


def _batch(commit: int) -> list[dict[str, Any]]:
    first = commit * PER_COMMIT + 1
    return [
        product(i, 1000 + commit, f"Aged product {i}", long_text(f"aged item {i}", 1 + i % 3))
        for i in range(first, first + PER_COMMIT)
    ]


@pytest.fixture(scope="module")
def aged(spark: Any, tmp_path_factory: Any) -> str:
    path = str(tmp_path_factory.mktemp("aged-mor") / "products")
    create_table(spark, path, "MERGE_ON_READ")
    for commit in range(COMMITS):
        write_rows(spark, path, _batch(commit))
    return path


def _store_ids(h: Harness) -> set[int]:
    return {c.product_id for c in h.store.iter_chunks(fields=["product_id"])}


def test_the_table_is_really_archived_and_cleaned(aged: str, spark: Any) -> None:
    active = active_instants(aged)
    assert len(active) < COMMITS, active  # instants left the active timeline ...
    assert archived_files(aged), "no LSM archived timeline"  # ... into the archive
    assert spark_ids(spark, aged) == ALL_IDS
    # The trap itself: an incremental read from "0" sees only the active timeline.
    table = TableSnapshot(make_settings(aged))
    incremental = table.read_window("0", table.latest.completed)  # type: ignore[union-attr]
    assert incremental.num_rows < len(ALL_IDS)
    snapshot = {p.id for batch in table.snapshot(7) for p in batch}
    assert snapshot == ALL_IDS


def test_bootstrap_full_and_verify_match_the_spark_snapshot(
    aged: str, spark: Any, embedder: Any, tmp_path: Path
) -> None:
    qdrant = str(tmp_path / "qdrant")
    h = make_harness(aged, embedder, qdrant_path=qdrant)
    boot = h.cycle()
    assert boot.mode == "bootstrap" and boot.rows == len(ALL_IDS)
    assert _store_ids(h) == spark_ids(spark, aged) == ALL_IDS
    mirror = h.assert_mirror()
    assert mirror.products == len(ALL_IDS)

    full = h.cycle(full=True)
    assert (full.mode, full.rows, full.embedded, full.deleted) == ("full", 120, 0, 0)
    assert h.assert_mirror().stored_chunks == mirror.stored_chunks
    h.store.close()

    # `--verify` as its own process over the on-disk store: exit 0, 0/0/0, all 120.
    verify = _run_sync(["--verify"], aged, qdrant)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "products 120\n" in verify.stdout
    assert "missing 0\nstale 0\nextra 0" in verify.stdout


def test_verify_fails_on_a_never_synced_store_of_a_non_empty_table(
    aged: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = _sync_env(aged, str(tmp_path / "empty-qdrant"))
    code, out = sync_cli_in_process(["--verify"], env, monkeypatch, capsys)
    assert code == 1, out
    assert "checkpoint None\nproducts 120\n" in out
    assert "missing 0\n" not in out and "extra 0\n" in out


def test_incremental_cycle_after_the_checkpoint_was_archived(
    aged: str, spark: Any, embedder: Any
) -> None:
    """Runs last: ages the module's table past the checkpoint this test stores."""
    h = make_harness(aged, embedder)
    h.cycle()
    checkpoint = h.engine.checkpoint()
    assert checkpoint is not None and checkpoint.requested in active_instants(aged)

    # Five more commits: an edit, a new product each. Archival moves the checkpoint out.
    for k in range(5):
        edited = product(1 + k, 5000 + k, f"Aged product {1 + k} v2", long_text(f"v2 {k}", 2))
        new = product(200 + k, 5000 + k, f"New product {200 + k}", long_text(f"new {k}", 1))
        write_rows(spark, aged, [edited, new])
    assert checkpoint.requested not in active_instants(aged)  # archived for real

    cycle = h.cycle()
    assert cycle.mode == "full" and "not on the active timeline" in cycle.reason
    expected = ALL_IDS | {200, 201, 202, 203, 204}
    assert _store_ids(h) == spark_ids(spark, aged) == expected
    assert h.assert_mirror().products == len(expected)
    # Only what changed was embedded: the 5 edits and the 5 new products, nothing else.
    assert cycle.rows == len(expected) and 10 <= cycle.embedded <= 10 * 3
    assert cycle.deleted >= 5  # the edited products' old chunks


def make_settings(path: str) -> Any:
    from app.core.config import Settings

    return Settings(hudi_table_path=path, qdrant_path=":memory:")


def _sync_env(table: str, qdrant: str) -> dict[str, str]:
    return {
        "HUDI_TABLE_PATH": table,
        "QDRANT_PATH": qdrant,
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "HF_HUB_OFFLINE": "1",
    }


def _run_sync(args: list[str], table: str, qdrant: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.sync", *args],
        cwd=ROOT,
        env={**os.environ, **_sync_env(table, qdrant)},
        capture_output=True,
        text=True,
        timeout=300,
    )
