"""Real Qdrant nodes on loopback for the server tier: three in distributed mode (a cluster),
or one server a test owns, to kill and start again (`qdrant_own_server`).

The binary is the one tests/qdrant_server.py starts (`QDRANT_SERVER_BIN`). Each node has
its own storage folder and free ports (REST, gRPC, p2p); the first starts a new cluster
(`--uri` its own p2p address), the others join it (`--bootstrap` the first's). A node can
be killed with SIGKILL and started again on the same storage and ports: it rejoins from
its own Raft state and the cluster re-replicates what it missed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from app.core.ports import free_port
from tests.qdrant_server import STARTUP_SECONDS, wait_ready

NODES = 3


class QdrantNode:
    """One peer: `start()` (again after `kill()`), `url` for its REST API. With
    `cluster=False`, a server on its own (not in distributed mode), to kill and restart."""

    def __init__(
        self, binary: str, folder: Path, bootstrap: str | None, *, cluster: bool = True
    ) -> None:
        self.binary, self.folder, self.bootstrap = binary, folder, bootstrap
        self.cluster = cluster
        self.http, self.grpc, self.p2p = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http}"
        self.uri = f"http://127.0.0.1:{self.p2p}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "QDRANT__STORAGE__STORAGE_PATH": str(self.folder / "storage"),
            "QDRANT__STORAGE__SNAPSHOTS_PATH": str(self.folder / "snapshots"),
            "QDRANT__SERVICE__HTTP_PORT": str(self.http),
            "QDRANT__SERVICE__GRPC_PORT": str(self.grpc),
            "QDRANT__SERVICE__HOST": "127.0.0.1",
            "QDRANT__TELEMETRY_DISABLED": "true",
        }
        args = [self.binary]
        if self.cluster:
            env |= {"QDRANT__CLUSTER__ENABLED": "true", "QDRANT__CLUSTER__P2P__PORT": str(self.p2p)}
            # Every peer names its own p2p address; on a restart its Raft state (in storage)
            # says which cluster it belongs to and --bootstrap is not used again.
            args += ["--uri", self.uri]
            if self.bootstrap:
                args += ["--bootstrap", self.bootstrap]
        self._log = (self.folder / "qdrant.log").open("ab")
        self.proc = subprocess.Popen(
            args, cwd=self.folder, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        wait_ready(self.url, self.proc)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush; the peers find out by themselves."""
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._close_log()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._close_log()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        path = self.folder / "qdrant.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class QdrantCluster:
    """The nodes, their URLs as QDRANT_URL takes them, and the cluster's own view."""

    def __init__(self, nodes: list[QdrantNode]) -> None:
        self.nodes = nodes

    @property
    def url(self) -> str:
        """Every node, comma-separated: QDRANT_URL for a client that fails over."""
        return ",".join(n.url for n in self.nodes)

    def info(self, node: QdrantNode | None = None) -> dict[str, Any]:
        """GET /cluster from `node` (default: the first alive)."""
        node = node or next(n for n in self.nodes if n.alive())
        result: dict[str, Any] = httpx.get(f"{node.url}/cluster", timeout=5).json()["result"]
        return result

    def wait_formed(self, seconds: float = STARTUP_SECONDS) -> None:
        """Until every alive node sees all NODES peers and the same Raft leader."""
        deadline = time.monotonic() + seconds
        seen: list[Any] = []
        while time.monotonic() < deadline:
            try:
                seen = [self.info(n) for n in self.nodes if n.alive()]
            except (httpx.HTTPError, KeyError):
                seen = []
            leaders = {s["raft_info"]["leader"] for s in seen}
            formed = seen and all(len(s["peers"]) == NODES for s in seen)
            if formed and len(leaders) == 1 and None not in leaders:
                return
            time.sleep(0.2)
        raise RuntimeError(f"cluster not formed after {seconds:.0f} s: {seen}")

    def replica_states(self, collection: str) -> list[str]:
        """Every shard replica's state (Active, Dead, Partial, ...), as the alive nodes see them
        (each reports its local replicas and the remote ones it knows of)."""
        node = next(n for n in self.nodes if n.alive())
        info = httpx.get(f"{node.url}/collections/{collection}/cluster", timeout=5).json()
        result = info["result"]
        states = [s["state"] for s in result["local_shards"]]
        return states + [s["state"] for s in result["remote_shards"]]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _binary() -> str:
    binary = os.environ.get("QDRANT_SERVER_BIN")
    if not binary or not Path(binary).exists():
        raise RuntimeError("no Qdrant binary: set QDRANT_SERVER_BIN (a node to kill needs one)")
    return binary


@pytest.fixture(name="qdrant_cluster")
def qdrant_cluster_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QdrantCluster]:
    """A fresh three-node cluster per test (a test kills and restarts its nodes)."""
    binary = _binary()
    folder = tmp_path_factory.mktemp("qdrant-cluster")
    first = QdrantNode(binary, folder / "node0", None)
    nodes = [first] + [QdrantNode(binary, folder / f"node{i}", first.uri) for i in range(1, NODES)]
    cluster = QdrantCluster(nodes)
    try:
        for node in nodes:
            node.start()
        cluster.wait_formed()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(name="qdrant_own_server")
def qdrant_own_server_fixture(tmp_path: Path) -> Iterator[QdrantNode]:
    """A Qdrant server of the test's own (not distributed), which it may kill with SIGKILL
    and start again on the same storage and ports: the session's server must stay up."""
    node = QdrantNode(_binary(), tmp_path / "qdrant-own", None, cluster=False)
    try:
        node.start()
        yield node
    finally:
        node.stop()
