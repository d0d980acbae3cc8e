"""Removals are found from the file groups the removing commits wrote, and the mirror stays
exact; where that cannot be sure, the cycle compares every key and says why.

Table history (live Spark, COW and MOR, `tests/hudi_writes.py` aged settings, MOR with
inline compaction every 2 delta commits): one upsert of products 1..12 (one file group),
then, one test per path and a cycle after each: a datasource `delete` (2), spark_jobs'
`delete_ids` (3), Spark SQL `DELETE FROM` (4), `MERGE INTO ... THEN DELETE` (5), an upsert
batch that edits 1 and deletes 6 by `_hoodie_is_deleted`, and `INSERT OVERWRITE` without 7.
Every path but INSERT OVERWRITE (a replacecommit: its file groups are swapped, not
rewritten) must take the targeted path. The last test cleans the slice a checkpoint saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from tests.hudi_writes import (
    datasource_delete,
    insert_overwrite_without,
    marker_delete,
    merge_delete,
    spark_ids,
    sql_delete,
    write_rows,
)
from tests.synctools import Harness, make_harness, product

pytestmark = [pytest.mark.spark]


def _row(pid: int, ts: int = 1) -> dict[str, Any]:
    return product(pid, ts, f"Removal product {pid}", f"Item {pid} for the removal tests.")


def _delete_job(spark: Any, path: str, pid: int) -> None:
    result = delete_ids(spark, path, [pid])
    assert (result.deleted, result.not_found) == (1, 0)


def _marker(spark: Any, path: str, pid: int) -> None:
    marker_delete(spark, path, pid, _row(1, ts=time.time_ns() // 10**6))


# path -> (victim, how Spark removes it, the scan the cycle must use)
PATHS: dict[str, tuple[int, Callable[[Any, str, int], Any], str]] = {
    "datasource_delete": (2, datasource_delete, "targeted"),
    "delete_products_job": (3, _delete_job, "targeted"),
    "sql_delete_from": (4, sql_delete, "targeted"),
    "merge_into_then_delete": (5, merge_delete, "targeted"),
    "hoodie_is_deleted_marker": (6, _marker, "targeted"),
    "insert_overwrite": (7, insert_overwrite_without, "full"),
}


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def synced(
    request: pytest.FixtureRequest, spark: Any, embedder: Any, tmp_path_factory: Any
) -> Iterator[tuple[str, Harness]]:
    path = str(tmp_path_factory.mktemp(f"removals-{request.param}") / "products")
    create_table(spark, path, request.param)
    write_rows(spark, path, [_row(pid) for pid in range(1, 13)])
    h = make_harness(path, embedder)
    assert h.cycle().mode == "bootstrap"
    yield path, h
    h.store.close()


def _store_ids(h: Harness) -> set[int]:
    return {c.product_id for c in h.store.iter_chunks(fields=["product_id"])}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path_name", list(PATHS))
def test_each_delete_path_is_found_the_expected_way_and_the_mirror_is_exact(
    synced: tuple[str, Harness], spark: Any, path_name: str
) -> None:
    path, h = synced
    pid, remove, scan = PATHS[path_name]
    assert pid in _store_ids(h)

    remove(spark, path, pid)
    report = h.cycle()

    assert report.mode == "incremental" and report.removal_scan == scan, report
    assert report.key_reconciliation == (scan == "full"), report
    if scan == "full":
        assert "replaced file groups" in report.removal_fallback, report
    expected = spark_ids(spark, path)
    assert pid not in expected
    assert _store_ids(h) == expected
    assert h.assert_mirror().products == len(expected)


def test_a_cleaned_slice_at_the_checkpoint_falls_back_to_every_key(
    spark: Any, embedder: Any, tmp_path: Path
) -> None:
    """COW, cleaner keeping 1 commit: three edits after the checkpoint clean the base file
    the checkpoint saw; a delete then cannot be read by file group, yet the mirror is exact."""
    path = str(tmp_path / "products")
    create_table(spark, path)
    write_rows(spark, path, [_row(pid) for pid in range(1, 7)])
    h = make_harness(path, embedder)
    h.cycle()
    cp = h.engine.checkpoint()
    assert cp is not None
    seen = list(Path(path).glob(f"*_{cp.requested}.parquet"))
    assert len(seen) == 1

    # Archival far away (the checkpoint must stay active), cleaning right behind.
    clean = {
        "hoodie.keep.min.commits": "20",
        "hoodie.keep.max.commits": "30",
        "hoodie.cleaner.commits.retained": "1",
    }
    for k in range(3):
        write_rows(spark, path, [_row(1, ts=10 + k)], conf=clean)
    assert not seen[0].exists(), "the cleaner kept the checkpoint's slice"
    datasource_delete(spark, path, 2)

    report = h.cycle()
    assert report.mode == "incremental" and report.removal_scan == "full", report
    assert "not found" in report.removal_fallback or "cleaned" in report.removal_fallback
    expected = spark_ids(spark, path)
    assert expected == {1, 3, 4, 5, 6}
    assert _store_ids(h) == expected
    assert h.assert_mirror().products == len(expected)
    h.store.close()
