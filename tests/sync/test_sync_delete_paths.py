"""A product removed through any path a shop's jobs use is gone from /recommend after one
cycle, and the mirror is exact (Spark SQL's ids == the store's ids, 0/0/0).

Table history (live Spark, COW, written with the aged settings of tests/hudi_writes.py):
three upserts of 6 products each (ids 1..18, every name distinct), then one removal per
test, in this order: a datasource `delete` write (DELETE), the `spark_jobs.delete_products`
job through its CLI entry point in this same session (DELETE), Spark SQL DELETE FROM (DELETE),
MERGE INTO ... WHEN MATCHED THEN DELETE (UPSERT with numDeletes 1), an upsert batch that
edits product 1 and deletes another by `_hoodie_is_deleted` (UPSERT, numDeletes 1), and
INSERT OVERWRITE of every row but one (replacecommit, INSERT_OVERWRITE_TABLE). The two
UPSERT paths are the ones an operationType check alone never sees.

Each removal is written once and then synced by three services, one per store engine
(qdrant-client in memory, the embedded edge shard, a real Qdrant server when one is
configured), each checked the same way.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from app.sync.verify import mirror_verify
from spark_jobs import delete_products
from spark_jobs.create_table import create_table
from tests import qdrant_server
from tests.hudi_writes import (
    datasource_delete,
    insert_overwrite_without,
    marker_delete,
    merge_delete,
    spark_ids,
    sql_delete,
    write_rows,
)
from tests.synctools import engine_settings, product

pytestmark = [pytest.mark.spark, pytest.mark.slow]
REMOVAL_TIMEOUT_S = 180  # one removal and one cycle take 5-15 s on the shared 2-core box

NAMES = [
    "Glacier carbon kayak paddle",
    "Ember cast iron skillet",
    "Nimbus burr espresso grinder",
    "Sable trail running shoes",
    "Quartz adjustable desk lamp",
    "Harbor waterproof duffel bag",
    "Falcon cordless leaf blower",
    "Lotus bamboo yoga mat",
    "Atlas steel tool chest",
    "Comet kids balance bike",
    "Orchid ceramic plant pot",
    "Tundra down sleeping bag",
    "Maple wooden chess set",
    "Pixel retro game console",
    "Coral snorkel mask set",
    "Willow rattan laundry basket",
    "Summit trekking poles pair",
    "Breeze tower fan remote",
]
DESCRIPTIONS = {
    i: f"{name}. A dependable {name.split()[-1]} chosen by shoppers for everyday use."
    for i, name in enumerate(NAMES, start=1)
}


def _row(pid: int, ts: int = 1) -> dict[str, Any]:
    return product(pid, ts, NAMES[pid - 1], DESCRIPTIONS[pid])


def _marker(spark: Any, path: str, pid: int) -> None:
    edit = product(1, 50, NAMES[0], DESCRIPTIONS[1] + " Now with a spare blade.")
    marker_delete(spark, path, pid, edit)


def _delete_job(spark: Any, path: str, pid: int) -> None:
    """`python -m spark_jobs.delete_products --id PID` in-process: main() takes the shared
    session as the active one (get_spark), the way it takes spark-submit's."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = delete_products.main(["--table-path", path, "--id", str(pid)])
    assert (code, out.getvalue().splitlines()) == (
        0,
        ["requested 1", "deleted 1", "not_found 0"],
    )


# path name -> (victim id, how Spark removes it, whether the commit is an UPSERT)
PATHS: dict[str, tuple[int, Callable[[Any, str, int], Any], bool]] = {
    "datasource_delete": (2, datasource_delete, False),
    "delete_products_job": (3, _delete_job, False),
    "sql_delete_from": (4, sql_delete, False),
    "merge_into_then_delete": (5, merge_delete, True),
    "hoodie_is_deleted_marker": (6, _marker, True),
    "insert_overwrite": (7, insert_overwrite_without, False),
}


@dataclass
class Service:
    app: FastAPI
    client: TestClient
    settings: Settings
    table: str


