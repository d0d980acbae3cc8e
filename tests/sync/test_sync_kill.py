"""kill -9 of a sync process mid-bootstrap, then a resume: on the on-disk qdrant-edge store
and on a Qdrant server (the two stores a process outlives).

The edge store flushes only every FLUSH_AFTER_POINTS / FLUSH_AFTER_SECONDS
(app/store/edge_store.py, "Durability"): here neither is reached before the kill, so every
point the killed process wrote reaches the resume through the engine's WAL alone. The
server acknowledged each upsert (wait=True) before the kill. The resume must embed only what did
not land, and end a mirror (0 missing, 0 stale, 0 extra). No JVM: a committed Hudi fixture.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from app.sync.lease import LeaseHeldError
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.synctools import engine_settings, make_harness

# A subprocess that loads the model (~10-25 s on a shared 2-core box).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BATCH = 8  # points per upsert in the killed process
KILL_AT = 3  # upserts that land before SIGKILL
LEASE_SECONDS = 5


@pytest.mark.parametrize("engine", ["edge", pytest.param("server", marks=pytest.mark.server)])
def test_kill_9_mid_bootstrap_then_resume_is_a_mirror(
    tmp_path: Path, embedder: Any, engine: str, request: pytest.FixtureRequest
) -> None:
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    # A short lease on the server: the killed process's must run out before the resume.
    store = {**engine_settings(engine, request, tmp_path), "sync_lease_seconds": LEASE_SECONDS}
    script = textwrap.dedent(
        f"""
        import os, signal
        from app.embedding import load_embedder
        from app.store import edge_store
        from app.sync import apply
        from tests.synctools import engine_settings, make_harness

        edge_store.FLUSH_AFTER_POINTS = 10**9
        edge_store.FLUSH_AFTER_SECONDS = float("inf")
        apply.UPSERT_BATCH = {BATCH}
        h = make_harness({str(table)!r}, load_embedder(), **{store!r})
        real_upsert = h.store.upsert
        calls = []

        def upsert_then_die(points):
            real_upsert(points)
            calls.append(len(points))
            if len(calls) == {KILL_AT}:
                n = h.store.count()
                print("landed", sum(calls), "count", n, "pid", os.getpid(), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        h.store.upsert = upsert_then_die
        h.cycle()
        """
    )
    killed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    assert f"landed {BATCH * KILL_AT} count {BATCH * KILL_AT}" in killed.stdout, killed.stdout

    h = make_harness(table, embedder, **store)
    try:
        assert h.store.load_state() is None  # killed before its checkpoint
        assert h.store.count() == BATCH * KILL_AT  # unflushed, replayed from the WAL
        try:
            boot = h.cycle()
        except LeaseHeldError as held:
            # The server: while the dead process's lease runs (it was taken before the
            # batch was embedded, so it may have run out already), the resume waits it
            # out, as a second syncer would (app/sync/lease.py).
            assert engine == "server"
            assert held.state.holder.split(":")[1] == killed.stdout.split()[-1]
            time.sleep(held.retry_in + 0.2)
            boot = h.cycle()
        assert boot.mode == "bootstrap"
        assert boot.skipped == BATCH * KILL_AT and boot.deleted == 0
        mirror = h.assert_mirror()
        assert mirror.products == len(EXPECTED_IDS)
        assert boot.embedded + boot.skipped == mirror.stored_chunks
    finally:
        h.store.close()
