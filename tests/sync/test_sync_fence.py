"""A syncer stalled past its lease (a real SIGSTOP) lands nothing after another took over.

Syncer A (`python -m app.sync --loop`, its own process and lock folder: another "host")
bootstraps the committed `cow_aged` table (118 products) on a Qdrant server run with an
API key and JWT RBAC. It stops itself (tests/sync/stalling_syncer.py) right before its
first batch of points goes out: the lease check has passed, the batch is built. While it
is stopped, Spark rewrites every product of that batch, A's lease expires, and syncer B
bootstraps the new table: a mirror, exact counts. Then A is continued: its late batch
(points of the old texts) is refused by the server, A's cycle ends without a checkpoint,
and its loop finds the lease held and writes nothing more. The store still holds B's
mirror exactly (--verify 0/0/0), none of the late batch's points, and B's checkpoint.

Without the fence (SYNC_LEASE_FENCE=false: the syncer's own check only) the same run lands
the late batch and breaks the mirror: the store holds the batch's points beside B's (run
once on 2026-11-27, docs/scale-out.md); here that would time out waiting for the refusal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings
from app.store import open_store
from app.store.qdrant_client_store import QdrantClientStore
from app.sync.lease import LeaseState
from spark_jobs.upsert_products import upsert_rows
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.qdrant_server import FENCED_API_KEY, qdrant_fenced_server_fixture  # noqa: F401
from tests.synctools import product, sync_cli_in_process, wait_for

pytestmark = [pytest.mark.server, pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# Long enough for A's bootstrap to reach its first batch without a renewal on a loaded box.
LEASE_SECONDS = 15
LATE = re.compile(r"late batch: (\{.*\})")


def _state(pid: int) -> str:
    """The process state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_stalled_holders_late_batch_is_not_applied_after_the_takeover(
    qdrant_fenced_server: str,
    tmp_path: Path,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    collection = f"fence_{uuid.uuid4().hex[:12]}"
    env = {
        "HUDI_TABLE_PATH": str(table),
        "QDRANT_URL": qdrant_fenced_server,
        "QDRANT_API_KEY": FENCED_API_KEY,
        "QDRANT_COLLECTION": collection,
        "SYNC_LEASE_SECONDS": str(LEASE_SECONDS),
        "SYNC_INTERVAL_SECONDS": "1",
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "LOG_LEVEL": "INFO",
    }
    store = open_store(
        Settings(
            qdrant_url=qdrant_fenced_server,
            qdrant_collection=collection,
            qdrant_api_key=FENCED_API_KEY,
        )
    )
    assert isinstance(store, QdrantClientStore)
    log = tmp_path / "a.log"
    a_env = {**os.environ, **env, "SYNC_LOCK_DIR": str(tmp_path / "a-locks")}
    with log.open("wb") as sink:
        a = subprocess.Popen(
            [sys.executable, "-m", "tests.sync.stalling_syncer", "--loop"],
            cwd=ROOT,
            env=a_env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        # A holds the lease and stopped with its first batch built, not sent.
        wait_for("A to stop itself", lambda: _state(a.pid) == "T", 300, log)
        late = json.loads(LATE.search(log.read_text())[1])  # type: ignore[index]
        held = LeaseState.from_payload(store.read_lease())
        assert held is not None and f":{a.pid}:" in held.holder and held.epoch == 1
        assert store.count() == 0 and store.load_state() is None

        # Every product of the late batch changes text while A is stopped.
        upsert_rows(
            spark,
            str(table),
            [product(pid, 9000, f"Revised item {pid}", "Rewritten.") for pid in late["products"]],
        )
        wait_for("A's lease to expire", lambda: time.time() > held.until + 0.5, LEASE_SECONDS, log)

        # B (this process, its own lock folder) takes over and bootstraps the new table.
        b_env = {**env, "SYNC_LOCK_DIR": str(tmp_path / "b-locks")}
        code, out = sync_cli_in_process(["--once"], b_env, monkeypatch, capsys)
        assert code == 0 and "mode bootstrap" in out, out
        taken = LeaseState.from_payload(store.read_lease())
        assert taken is not None and taken.epoch == 2 and f":{os.getpid()}:" in taken.holder
        embedded = int(re.search(r"embedded (\d+)", out)[1])  # type: ignore[index]
        checkpoint = store.load_state()
        code, out = sync_cli_in_process(["--verify"], b_env, monkeypatch, capsys)
        assert code == 0 and "missing 0\nstale 0\nextra 0" in out, out
        assert f"products {len(EXPECTED_IDS)}\nchunks {embedded} (expected {embedded})" in out
        assert store.count() == embedded

        # A wakes up and sends its late batch.
        a.send_signal(signal.SIGCONT)
        wait_for(
            "the server's refusal",
            lambda: "refused by the lease's fence" in log.read_text(),
            60,
            log,
        )
        # A's loop tries again: B's lease is held (B's `--once` released it on exit when it
        # ended cleanly: then A takes it at the next epoch and goes on from B's checkpoint).
        wait_for(
            "A to wait for B or take the lease on",
            lambda: "sync lease held by" in (text := log.read_text()) or "(epoch 3)" in text,
            60,
            log,
        )
        assert store._client.retrieve(collection, late["points"]) == []
        assert store.count() == embedded
        now = LeaseState.from_payload(store.read_lease())
        assert now is not None and (now == taken or now.epoch == 3)
        if now == taken:
            assert store.load_state() == checkpoint
        code, out = sync_cli_in_process(["--verify"], b_env, monkeypatch, capsys)
        assert code == 0 and "missing 0\nstale 0\nextra 0" in out, out
        assert f"chunks {embedded} (expected {embedded})" in out
        assert a.poll() is None  # A is alive and waiting, not crashed
    finally:
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
            a.wait(30)
        store.close()