@dataclass
class Catalog:
    table: str
    services: dict[str, Service]
    # Removals written so far, each with Spark SQL's ids after it.
    removed: dict[str, set[int]]


ENGINE_NAMES = ("memory", "edge", "server")
# Path-major: a removal is written by the first engine's case, then every engine syncs it.
CASES = [
    pytest.param(p, e, marks=[pytest.mark.server] if e == "server" else [], id=f"{p}-{e}")
    for p in PATHS
    for e in ENGINE_NAMES
]


@pytest.fixture(scope="module")
def catalog(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Catalog]:
    table = str(tmp_path_factory.mktemp("delete-paths") / "products")
    create_table(spark, table)
    for first in (1, 7, 13):
        write_rows(spark, table, [_row(pid) for pid in range(first, first + 6)])
    engines = [e for e in ENGINE_NAMES if e != "server" or qdrant_server.configured()]
    services: dict[str, Service] = {}
    with contextlib.ExitStack() as stack:
        for engine in engines:
            settings = Settings(
                hudi_table_path=table,
                max_chunk_tokens=64,
                chunk_overlap_tokens=8,
                sync_interval_seconds=3600,  # cycles are driven by POST /sync below
                **engine_settings(engine, request, tmp_path_factory.mktemp(engine)),
            )
            app = create_app(settings)
            client = stack.enter_context(TestClient(app))
            assert sync_now(client)["mode"] in ("bootstrap", "noop")
            services[engine] = Service(app, client, settings, table)
        yield Catalog(table, services, {})


def sync_now(client: TestClient) -> dict[str, Any]:
    """POST /sync; the startup cycle may still run, and then the answer is 202 at once."""
    for _ in range(600):
        response = client.post("/sync")
        if response.status_code != 202:
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            return body
        client.get("/health")  # yield a moment to the running cycle
    raise AssertionError("a sync cycle never finished")


def recommended_ids(client: TestClient, query: str) -> list[int]:
    response = client.post("/recommend", json={"query": query, "top_k": 5})
    assert response.status_code == 200, response.text
    return [p["id"] for p in response.json()["products"]]


# A removal that deadlocks the JVM (delete_products' cached count once did) would wait
# forever: past this bound the run stops with every thread's stack instead.
@pytest.mark.timeout(REMOVAL_TIMEOUT_S, method="thread", func_only=True)
@pytest.mark.parametrize(("path_name", "engine"), CASES)
def test_a_removed_product_is_gone_from_recommend_after_one_cycle(
    catalog: Catalog, spark: Any, path_name: str, engine: str
) -> None:
    service = catalog.services[engine]
    pid, remove, is_upsert = PATHS[path_name]
    query = NAMES[pid - 1]
    # Found before this engine's cycle, whether or not Spark has removed it yet.
    assert pid in recommended_ids(service.client, query)

    if path_name not in catalog.removed:
        remove(spark, catalog.table, pid)
        catalog.removed[path_name] = spark_ids(spark, catalog.table)
    report = sync_now(service.client)

    assert report["mode"] == "incremental", report
    # INSERT OVERWRITE swaps file groups: every key is compared; the others are read from
    # the file groups their commit rewrote (tests/sync/test_sync_removals.py, both types).
    scan = "full" if path_name == "insert_overwrite" else "targeted"
    assert report["removal_scan"] == scan and report["key_reconciliation"] == (scan == "full")
    assert report["deleted"] >= 1
    if is_upsert:
        # Found by numDeletes in the commit's write stats: the operation says UPSERT.
        assert "UPSERT@" in report["reason"] and "deletes=1" in report["reason"], report
    assert pid not in recommended_ids(service.client, query)

    services = service.app.state.services
    expected = catalog.removed[path_name]
    assert pid not in expected
    stored = {c.product_id for c in services.store.iter_chunks(fields=["product_id"])}
    assert stored == expected
    mirror = mirror_verify(service.settings, services.store, services.engine.chunker)
    assert (mirror.missing, mirror.stale, mirror.extra) == (0, 0, 0), mirror
    assert mirror.products == len(expected)
