"""The sync as a service: lost vectors, failing reads, a busy engine, shutdown, the lag.

Table (live Spark, COW), built once for the module: 12 products (ids 1..12) in one commit.
Tests that change it write products with ids from 100 up, so each test knows its rows;
the lag tests write their own table (they need to know when its commits completed).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.core.config import Settings
from app.main import create_app
from app.sync import __main__ as sync_cli
from app.sync import engine as engine_module
from app.sync.apply import ChunkApplier
from app.sync.engine import CycleCancelledError, SyncEngine
from app.sync.hudi_source import TableSnapshot
from app.sync.runner import SyncRunner
from app.sync.switch import ModelSwitch
from spark_jobs.create_table import create_table
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import (
    Harness,
    engine_settings,
    long_text,
    make_harness,
    product,
    utc_instant_epoch,
)

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
@pytest.mark.parametrize("engine", ["memory", pytest.param("server", marks=pytest.mark.server)])
def test_a_dropped_collection_leads_to_a_bootstrap_not_an_empty_mirror(
    table: str, embedder: Any, engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    h = make_harness(table, embedder, **engine_settings(engine, request, tmp_path))
    assert h.cycle().mode == "bootstrap"
    chunks = h.assert_mirror().stored_chunks
    h.store._client.delete_collection(h.settings.qdrant_collection)  # type: ignore[attr-defined]

    again = h.cycle()
    assert again.mode == "bootstrap" and again.embedded == chunks
    assert _ids(h) == IDS
    assert h.assert_mirror().stored_chunks == chunks
    h.store.close()


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
        assert sync_cli._loop(ModelSwitch.single(h.engine), interval=0.2) == 0
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

    busy = client.post("/sync")
    # At once: answered while the long cycle still runs (a wall-clock bound failed at 1.3 s
    # under CI's load; issue 34: no sub-second timing in the suite).
    assert long_cycle.is_alive() and services.engine.running
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


# --- lag: the age of the oldest commit not yet searchable, in both SYNC_MODEs --------------
EPS = 0.002  # float rounding; instant times are milliseconds, read as written


class GatedEmbedder:
    """The real embedder, held at every call until the test opens the gate: a bootstrap
    that keeps running for as long as the test needs it to."""

    def __init__(self, real: Any, gate: threading.Event) -> None:
        self.real = real
        self.gate = gate

    def embed(self, texts: list[str]) -> Any:
        if not self.gate.wait(120):
            raise RuntimeError("the test never opened the gate")
        return self.real.embed(texts)


def _commit(spark: Any, path: str, pid: int) -> str:
    """Upsert one product; returns the completion time of the commit that wrote it."""
    before = time.time()
    upsert_rows(spark, path, [product(pid, 1, f"Item {pid}", long_text(f"item {pid}", 2))])
    after = time.time()
    latest = TableSnapshot(Settings(hudi_table_path=path)).latest
    assert latest is not None
    # The table's timeline is in UTC (create_table): its instant is this machine's clock.
    assert before - EPS <= utc_instant_epoch(latest.completed) <= after + EPS
    return latest.completed


def _assert_lag_is_age_of(client: TestClient, instant: str) -> dict[str, Any]:
    """/sync/status and /metrics say `instant` waits, and the lag is its age when asked."""
    asked = time.time()
    status: dict[str, Any] = client.get("/sync/status").json()
    answered = time.time()
    assert answered - asked < 2.0  # read beside a running cycle, never waiting for it
    metrics = client.get("/metrics").text
    gauged = time.time()
    age = asked - utc_instant_epoch(instant)
    assert status["oldest_unsynced_commit"] == instant
    assert age - EPS <= status["lag_seconds"] <= age + (answered - asked) + EPS
    [gauge] = [
        s.value
        for f in text_string_to_metric_families(metrics)
        for s in f.samples
        if s.name == "sync_lag_seconds"
    ]
    assert status["lag_seconds"] - EPS <= gauge <= age + (gauged - asked) + EPS
    return status


def _status_when(client: TestClient, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll /sync/status: the table and the store are read again at most every 5 s."""
    deadline = time.monotonic() + 15
    while True:
        status: dict[str, Any] = client.get("/sync/status").json()
        if ok(status):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


@pytest.mark.parametrize("mode", ["embedded", "off"])
def test_lag_is_the_age_of_the_oldest_commit_not_yet_searchable(
    mode: Literal["embedded", "off"],
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    first = _commit(spark, path, 300)
    time.sleep(1.0)  # the bootstrap starts well after the commit: its age is not ~0
    gate = threading.Event()

    class GatedApplier(ChunkApplier):
        def __init__(self, store: Any, embedder: Any, *rest: Any) -> None:
            gated: Any = GatedEmbedder(embedder, gate)  # the applier only calls embed()
            super().__init__(store, gated, *rest)

    monkeypatch.setattr(engine_module, "ChunkApplier", GatedApplier)
    settings = Settings(
        hudi_table_path=path,
        qdrant_path=":memory:",
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_interval_seconds=3600,
        sync_mode=mode,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        services = app.state.services
        if mode == "embedded":
            syncer = services.engine  # the startup cycle: a bootstrap, held by the gate
        else:
            # No cycle yet anywhere: nothing is searchable, the first commit waits.
            status = _assert_lag_is_age_of(client, first)
            assert (status["ready"], status["checkpoint"]) == (False, None)
            # The syncer: another engine writing the index this replica serves.
            syncer = SyncEngine(settings, services.store, services.embedder)
            threading.Thread(target=syncer.run_cycle, daemon=True).start()
        deadline = time.monotonic() + 60
        while not syncer.running:
            assert time.monotonic() < deadline
            time.sleep(0.01)

        # Bootstrap running: no checkpoint, the first commit waits, and its age grows.
        during = _assert_lag_is_age_of(client, first)
        assert (during["checkpoint"], during["ready"]) == (None, False)
        assert during["running"] is (mode == "embedded")
        assert during["lag_seconds"] >= 1.0
        time.sleep(1.0)
        later = _assert_lag_is_age_of(client, first)
        assert later["lag_seconds"] >= during["lag_seconds"] + 1.0 - EPS

        gate.set()
        assert syncer.wait_idle(120)
        assert (syncer.totals.cycles, syncer.totals.last_error) == (1, None)
        # Mirrored: the checkpoint covers the newest commit, nothing waits.
        synced = _status_when(client, lambda s: s["checkpoint"] == first)
        assert (synced["lag_seconds"], synced["oldest_unsynced_commit"]) == (0.0, None)
        assert synced["ready"] is True and synced["table_latest_commit"] == first

        # A new commit, no cycle yet (the next is an hour away): it waits, lag is its age.
        second = _commit(spark, path, 301)
        _status_when(client, lambda s: s["oldest_unsynced_commit"] is not None)
        waiting = _assert_lag_is_age_of(client, second)
        assert (waiting["checkpoint"], waiting["table_latest_commit"]) == (first, second)
        assert syncer.totals.cycles == 1
