"""The table on object storage, end to end, against a local S3 server (moto) started here.

History of s3://<bucket>/products (COPY_ON_WRITE, written by Spark through s3a):
1. upsert ids 1-4 (a swim headset, an espresso machine, a trail shoe, a tent) -> sync;
2. delete id 4 -> sync.
The app (create_app, embedded sync, in-memory Qdrant) reads the same table as s3:// with
hudi-rs and must mirror exactly ids 1-4, then exactly ids 1-3 (the tent's chunks removed),
and POST /recommend must find each product by meaning, and never the deleted tent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from app.sync.verify import mirror_verify
from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from spark_jobs.session import configure_s3a
from spark_jobs.upsert_products import upsert_rows
from tests.live_server import wait_ready
from tests.local_s3 import LocalS3 as LocalS3  # re-exported: tests/spark_jobs/test_ingest.py
from tests.local_s3 import start_local_s3
from tests.synctools import product

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# id, name, description, category, price
CATALOG = [
    (
        1,
        "AquaBeat Swim Headset",
        "Waterproof bone-conduction headphones for lap swimming, IPX8, holds 8 GB of music.",
        "audio",
        89.0,
    ),
    (
        2,
        "Barista Espresso Machine",
        "A 15-bar pump espresso maker with a steam wand for milk foam.",
        "kitchen",
        249.0,
    ),
    (
        3,
        "Ridge Trail Running Shoe",
        "Grippy lugged outsole and a rock plate for muddy mountain trails.",
        "shoes",
        129.0,
    ),
    (
        4,
        "Summit Two-Person Tent",
        "A light backpacking tent for two with a full rain fly.",
        "outdoors",
        199.0,
    ),
]


@pytest.fixture
def local_s3() -> Iterator[LocalS3]:
    with start_local_s3() as s3:
        yield s3


def test_spark_writes_to_s3a_and_the_app_syncs_and_recommends_from_s3(
    spark: Any, local_s3: LocalS3
) -> None:
    # The shared session was built for local tables; s3a is configured on it at runtime.
    configure_s3a(spark, Settings(**local_s3.settings()))
    spark_path = f"s3a://{local_s3.bucket}/products"
    create_table(spark, spark_path)
    rows = [
        product(pid, 100, name, description, category=category, price=price)
        for pid, name, description, category, price in CATALOG
    ]
    assert upsert_rows(spark, spark_path, rows).upserted == 4

    # The app names the same table with s3:// (hudi-rs / object_store spelling) and syncs
    # it in the background; an hour's interval leaves the later cycles to POST /sync.
    settings = Settings(
        hudi_table_path=f"s3://{local_s3.bucket}/products",
        qdrant_path=":memory:",
        sync_mode="embedded",
        sync_interval_seconds=3600,
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        openai_api_key=None,
        api_key=None,
        **local_s3.settings(),
    )
    with TestClient(create_app(settings)) as client:
        wait_ready(client, 60)
        services = client.app.state.services  # type: ignore[attr-defined]

        def assert_mirror(products: int) -> int:
            report = mirror_verify(settings, services.store, services.engine.chunker)
            assert (report.missing, report.stale, report.extra) == (0, 0, 0), report
            assert report.products == products
            assert report.stored_chunks == report.expected_chunks
            return int(report.stored_chunks)

        def recommended(query: str) -> list[int]:
            r = client.post("/recommend", json={"query": query, "top_k": 3})
            assert r.status_code == 200, r.text
            return [p["id"] for p in r.json()["products"]]

        chunks = assert_mirror(4)
        tent_chunks = len(services.store.chunks_for_products([4]))
        assert tent_chunks >= 1
        assert recommended("a tent for camping")[0] == 4

        # A delete is not returned by the incremental read: the sync must notice it anyway.
        assert delete_ids(spark, spark_path, [4]).deleted == 1
        cycle = client.post("/sync")
        assert cycle.status_code == 200, cycle.text
        assert (cycle.json()["embedded"], cycle.json()["deleted"]) == (0, tent_chunks)
        assert assert_mirror(3) == chunks - tent_chunks

        assert recommended("headphones I can wear while swimming")[0] == 1
        assert recommended("coffee machine that makes espresso")[0] == 2
        assert recommended("shoes for running on mountain trails")[0] == 3
        assert 4 not in recommended("a tent for camping")

        # No new commit, no work: the checkpoint matches the newest completion time on S3.
        idle = client.post("/sync").json()
        assert (idle["embedded"], idle["deleted"]) == (0, 0)
