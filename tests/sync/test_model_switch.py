"""A model switch in the sync: LEARNED_MODEL names another encoder than the serving index's.

The catalog is a copy of the committed `cow_aged` table (118 products). The packaged
MiniLM's index is bootstrapped first; then the sync is opened with LEARNED_MODEL pointing
at a second real encoder (tests/learned_models.py). One cycle must: keep the packaged
index serving, bootstrap the learned one beside it, verify it 0/0/0, catch up a product
Spark writes after that bootstrap, switch the pointer (edge: `serving.json`; server: the
collection alias) and drop the old index. Reopened, the learned index serves and
`--verify` reads it with its own encoder; switching back moves the pointer again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any, cast

import pytest

from app.core.config import Settings
from app.core.ports import free_port
from app.retrieval import Retriever
from app.store import open_store
from app.store.base import StoreFencedError
from app.store.slots import POINTER_FILE, IndexSlots, model_slug
from app.sync.lease import LeaseStore, SyncLease
from app.sync.switch import ModelSwitch, open_indexes
from app.sync.verify import mirror_verify
from spark_jobs.upsert_products import upsert_rows
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.learned_models import model_cache_fixture, second_encoder_fixture  # noqa: F401
from tests.qdrant_server import FENCED_API_KEY, qdrant_fenced_server_fixture  # noqa: F401
from tests.store.sample_points import point
from tests.synctools import engine_settings, product, sync_cli_in_process

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = "all-MiniLM-L6-v2"
NEW_ID = 9001
NEW_NAME = "Tidal Kayak Paddle"


def _mirror(switch: ModelSwitch) -> tuple[int, int, int, int]:
    engine = switch.serving
    report = mirror_verify(engine.settings, engine.store, engine.chunker)
    return report.missing, report.stale, report.extra, report.products


def _ids(switch: ModelSwitch) -> set[int]:
    return {c.product_id for c in switch.serving.store.iter_chunks(fields=["product_id"])}


@pytest.mark.parametrize("engine", ["edge", pytest.param("server", marks=pytest.mark.server)])
def test_switch_builds_beside_verifies_catches_up_and_drops_the_old_index(
    engine: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    second_encoder: Path,
    model_cache: Path,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    store = engine_settings(engine, request, tmp_path)
    packaged = Settings(
        hudi_table_path=str(table),
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_lock_dir=str(tmp_path / "locks"),
        model_cache_dir=str(model_cache),
        **store,
    )
    learned = packaged.model_copy(update={"learned_model": str(second_encoder)})
    slots = IndexSlots(packaged)

    first = open_indexes(packaged)
    try:
        assert first.building is None and first.serving_model.startswith(PACKAGED)
        assert first.run_cycle().mode == "bootstrap"
        old_index, old_chunks = first.serving_index, first.serving.store.count()
    finally:
        first.close()
    # Reopened with the same encoder: its index is recognised, nothing is built beside it.
    same = open_indexes(packaged)
    try:
        assert same.building is None and same.serving_index == old_index
    finally:
        same.close()

    switch = open_indexes(learned)
    try:
        building = switch.building
        assert building is not None and switch.build is not None
        new_model = building.embedder.model_id
        assert new_model.startswith("learned-") and switch.serving_model.startswith(PACKAGED)
        assert switch.serving_index == old_index
        assert switch.building_index == slots.beside(new_model) != old_index

        # A product lands after the learned index's bootstrap: the catch-up must carry it.
        real_run = building.run_held
        reports = []

        def run_then_write(*, full: bool = False) -> Any:
            report = real_run(full=full)
            reports.append(report)
            if len(reports) == 1:
                upsert_rows(spark, str(table), [product(NEW_ID, 9, NEW_NAME, "Carbon blade.")])
            return report

        monkeypatch.setattr(building, "run_held", run_then_write)
        serving_cycle = switch.run_cycle()
        assert switch.build is None, "the build did not finish"
        assert serving_cycle.mode == "noop"  # the packaged index was current
        assert [r.mode for r in reports] == ["bootstrap", "incremental"]
        assert reports[0].embedded == old_chunks  # same chunker, every chunk re-embedded
        assert reports[1].products == 1 and reports[1].embedded >= 1
        assert switch.serving_model == new_model and switch.serving is building
        assert switch.last_switch is not None
        assert (switch.last_switch.from_model, switch.last_switch.to_model) == (
            first.serving_model,
            new_model,
        )
        assert _mirror(switch) == (0, 0, 0, len(EXPECTED_IDS) + 1)
        assert NEW_ID in _ids(switch)
        found = Retriever(building.embedder, building.store, learned).retrieve(NEW_NAME, 1)
        assert [p.id for p in found] == [NEW_ID]
    finally:
        switch.close()

    # The pointer moved and the packaged index is gone.
    assert slots.serving() == slots.beside(new_model)
    if engine == "edge":
        root = Path(packaged.qdrant_path)
        pointer = json.loads((root / POINTER_FILE).read_text())
        assert pointer == {"shard": f"shards/{model_slug(new_model)}"}
        assert not (root / "edge_config.json").exists() and not (root / "wal").exists()
        assert sorted(p.name for p in root.iterdir()) == [POINTER_FILE, "shards"]
    else:
        assert old_index not in slots.collections()  # the alias has its name now
    slots.close()

    # Reopened: nothing to build; --verify reads the learned index with its own encoder.
    env = {
        "HUDI_TABLE_PATH": str(table),
        "LEARNED_MODEL": str(second_encoder),
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "SYNC_LOCK_DIR": str(tmp_path / "locks"),
        "MODEL_CACHE_DIR": str(model_cache),
        **(
            {
                "QDRANT_URL": str(store["qdrant_url"]),
                "QDRANT_COLLECTION": store["qdrant_collection"],
            }
            if engine == "server"
            else {"QDRANT_PATH": str(store["qdrant_path"])}
        ),
    }
    code, out = sync_cli_in_process(["--verify"], env, monkeypatch, capsys)
    assert code == 0, out
    assert f"model {new_model}\n" in out and "missing 0\nstale 0\nextra 0" in out, out

    # Back to the packaged encoder: a second switch, from one built index to another.
    back = open_indexes(packaged)
    try:
        assert back.serving_model == new_model and back.building is not None
        back.run_cycle()
        assert back.build is None and back.serving_model.startswith(PACKAGED)
        assert _mirror(back) == (0, 0, 0, len(EXPECTED_IDS) + 1)
    finally:
        back.close()
    assert slots.serving() == slots.beside(back.serving_model)
    assert slots.leftovers(keep=set()) == []
    slots.close()


BATCH = 8  # points per upsert in the killed build
KILL_AT = 3  # upserts of the learned index that land before SIGKILL


def test_a_build_killed_midway_is_resumed_and_never_served(
    tmp_path: Path, second_encoder: Path, model_cache: Path
) -> None:
    """kill -9 during the learned index's bootstrap (edge): the packaged index still serves
    after the restart, and the build resumes (what landed is skipped), verifies, switches."""
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    packaged = Settings(
        hudi_table_path=str(table),
        qdrant_path=str(tmp_path / "edge"),
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_lock_dir=str(tmp_path / "locks"),
        model_cache_dir=str(model_cache),
    )
    learned = packaged.model_copy(update={"learned_model": str(second_encoder)})
    first = open_indexes(packaged)
    try:
        first.run_cycle()
        old_model, old_chunks = first.serving_model, first.serving.store.count()
    finally:
        first.close()

    script = textwrap.dedent(
        f"""
        import os, signal
        from app.core.config import Settings
        from app.store import edge_store
        from app.sync import apply
        from app.sync.switch import open_indexes

        edge_store.FLUSH_AFTER_POINTS = 10**9
        edge_store.FLUSH_AFTER_SECONDS = float("inf")
        apply.UPSERT_BATCH = {BATCH}
        switch = open_indexes(Settings.model_validate_json({learned.model_dump_json()!r}))
        store = switch.building.store
        real_upsert, calls = store.upsert, []

        def upsert_then_die(points):
            real_upsert(points)
            calls.append(len(points))
            if len(calls) == {KILL_AT}:
                print("landed", sum(calls), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        store.upsert = upsert_then_die
        switch.run_cycle()
        """
    )
    killed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert f"landed {BATCH * KILL_AT}" in killed.stdout, killed.stdout

    switch = open_indexes(learned)
    try:
        building = switch.building
        assert building is not None
        assert switch.serving_model == old_model  # the half-built index never serves
        assert switch.serving_index == str(tmp_path / "edge")
        assert building.store.load_state() is None  # killed before its checkpoint
        assert building.store.count() == BATCH * KILL_AT  # replayed from the WAL
        switch.run_cycle()
        assert switch.build is None and switch.serving is building
        totals = building.totals  # the resumed bootstrap, then a catch-up with nothing new
        assert totals.last_report is not None and totals.last_report.mode == "noop"
        assert totals.skipped == BATCH * KILL_AT
        assert totals.embedded + totals.skipped == old_chunks
        assert _mirror(switch) == (0, 0, 0, len(EXPECTED_IDS))
    finally:
        switch.close()


@pytest.mark.server
def test_the_index_built_beside_is_fenced_by_the_lease_on_a_node_list(
    qdrant_fenced_server: str, tmp_path: Path, second_encoder: Path, model_cache: Path
) -> None:
    """On a server with JWT RBAC, reached through a QDRANT_URL node list whose first node
    is down: the learned index's writes carry the lease's fence, so once another syncer
    takes the lease over, a late write to it is refused by the server, as one to the
    serving index is."""
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    packaged = Settings(
        hudi_table_path=str(table),
        # Nothing listens on the first node: every call fails over to the second.
        qdrant_url=f"http://127.0.0.1:{free_port()},{qdrant_fenced_server}",
        qdrant_api_key=FENCED_API_KEY,
        qdrant_collection=f"fenced_{uuid.uuid4().hex[:12]}",
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_lock_dir=str(tmp_path / "locks"),
        model_cache_dir=str(model_cache),
    )
    first = open_indexes(packaged)
    try:
        assert first.run_cycle().mode == "bootstrap"
        old_chunks = first.serving.store.count()
    finally:
        first.close()  # releases the lease at epoch 1

    switch = open_indexes(packaged.model_copy(update={"learned_model": str(second_encoder)}))
    try:
        building, lease = switch.building, switch.serving.lease
        assert building is not None and lease is not None
        assert lease.claim().epoch == 2 and lease.fenced
        vector = building.embedder.embed(["a late write"])[0]
        late = point(NEW_ID, 0, vector, category=None, price=1.0)
        building.store.upsert([late])  # under the lease: admitted
        assert building.store.count() == 1

        # Another syncer, whose clock is an hour ahead, sees the lease expired: epoch 3.
        other_store = open_store(packaged)
        try:
            other = SyncLease(cast(LeaseStore, other_store), 30, clock=lambda: time.time() + 3600)
            assert other.claim().epoch == 3
        finally:
            other_store.close()
        with pytest.raises(StoreFencedError):
            building.store.upsert([late])
        with pytest.raises(StoreFencedError):
            switch.serving.store.upsert([late])
        assert building.store.count() == 1 and switch.serving.store.count() == old_chunks
    finally:
        switch.close()
