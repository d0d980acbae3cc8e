"""The sync as a service: lost vectors, failing reads, a busy engine, shutdown, SYNC_MODE=off.

Table (live Spark, COW), built once for the module: 12 products (ids 1..12) in one commit.
Tests that change it write products with ids from 100 up, so each test knows its rows.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from app.sync import __main__ as sync_cli
from app.sync import engine as engine_module
from app.sync.engine import CycleCancelledError
from app.sync.hudi_source import TableSnapshot
from app.sync.runner import SyncRunner
from app.sync.state import instant_seconds_between
from spark_jobs.create_table import create_table
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import Harness, long_text, make_harness, product

pytestmark = pytest.mark.spark

IDS = set(range(1, 13))


@pytest.fixture(scope="module")
def table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("service") / "products")
    create_table(spark, path)
    upsert_rows(spark, path, [product(i, 1, f"Item {i}", long_text(f"item {i}", 2)) for i in IDS])
    return path


def _ids(h: Harness) -> set[int]:
    return {c.product_id for c in h.store.iter_chunks(fields=["product_id"])}


# --- vectors and checkpoint share one lifetime ----------------------------------------
def test_a_dropped_collection_leads_to_a_bootstrap_not_an_empty_mirror(
    table: str, embedder: Any
) -> None:
    h = make_harness(table, embedder)  # qdrant-client, in memory
    assert h.cycle().mode == "bootstrap"
    chunks = h.assert_mirror().stored_chunks
    h.store._client.delete_collection(h.settings.qdrant_collection)  # type: ignore[attr-defined]

    again = h.cycle()
    assert again.mode == "bootstrap" and again.embedded == chunks
    assert _ids(h) == IDS
    assert h.assert_mirror().stored_chunks == chunks


def test_an_edge_checkpoint_without_its_vectors_leads_to_a_bootstrap(
    table: str, embedder: Any, tmp_path: Path
) -> None:
    qdrant = tmp_path / "qdrant"
    h = make_harness(table, embedder, qdrant_path=str(qdrant))
    h.cycle()
    chunks = h.assert_mirror().stored_chunks
    h.store.close()
    for child in qdrant.iterdir():  # the shard is wiped, sync_state.json survives
        if child.name != "sync_state.json":
            shutil.rmtree(child) if child.is_dir() else child.unlink()

    h = make_harness(table, embedder, qdrant_path=str(qdrant))
    again = h.cycle()
    assert again.mode == "bootstrap" and again.embedded == chunks
    assert h.assert_mirror().products == len(IDS)
    h.store.close()


def test_an_emptied_store_under_its_checkpoint_is_refilled(table: str, embedder: Any) -> None:
    h = make_harness(table, embedder)
    h.cycle()
    chunks = h.assert_mirror().stored_chunks
    h.store.delete_products(sorted(IDS))  # the checkpoint stays, the vectors go

    again = h.cycle()
    assert again.mode == "full" and "store is empty" in again.reason
    assert again.embedded == chunks
    h.assert_mirror()


# --- failures: logged, backed off, recovered ----------------------------------------------
class FlakyTable:
    """Opens the real table, except that the first `failures` opens raise (not a store or
    table error: what an unexpected library error looks like)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.opens = 0

    def __call__(self, settings: Settings) -> TableSnapshot:
        self.opens += 1
        if self.opens <= self.failures:
            raise RuntimeError("SlowDown: please reduce your request rate")
        return TableSnapshot(settings)


def test_cli_loop_logs_backs_off_and_recovers(
    table: str, embedder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    h = make_harness(table, embedder)
    flaky = FlakyTable(failures=2)

    def open_table(settings: Settings) -> TableSnapshot:
        if flaky.opens == 3:  # after the recovering cycle: stop the loop like Ctrl-C does
            raise KeyboardInterrupt
        return flaky(settings)

    h.engine._open_table = open_table
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="app.sync"):
        assert sync_cli._loop(h.engine, interval=0.2) == 0
    failed = [r.getMessage() for r in caplog.records if "sync cycle failed" in r.getMessage()]
    assert len(failed) == 2 and "RuntimeError: SlowDown" in failed[0]
    assert "retry 1 in 0s" in failed[0] and "retry 2 in 0s" in failed[1]  # 0.2 s, then 0.4 s
    assert time.monotonic() - started >= 0.6
    assert (h.engine.totals.failures, h.engine.totals.cycles) == (2, 1)
    assert h.engine.totals.last_error is None
    assert _ids(h) == IDS
    h.assert_mirror()


