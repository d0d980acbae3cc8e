"""Two syncers on "two hosts" (two processes, two lock folders) and one Qdrant server.

Both `python -m app.sync --loop` start at once over the committed `cow_aged` table (118
products): the per-host flock cannot see the other, so only the lease (app/sync/lease.py)
keeps one of them from writing. One bootstraps, the other waits; the index is then a
mirror and the embeddings both processes report add up to the catalog's chunks (nobody
embedded twice). The holder is killed with SIGKILL; once its lease expires the other takes
over, resumes from the checkpoint (an incremental cycle, not a bootstrap) and a product
Spark writes after the kill becomes searchable. SIGINT ends the survivor's lease at once.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings
from app.store import open_store
from app.store.qdrant_client_store import QdrantClientStore
from app.sync.lease import LeaseState
from spark_jobs.upsert_products import upsert_rows
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.qdrant_server import qdrant_server_fixture  # noqa: F401
from tests.synctools import product, sync_cli_in_process, wait_for

# Two fresh interpreters load the model (~10-25 s on the shared box); one Spark commit.
pytestmark = [pytest.mark.server, pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# Above 1.5x the bootstrap's one batch (118 products) on a loaded 2-core box: renewed between
# batches only, a shorter lease could expire mid-batch and let the waiter in.
LEASE_SECONDS = 15
NEW_ID = 9001
CYCLE_LINE = re.compile(r"sync (\w+) \(\S+, \S+\]: rows \d+, embedded (\d+)")


class Syncer:
    def __init__(self, name: str, env: dict[str, str], folder: Path) -> None:
        self.log = folder / f"{name}.log"
        lock_dir = folder / f"{name}-locks"  # its own "host"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app.sync", "--loop"],
                cwd=ROOT,
                env={**env, "SYNC_LOCK_DIR": str(lock_dir)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def cycles(self) -> list[tuple[str, int]]:
        return [(m[1], int(m[2])) for m in CYCLE_LINE.finditer(self.text())]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture
def setup(
    qdrant_server: str, tmp_path: Path
) -> Iterator[tuple[dict[str, str], QdrantClientStore, str]]:
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    collection = f"two_{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,
        "HUDI_TABLE_PATH": str(table),
        "QDRANT_URL": qdrant_server,
        "QDRANT_COLLECTION": collection,
        "SYNC_LEASE_SECONDS": str(LEASE_SECONDS),
        "SYNC_INTERVAL_SECONDS": "1",
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "LOG_LEVEL": "INFO",
    }
    store = open_store(Settings(qdrant_url=qdrant_server, qdrant_collection=collection))
    assert isinstance(store, QdrantClientStore)
    yield env, store, str(table)
    store.close()


def test_two_syncers_one_server_one_bootstraps_then_the_other_takes_over(
    setup: tuple[dict[str, str], QdrantClientStore, str],
    tmp_path: Path,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env, store, table = setup
    syncers = [Syncer("a", env, tmp_path), Syncer("b", env, tmp_path)]
    logs = [s.log for s in syncers]
    try:
        wait_for("a checkpoint", store.load_state, 300, *logs)
        lease = LeaseState.from_payload(store.read_lease())
        assert lease is not None
        holder = next(s for s in syncers if f":{s.proc.pid}:" in lease.holder)
        other = next(s for s in syncers if s is not holder)
        # The other one heard who holds the lease and waits for its expiry.
        wait_for("the waiter's notice", lambda: "sync lease held by" in other.text(), 60, *logs)
        # Its cycle line follows the checkpoint (a moment later under load).
        wait_for("the holder's cycle line", holder.cycles, 60, *logs)
        assert [mode for mode, _ in holder.cycles()][:1] == ["bootstrap"]
        assert other.cycles() == [], other.text()[-2000:]

        # One mirror, each chunk embedded once across both processes.
        sync_env = {k: env[k] for k in ("HUDI_TABLE_PATH", "QDRANT_URL", "QDRANT_COLLECTION")}
        sync_env |= {"MAX_CHUNK_TOKENS": "64", "CHUNK_OVERLAP_TOKENS": "8"}
        code, out = sync_cli_in_process(["--verify"], sync_env, monkeypatch, capsys)
        assert code == 0 and "missing 0\nstale 0\nextra 0" in out, out
        chunks = int(re.search(r"chunks (\d+) \(expected (\d+)\)", out)[2])  # type: ignore[index]
        assert f"products {len(EXPECTED_IDS)}" in out
        embedded = sum(n for s in syncers for _, n in s.cycles())
        assert embedded == chunks == store.count()

        # The holder dies without a word; a change lands after it.
        last = LeaseState.from_payload(store.read_lease())
        holder.proc.send_signal(signal.SIGKILL)
        holder.proc.wait(30)
        upsert_rows(spark, table, [product(NEW_ID, 9000, "Zephyr kite", "A stunt kite.")])
        wait_for(
            "the change in the index",
            lambda: store.chunks_for_products([NEW_ID]),
            LEASE_SECONDS + 120,
            *logs,
        )
        # The chunks are searchable a moment before the cycle logs its report.
        # (A takeover before the upsert logs no-op cycles first: wait for the one that read it.)
        wait_for(
            "the takeover's cycle report",
            lambda: [m for m, _ in other.cycles() if m == "incremental"],
            30,
            *logs,
        )
        taken = LeaseState.from_payload(store.read_lease())
        assert taken is not None and f":{other.proc.pid}:" in taken.holder
        # Not before the dead holder's lease ran out (the log gives the first expiry it set,
        # to the second).
        first = re.search(r"sync lease taken: \S+ until (\S+)Z", other.text())
        assert first is not None and last is not None
        took_at = datetime.fromisoformat(first[1]).replace(tzinfo=UTC).timestamp() - LEASE_SECONDS
        assert took_at >= last.until - 1, (took_at, last)
        modes = [mode for mode, _ in other.cycles()]
        assert "bootstrap" not in modes and "incremental" in modes, other.text()[-2000:]
        code, out = sync_cli_in_process(["--verify"], sync_env, monkeypatch, capsys)
        assert code == 0 and f"products {len(EXPECTED_IDS) + 1}" in out, out

        # A clean stop ends the lease at once.
        other.proc.send_signal(signal.SIGINT)
        assert other.proc.wait(60) == 0
        released = LeaseState.from_payload(store.read_lease())
        assert released is not None and released.until == 0.0
    finally:
        for s in syncers:
            s.stop()
