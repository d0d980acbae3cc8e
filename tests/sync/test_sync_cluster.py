"""A three-node Qdrant cluster; one node killed with SIGKILL in the middle of a bootstrap.

The syncer (`python -m app.sync --loop`, its own process) and the API (uvicorn over real
HTTP, `SYNC_MODE=off`) get every node in QDRANT_URL, the first node first. The syncer
creates the products collection with 3 shards, replication 2 and write consistency 1, and
the lease's collection replicated alike. After its second upsert of the committed
`cow_aged` table (118 products) it waits for the test, which kills the first node (the one
both talk to) with SIGKILL and lets it go on: its calls move to the next node, the
bootstrap finishes, and `/recommend`, asked all along, answers 200 every time. The node is
started again on its own storage, the cluster re-replicates what it missed (each shard's
replicas agree on their point counts), and `--verify` is 0/0/0 with exact counts, through
all nodes and through the returned node alone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.store import open_store
from app.store.qdrant_client_store import QdrantClientStore
from app.sync.lease import LeaseState
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE
from tests.live_server import ServerThread
from tests.qdrant_cluster import QdrantCluster, qdrant_cluster_fixture  # noqa: F401
from tests.synctools import sync_cli_in_process, wait_for

# A syncer process loads the model (~10-25 s on a shared 2-core box); three nodes start.
pytestmark = [pytest.mark.server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SHARDS, REPLICATION, WRITE_CONSISTENCY = 3, 2, 1
BATCH = 16  # points per upsert in the syncer
PAUSE_AFTER = 2  # upserts that land before the kill
CHUNKING = {"MAX_CHUNK_TOKENS": "64", "CHUNK_OVERLAP_TOKENS": "8"}
QUERY = "a sturdy everyday item for the kitchen aisle"
CYCLE_LINE = re.compile(r"sync (\w+) \(\S+, \S+\]: rows \d+, embedded (\d+)")

# The real `python -m app.sync --loop`, with smaller upserts and one pause: after
# PAUSE_AFTER upserts it writes `paused` and waits for `resume` (the test kills the node
# in between, so the kill lands mid-bootstrap on every run, not on a lucky one).
SYNCER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app.store.qdrant_client_store import QdrantClientStore
    from app.sync import apply
    from app.sync.__main__ import main

    apply.UPSERT_BATCH = {batch}
    folder = Path({folder!r})
    real_upsert = QdrantClientStore.upsert
    done = []

    def upsert(self, points):
        real_upsert(self, points)
        done.append(len(points))
        if len(done) == {pause_after}:
            (folder / "paused").write_text(str(sum(done)))
            while not (folder / "resume").exists():
                time.sleep(0.05)

    QdrantClientStore.upsert = upsert
    sys.exit(main(["--loop"]))
    """
)


class Asker:
    """POST /recommend over and over in a thread; every answer's status and product count."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[int, int, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                r = client.post(f"{self.url}/recommend", json={"query": QUERY})
                body = r.json() if r.status_code == 200 else {}
                self.answers.append(
                    (r.status_code, len(body.get("products", [])), bool(body.get("degraded")))
                )
                time.sleep(0.05)

    def __enter__(self) -> Asker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def shard_counts(cluster: QdrantCluster, collection: str) -> dict[int, list[int]]:
    """Each shard's point count on each node holding a replica of it."""
    counts: dict[int, list[int]] = {}
    for node in cluster.nodes:
        info = httpx.get(f"{node.url}/collections/{collection}/cluster", timeout=5).json()
        for shard in info["result"]["local_shards"]:
            counts.setdefault(shard["shard_id"], []).append(shard["points_count"])
    return counts


def replica_peers(cluster: QdrantCluster, collection: str) -> dict[int, set[int]]:
    """Each shard's peers (ids), as the cluster's consensus records them."""
    info = httpx.get(f"{cluster.nodes[0].url}/collections/{collection}/cluster", timeout=5).json()
    result = info["result"]
    peers: dict[int, set[int]] = {}
    for shard in result["local_shards"]:
        peers.setdefault(shard["shard_id"], set()).add(result["peer_id"])
    for shard in result["remote_shards"]:
        peers.setdefault(shard["shard_id"], set()).add(shard["peer_id"])
    return peers


def agreed(cluster: QdrantCluster, collection: str) -> dict[int, list[int]] | None:
    """The shard counts once every shard has all its replicas and they hold the same count."""
    counts = shard_counts(cluster, collection)
    ok = all(len(v) == REPLICATION and len(set(v)) == 1 for v in counts.values())
    return counts if ok else None


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", path)
    yield path