def test_api_runner_logs_backs_off_and_recovers(
    table: str, embedder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    h = make_harness(table, embedder)
    h.engine._open_table = FlakyTable(failures=1)

    async def serve() -> None:
        runner = SyncRunner(h.engine, interval=0.2)
        runner.start()
        deadline = time.monotonic() + 60
        while not runner.ready:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await runner.stop()

    with caplog.at_level(logging.ERROR, logger="app.sync.runner"):
        asyncio.run(serve())
    [failed] = [r.getMessage() for r in caplog.records]
    assert failed.startswith("sync cycle failed (RuntimeError: SlowDown:")
    assert h.engine.totals.failures == 1 and h.engine.totals.cycles >= 1
    h.assert_mirror()


# --- a busy engine, shutdown --------------------------------------------------------------
class SlowEmbedder:
    """The real embedder, one second slower per call: a long cycle, made of real batches."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def embed(self, texts: list[str]) -> Any:
        time.sleep(1.0)
        return self.real.embed(texts)


@pytest.fixture
def service(table: str, tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    settings = Settings(
        hudi_table_path=table,
        qdrant_path=":memory:",
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_interval_seconds=3600,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        services = app.state.services
        assert services.engine.wait_idle(120)  # the startup cycle
        yield client, services


def test_post_sync_answers_at_once_while_a_cycle_runs(
    service: tuple[TestClient, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, services = service
    monkeypatch.setattr(engine_module, "PRODUCT_BATCH", 2)
    services.engine.applier.embedder = SlowEmbedder(services.embedder)
    long_cycle = threading.Thread(target=lambda: client.post("/sync?full=true"))
    services.store.delete_products(sorted(IDS))  # a full cycle with everything to embed
    long_cycle.start()
    deadline = time.monotonic() + 30
    while not services.engine.running:
        assert time.monotonic() < deadline
        time.sleep(0.01)

    started = time.monotonic()
    busy = client.post("/sync")
    assert time.monotonic() - started < 1.0
    assert busy.status_code == 202 and busy.json()["status"] == "running"
    assert client.get("/sync/status").json()["running"] is True
    long_cycle.join(120)
    assert not services.engine.running


def test_shutdown_stops_a_long_cycle_and_closes_the_store_after_it(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(
        hudi_table_path=table,
        qdrant_path=":memory:",
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_interval_seconds=3600,
    )
    monkeypatch.setattr(engine_module, "PRODUCT_BATCH", 2)
    app = create_app(settings)
    closed_while_running: list[bool] = []
    outcome: list[BaseException | None] = []
    with TestClient(app):
        services = app.state.services
        assert services.engine.wait_idle(120)
        services.store.delete_products(sorted(IDS))
        services.engine.applier.embedder = SlowEmbedder(services.embedder)
        real_close = services.store.close

        def close() -> None:
            closed_while_running.append(services.engine.running)
            real_close()

        services.store.close = close

        def cycle() -> None:
            try:
                services.engine.run_cycle(full=True)
                outcome.append(None)
            except BaseException as e:
                outcome.append(e)

        thread = threading.Thread(target=cycle)
        thread.start()
        while not services.engine.running:
            time.sleep(0.01)
        time.sleep(1.5)  # well into the 6 batches x 1 s cycle
        started = time.monotonic()
    shutdown = time.monotonic() - started
    thread.join(30)
    assert shutdown < 5.0  # one batch, not the rest of the cycle (nor the 60 s timeout)
    assert closed_while_running == [False]
    assert len(outcome) == 1 and isinstance(outcome[0], CycleCancelledError)


# --- SYNC_MODE=off: status from the table ---------------------------------------------------
def test_status_lag_is_read_from_the_table_with_sync_mode_off(
    spark: Any, embedder: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    upsert_rows(spark, path, [product(100, 1, "Lone item", "The only product, for now.")])
    qdrant = str(tmp_path / "qdrant")
    h = make_harness(path, embedder, qdrant_path=qdrant)
    first = h.cycle()
    h.store.close()
    time.sleep(1.1)  # instant times have millisecond resolution; make the lag visible
    upsert_rows(spark, path, [product(101, 1, "Second item", "Written after the sync ran.")])
    latest = TableSnapshot(h.settings).latest
    assert latest is not None and first.end is not None

    settings = Settings(
        hudi_table_path=path,
        qdrant_path=qdrant,
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_mode="off",
    )
    with TestClient(create_app(settings)) as client:
        status = client.get("/sync/status").json()
        metrics = client.get("/metrics").text
    assert status["mode"] == "off" and status["ready"] is True
    assert (status["checkpoint"], status["table_latest_commit"]) == (first.end, latest.completed)
    lag = instant_seconds_between(first.end, latest.completed)
    assert status["lag_seconds"] == lag and lag >= 1.0
    assert f"sync_lag_seconds {lag}" in metrics
