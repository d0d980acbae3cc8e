"""The sync against live Spark-written Hudi tables (COW and MOR), on every store engine.

Every scenario checks the mirror invariant with exact counts after every cycle. Spark
writes each table's history once (a module fixture), copying the table folder after each
step; each engine then replays the steps (the folder restored at one path, a cycle per
step), so a third engine costs its embeddings, not another round of Spark commits.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import ENGINES, Harness, engine_settings, long_text, make_harness, product

pytestmark = pytest.mark.spark

TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
# What Spark does to the table before each step's cycle (the first: create it, empty).
STEPS: list[Callable[[Any, str], object]] = [
    lambda spark, path: None,
    # 1. One commit: the "one commit late" trap reads this as empty.
    lambda spark, path: upsert_rows(
        spark,
        path,
        [
            product(1, 100, "Trail Runner 3", long_text("trail shoe", 3)),
            product(2, 100, "Espresso Pro", long_text("espresso machine", 8), category="kitchen"),
            product(3, 100, "Swim Buds", "Waterproof earbuds for lap swimming.", price=59.0),
        ],
    ),
    # 2. Edit to longer (1) and to much shorter text (2).
    lambda spark, path: upsert_rows(
        spark,
        path,
        [
            product(1, 200, "Trail Runner 3", long_text("trail shoe", 6)),
            product(2, 200, "Espresso Pro", "A compact espresso machine.", category="kitchen"),
        ],
    ),
    # 3. Price only.
    lambda spark, path: upsert_rows(
        spark,
        path,
        [product(3, 300, "Swim Buds", "Waterproof earbuds for lap swimming.", price=49.0)],
    ),
    # 4. Hard delete.
    lambda spark, path: delete_ids(spark, path, [2]),
    # 5. Many commits: delete + re-insert of one id, a new product.
    lambda spark, path: (
        delete_ids(spark, path, [3]),
        upsert_rows(spark, path, [product(3, 500, "Swim Buds 2", "Second generation earbuds.")]),
        upsert_rows(
            spark, path, [product(4, 500, "Camp Stove", long_text("stove", 2), category="outdoor")]
        ),
    ),
]


@pytest.fixture(scope="module")
def histories(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Per table type, the table folder as it stood after each step."""
    out: dict[str, list[Path]] = {}
    for table_type in TABLE_TYPES:
        root = tmp_path_factory.mktemp(table_type.lower())
        path = str(root / "products")
        create_table(spark, path, table_type)  # type: ignore[arg-type]
        out[table_type] = []
        for i, step in enumerate(STEPS):
            step(spark, path)
            out[table_type].append(Path(shutil.copytree(path, root / f"step{i}")))
    return out


@pytest.fixture
def replay(
    histories: dict[str, list[Path]],
    embedder: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    engine: str,
) -> Iterator[tuple[Harness, Callable[[str, int], None]]]:
    """A harness on `engine` over one table path, and `to(table_type, step)` that puts the
    table as it stood after that step at the path."""
    live = tmp_path / "products"
    h = make_harness(live, embedder, **engine_settings(engine, request, tmp_path))

    def to(table_type: str, step: int) -> None:
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(histories[table_type][step], live)

    yield h, to
    h.store.close()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_mirror_holds_through_edits_price_updates_deletes_and_reinserts(
    replay: tuple[Harness, Callable[[str, int], None]], table_type: str
) -> None:
    h, to = replay

    # An empty table: nothing to mirror, and no error.
    to(table_type, 0)
    first = h.cycle()
    assert (first.embedded, first.deleted) == (0, 0)

    # 1. Bootstrap from a single commit: the "one commit late" trap reads this as empty.
    to(table_type, 1)
    boot = h.cycle()
    assert boot.mode == "bootstrap" and boot.rows == 3
    mirror = h.assert_mirror()
    assert boot.embedded == mirror.expected_chunks and boot.skipped == 0
    chunks_before = {pid: n for pid, n in _chunk_counts(h).items()}
    assert chunks_before[2] > chunks_before[1] > 1

    # 2. Edit to longer (1) and to much shorter text (2): old chunks go, fewer remain.
    to(table_type, 2)
    edit = h.cycle()
    assert edit.mode == "incremental" and edit.rows == 2
    h.assert_mirror()
    after = _chunk_counts(h)
    assert after[1] > chunks_before[1]
    assert after[2] == 1
    assert edit.deleted >= chunks_before[2] - 1

    # 3. Price-only update: zero embeddings, payload updated in place.
    to(table_type, 3)
    price = h.cycle()
    assert (price.rows, price.embedded, price.deleted) == (1, 0, 0)
    assert price.payload_updates == 1
    h.assert_mirror()
    assert {c.payload["price"] for c in h.store.chunks_for_products([3])} == {49.0}

    # 4. Hard delete: the row is not returned by the incremental read; the file group the
    #    DELETE commit rewrote tells which key left (no scan of the whole table).
    to(table_type, 4)
    deleted = h.cycle()
    assert deleted.removal_scan == "targeted" and not deleted.key_reconciliation, deleted
    assert deleted.deleted == 1
    h.assert_mirror()
    assert h.store.chunks_for_products([2]) == []

    # 5. Many commits between two cycles: delete + re-insert the same id, a new product,
    #    and an edit.
    to(table_type, 5)
    many = h.cycle()
    assert many.rows == 2 and many.removal_scan in ("targeted", "full"), many
    report = h.assert_mirror()
    assert report.products == 3
    assert {c.payload["name"] for c in h.store.chunks_for_products([3])} == {"Swim Buds 2"}

    # 6. Nothing changed: a no-op cycle embeds nothing.
    idle = h.cycle()
    assert (idle.mode, idle.embedded, idle.deleted) == ("noop", 0, 0)
    h.assert_mirror()


def _chunk_counts(h: Harness) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in h.store.iter_chunks():
        out[c.product_id] = out.get(c.product_id, 0) + 1
    return out