def test_node_killed_mid_bootstrap_sync_finishes_answers_throughout_mirror_after(
    qdrant_cluster: QdrantCluster,
    embedder: Any,  # loaded before the API starts: the same cached model its services get
    table: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster = qdrant_cluster
    victim = cluster.nodes[0]  # first in QDRANT_URL: where the syncer and the API send calls
    collection = f"cluster_{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,
        **CHUNKING,
        "HUDI_TABLE_PATH": str(table),
        "QDRANT_URL": cluster.url,
        "QDRANT_COLLECTION": collection,
        "QDRANT_SHARDS": str(SHARDS),
        "QDRANT_REPLICATION_FACTOR": str(REPLICATION),
        "QDRANT_WRITE_CONSISTENCY": str(WRITE_CONSISTENCY),
        "SYNC_INTERVAL_SECONDS": "1",
        "SYNC_LOCK_DIR": str(tmp_path / "locks"),
        "LOG_LEVEL": "INFO",
    }
    settings = Settings(
        qdrant_url=cluster.url,
        qdrant_collection=collection,
        hudi_table_path=str(table),
        sync_mode="off",
        # The same layout as the syncer's, as a deployment shares one environment: an API
        # process that starts first creates the collection (its SyncEngine ensures it).
        qdrant_shards=SHARDS,
        qdrant_replication_factor=REPLICATION,
        qdrant_write_consistency=WRITE_CONSISTENCY,
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_lock_dir=str(tmp_path / "locks"),
        conversation_secret="cluster-test-secret-0123",
        openai_api_key=None,
    )
    store = open_store(settings)
    assert isinstance(store, QdrantClientStore)
    log = tmp_path / "syncer.log"
    script = SYNCER.format(batch=BATCH, folder=str(tmp_path), pause_after=PAUSE_AFTER)
    with log.open("wb") as sink:
        syncer = subprocess.Popen(
            [sys.executable, "-c", script], cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        with ServerThread(settings) as api:
            paused = wait_for("the syncer's pause", (tmp_path / "paused").exists, 300, log)
            assert paused and store.load_state() is None  # mid-bootstrap: no checkpoint yet
            assert store.count() == BATCH * PAUSE_AFTER

            # The layout the syncer created: every shard (and the lease's one) on two peers.
            config = httpx.get(f"{victim.url}/collections/{collection}").json()["result"]
            params = config["config"]["params"]
            assert (params["shard_number"], params["replication_factor"]) == (SHARDS, REPLICATION)
            assert params["write_consistency_factor"] == WRITE_CONSISTENCY
            products = replica_peers(cluster, collection)
            lease = replica_peers(cluster, collection + "__sync_lease")
            assert sorted(products) == list(range(SHARDS)) and list(lease) == [0]
            assert all(len(p) == REPLICATION for p in [*products.values(), *lease.values()])
            # Where the lease's replicas land is the cluster's choice (usually on the creating
            # peer, the victim, but not always): the kill below hits the client's node either way.
            holder = LeaseState.from_payload(store.read_lease())
            assert holder is not None and f":{syncer.pid}:" in holder.holder

            with Asker(api.url) as asker:
                wait_for("answers before the kill", lambda: len(asker.answers) >= 3, 60, log)
                victim.kill()
                asked_at_kill = len(asker.answers)
                (tmp_path / "resume").write_text("")
                wait_for("the checkpoint", store.load_state, 300, log)
                # The syncer logs its cycle just after the checkpoint lands: under load the
                # line can come a moment after the checkpoint is readable.
                cycles = wait_for(
                    "the bootstrap's cycle line",
                    lambda: [(m[1], int(m[2])) for m in CYCLE_LINE.finditer(log.read_text())],
                    60,
                    log,
                )
                assert cycles[:1] and cycles[0][0] == "bootstrap", log.read_text()[-3000:]
                assert "unreachable" in log.read_text()  # the syncer moved to the next node
                wait_for(
                    "answers after it", lambda: len(asker.answers) > asked_at_kill + 5, 60, log
                )

                # The node returns on its own storage; the cluster brings its replicas up.
                victim.start()
                cluster.wait_formed()
                wait_for(
                    "every replica active again",
                    lambda: cluster.replica_states(collection) == ["Active"] * 6,
                    120,
                    log,
                )
                wait_for("answers after the return", lambda: len(asker.answers) > 0, 5, log)
            answers = asker.answers
            assert len(answers) > asked_at_kill + 5
            # Answered all along: no 5xx, no 4xx; every answer after the bootstrap has products.
            assert {status for status, _, _ in answers} == {200}, answers
            assert answers[-1][1] > 0, answers[-5:]

        # Each shard's replicas hold the same points, together the whole catalog's chunks.
        counts = wait_for("replicas in agreement", lambda: agreed(cluster, collection), 60, log)
        sync_env = {
            "HUDI_TABLE_PATH": str(table),
            "QDRANT_COLLECTION": collection,
            **CHUNKING,
        }
        stored = sum(v[0] for v in counts.values())
        assert stored == store.count()
        for url in (cluster.url, victim.url):
            code, out = sync_cli_in_process(
                ["--verify"], {**sync_env, "QDRANT_URL": url}, monkeypatch, capsys
            )
            assert code == 0 and "missing 0\nstale 0\nextra 0" in out, out
            assert f"products {len(EXPECTED_IDS)}\n" in out, out
            assert f"chunks {stored} (expected {stored})" in out, out

        # A clean stop after all that: the syncer was never down.
        # (Its current call may first wait out a client timeout on a busy box: 180 s.)
        syncer.send_signal(signal.SIGINT)
        assert syncer.wait(180) == 0, log.read_text()[-3000:]
    finally:
        if syncer.poll() is None:
            syncer.kill()
            syncer.wait(30)
        store.close()
