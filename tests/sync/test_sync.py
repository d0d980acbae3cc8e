"""The sync against live Spark-written Hudi tables (COW and MOR) and an in-memory Qdrant.

Every scenario checks the mirror invariant with exact counts after every cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import long_text, make_harness, product

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_mirror_holds_through_edits_price_updates_deletes_and_reinserts(
    spark: Any, embedder: Any, tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path, table_type)  # type: ignore[arg-type]
    h = make_harness(path, embedder)

    # An empty table: nothing to mirror, and no error.
    first = h.cycle()
    assert (first.embedded, first.deleted) == (0, 0)

    # 1. Bootstrap from a single commit: the "one commit late" trap reads this as empty.
    upsert_rows(
        spark,
        path,
        [
            product(1, 100, "Trail Runner 3", long_text("trail shoe", 3)),
            product(2, 100, "Espresso Pro", long_text("espresso machine", 8), category="kitchen"),
            product(3, 100, "Swim Buds", "Waterproof earbuds for lap swimming.", price=59.0),
        ],
    )
    boot = h.cycle()
    assert boot.mode == "bootstrap" and boot.rows == 3
    mirror = h.assert_mirror()
    assert boot.embedded == mirror.expected_chunks and boot.skipped == 0
    chunks_before = {pid: n for pid, n in _chunk_counts(h).items()}
    assert chunks_before[2] > chunks_before[1] > 1

    # 2. Edit to longer (1) and to much shorter text (2): old chunks go, fewer remain.
    upsert_rows(
        spark,
        path,
        [
            product(1, 200, "Trail Runner 3", long_text("trail shoe", 6)),
            product(2, 200, "Espresso Pro", "A compact espresso machine.", category="kitchen"),
        ],
    )
    edit = h.cycle()
    assert edit.mode == "incremental" and edit.rows == 2
    h.assert_mirror()
    after = _chunk_counts(h)
    assert after[1] > chunks_before[1]
    assert after[2] == 1
    assert edit.deleted >= chunks_before[2] - 1

    # 3. Price-only update: zero embeddings, payload updated in place.
    upsert_rows(
        spark,
        path,
        [product(3, 300, "Swim Buds", "Waterproof earbuds for lap swimming.", price=49.0)],
    )
    price = h.cycle()
    assert (price.rows, price.embedded, price.deleted) == (1, 0, 0)
    assert price.payload_updates == 1
    h.assert_mirror()
    assert {c.payload["price"] for c in h.store.chunks_for_products([3])} == {49.0}

    # 4. Hard delete: the row is not returned by the incremental read; the file group the
    #    DELETE commit rewrote tells which key left (no scan of the whole table).
    delete_ids(spark, path, [2])
    deleted = h.cycle()
    assert deleted.removal_scan == "targeted" and not deleted.key_reconciliation, deleted
    assert deleted.deleted == 1
    h.assert_mirror()
    assert h.store.chunks_for_products([2]) == []

    # 5. Many commits between two cycles: delete + re-insert the same id, a new product,
    #    and an edit.
    delete_ids(spark, path, [3])
    upsert_rows(spark, path, [product(3, 500, "Swim Buds 2", "Second generation earbuds.")])
    upsert_rows(
        spark, path, [product(4, 500, "Camp Stove", long_text("stove", 2), category="outdoor")]
    )
    many = h.cycle()
    assert many.rows == 2 and many.removal_scan in ("targeted", "full"), many
    report = h.assert_mirror()
    assert report.products == 3
    assert {c.payload["name"] for c in h.store.chunks_for_products([3])} == {"Swim Buds 2"}

    # 6. Nothing changed: a no-op cycle embeds nothing.
    idle = h.cycle()
    assert (idle.mode, idle.embedded, idle.deleted) == ("noop", 0, 0)
    h.assert_mirror()


def _chunk_counts(h: Any) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in h.store.iter_chunks():
        out[c.product_id] = out.get(c.product_id, 0) + 1
    return out
