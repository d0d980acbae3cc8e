"""The mirror invariant covers the BM25 side: a live Spark table, the sync, the edge engine.

Table history: one commit of three products (COW), then a price-only update of product 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from app.store.edge_store import EdgeStore
from app.store.hybrid import SPARSE_VECTOR, query_sparse
from spark_jobs.create_table import create_table
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import make_harness, product

pytestmark = pytest.mark.spark


def test_a_chunk_without_its_bm25_vector_is_stale_and_a_price_update_embeds_nothing(
    spark: Any, embedder: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path, "COPY_ON_WRITE")
    h = make_harness(path, embedder, qdrant_path=str(tmp_path / "edge"))
    upsert_rows(
        spark,
        path,
        [
            product(1, 100, "Trail Runner 3", "A light trail shoe with a grippy sole."),
            product(2, 100, "Espresso Pro", "A compact espresso machine.", category="kitchen"),
            product(3, 100, "Swim Buds", "Waterproof earbuds for lap swimming.", price=59.0),
        ],
    )
    boot = h.cycle()
    report = h.assert_mirror()
    assert boot.embedded == report.expected_chunks == 3
    assert h.store.chunk_ids_without_sparse() == []
    # BM25 finds the product by a word its vector alone need not rank first.
    hits = h.store.search_products(
        None, limit=3, chunks_per_product=1, sparse=query_sparse("espresso")
    )
    assert [x.product_id for x in hits] == [2]

    # The sparse vector of product 2's chunk goes missing (the engine drops it).
    assert isinstance(h.store, EdgeStore)
    (damaged,) = [c.id for c in h.store.chunks_for_products([2])]
    h.store._require().update(qe.UpdateOperation.delete_vectors([damaged], [SPARSE_VECTOR]))
    broken = h.verify()
    assert (broken.missing, broken.stale, broken.extra) == (0, 1, 0)
    assert broken.examples["stale"] == [damaged]

    # A price-only update still embeds nothing (BM25 is of the text, the price is payload).
    upsert_rows(
        spark,
        path,
        [product(3, 200, "Swim Buds", "Waterproof earbuds for lap swimming.", price=49.0)],
    )
    price = h.cycle()
    assert (price.rows, price.embedded, price.deleted, price.payload_updates) == (1, 0, 0, 1)
    assert h.store.chunk_ids_without_sparse() == [damaged]
    h.store.close()
