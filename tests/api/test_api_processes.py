"""API processes scaled out on one host: `scripts/serve.sh` with WEB_CONCURRENCY=2 and
SYNC_MODE=off over a real Qdrant server, beside one syncer.

The syncer (`python -m app.sync --once`, a process of its own) mirrors the committed
`cow_aged` table (118 products; tests/fixtures/tables/make_tables.py) into a collection of
its own on the session's server. Two uvicorn workers then serve it on one port: answers
to the same query are the same whichever worker gives them, the impressions they record
name two processes (their `source`, host:pid), keep-alive connections opened at once are
spread over both (each worker listens on a socket of its own: app/api/serve.py), and a
worker killed with SIGKILL is replaced while the port keeps answering. A configuration
that cannot run two processes (the sync embedded, or no server) is refused at start with
the setting to change, before anything is opened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.core.ports import free_port
from bench.procfs import (
    ESTABLISHED,
    LISTEN,
    all_listening,
    api_workers,
    listening_inodes,
    tcp_sockets,
)
from tests.fixtures.tables.make_tables import HERE
from tests.qdrant_server import qdrant_server_fixture  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
QUERY = {"query": "a durable product for the kitchen", "top_k": 5}


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATA_DIR": str(folder / "data"),
        "HUDI_TABLE_PATH": str(folder / "cow_aged"),
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "OPENAI_API_KEY": "",
        "LOG_LEVEL": "WARNING",
        "EVENTS_FLUSH_SECONDS": "0.2",
        **extra,
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _sources(events: Path) -> set[str]:
    """The `source` of every impression written so far (open and closed segments)."""
    found = set()
    for segment in events.rglob("*.jsonl"):
        for line in segment.read_text().splitlines():
            found.add(json.loads(line)["source"])
    return found


def _ask(url: str) -> list[int]:
    # A new connection per request: the kernel hands each to whichever worker accepts.
    answer = httpx.post(f"{url}/recommend", json=QUERY, timeout=60)
    assert answer.status_code == 200, answer.text
    return [p["id"] for p in answer.json()["products"]]


@pytest.fixture(scope="module")
def served(
    qdrant_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """(url, serve.sh's process, the events folder) of two API processes."""
    folder = tmp_path_factory.mktemp("processes")
    shutil.copytree(HERE / "cow_aged", folder / "cow_aged")
    store = {"QDRANT_URL": qdrant_server, "QDRANT_COLLECTION": f"t_{uuid.uuid4().hex[:12]}"}
    sync = subprocess.run(
        [sys.executable, "-m", "app.sync", "--once"],
        cwd=ROOT,
        env=_env(folder, **store, SYNC_LOCK_DIR=str(folder / "locks")),
        capture_output=True,
        timeout=600,
    )
    assert sync.returncode == 0, sync.stderr.decode()[-2000:]
    port = free_port()
    env = _env(folder, **store, WEB_CONCURRENCY="2", SYNC_MODE="off", PORT=str(port))
    # A session of its own: the workers go with it if the supervisor does not stop them.
    proc = subprocess.Popen(["scripts/serve.sh"], cwd=ROOT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        # Both workers up: each listens only once its model is loaded, and answers /ready.
        while not all_listening(proc.pid, port, 2) or not _ready_everywhere(url):
            assert proc.poll() is None, "serve.sh exited"
            assert time.monotonic() < deadline, "two workers not ready in 180 s"
            time.sleep(0.5)
        yield url, proc, folder / "data" / "events"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == 0, "SIGINT stops the workers and the supervisor cleanly"


def _ready_everywhere(url: str) -> bool:
    """Twenty /ready calls on new connections all answered 200 (a worker still loading
    does not listen yet: the kernel hands connections to those that do)."""
    try:
        return all(httpx.get(f"{url}/ready", timeout=5).status_code == 200 for _ in range(20))
    except httpx.HTTPError:
        return False


@pytest.mark.server
def test_two_processes_serve_one_port_with_the_same_answers(
    served: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    url, proc, events = served
    workers = api_workers(proc.pid)
    assert len(workers) == 2
    answers = {tuple(_ask(url)) for _ in range(30)}
    assert len(answers) == 1 and len(next(iter(answers))) > 0
    deadline = time.monotonic() + 10
    while {s.rsplit(":", 1)[1] for s in _sources(events)} != {str(w) for w in workers}:
        assert time.monotonic() < deadline, (_sources(events), workers)
        _ask(url)
        time.sleep(0.3)


@pytest.mark.server
def test_each_worker_listens_on_its_own_socket_and_a_burst_is_spread(
    served: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    """With one listening socket shared (`uvicorn --workers`), the worker awake first
    accepts every connection waiting: in bench/retrieval.py's 16-client phases, all 16
    keep-alive connections on one worker in some rounds. With a socket per worker
    (SO_REUSEPORT) the kernel spreads new connections by address: 16 opened at once land
    on both (all 16 on one: p = 2 x 2^-16)."""
    url, proc, _ = served
    port = int(url.rsplit(":", 1)[1])
    workers = api_workers(proc.pid)
    listening = [tcp_sockets(pid, port)[LISTEN] for pid in workers]
    assert all(len(s) == 1 for s in listening), listening
    assert len({s[0] for s in listening}) == len(workers), listening
    request = f"GET /ready HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    pool = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(16)]
    try:
        for conn in pool:  # all at once
            conn.setblocking(False)
            conn.connect_ex(("127.0.0.1", port))
        for conn in pool:
            conn.settimeout(30)
            conn.sendall(request)
        for conn in pool:
            assert conn.recv(65536).startswith(b"HTTP/1.1 200"), "a /ready on the pool failed"
        held = {pid: len(tcp_sockets(pid, port)[ESTABLISHED]) for pid in workers}
        assert sum(held.values()) == 16, held
        assert all(n > 0 for n in held.values()), held
    finally:
        for conn in pool:
            conn.close()


@pytest.mark.server
def test_a_killed_worker_is_replaced_and_the_port_keeps_answering(
    served: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    url, proc, _ = served
    before = api_workers(proc.pid)
    victim = min(before)
    port = int(url.rsplit(":", 1)[1])
    its_socket = set(tcp_sockets(victim, port)[LISTEN])
    expected = _ask(url)
    os.kill(victim, signal.SIGKILL)
    # Until its exit closes its socket, the kernel may still queue a connection on it, and
    # that one is reset, as with any crash of a server on SO_REUSEPORT sockets
    # (net.ipv4.tcp_migrate_req=1 hands them to another worker: docs/scale-out.md). The
    # socket outlives a zombie leader (docs/troubleshooting.md): wait for it, not the pid.
    while its_socket & listening_inodes(port):
        time.sleep(0.01)
    deadline = time.monotonic() + 120
    while True:
        # Every request after that is answered, by the worker left or by the new one.
        assert _ask(url) == expected
        now = api_workers(proc.pid)
        if len(now) == 2 and victim not in now:
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.3)
    assert proc.poll() is None


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"SYNC_MODE": "embedded", "QDRANT_URL": "http://127.0.0.1:9"}, "needs SYNC_MODE=off"),
        ({"SYNC_MODE": "off", "QDRANT_URL": ""}, "needs a Qdrant server"),
    ],
)
def test_two_processes_are_refused_where_only_one_can_run(
    settings: dict[str, str], reason: str, tmp_path: Path
) -> None:
    env = _env(tmp_path, WEB_CONCURRENCY="2", PORT=str(free_port()), **settings)
    done = subprocess.run(["scripts/serve.sh"], cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert done.returncode != 0
    assert reason in done.stderr.decode(), done.stderr.decode()[-2000:]


def test_a_startup_that_fails_in_the_workers_stops_them_all_with_its_code(tmp_path: Path) -> None:
    """A worker that exits with an error is not restarted: its startup would fail again.
    (One killed by a signal is: the test above.)"""
    settings = {"SYNC_MODE": "off", "QDRANT_URL": "http://127.0.0.1:9"}
    env = _env(tmp_path, WEB_CONCURRENCY="2", PORT=str(free_port()), **settings)
    env["LEARNED_MODEL"] = str(tmp_path / "no-model")
    done = subprocess.run(["scripts/serve.sh"], cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert done.returncode == 3, done.stderr.decode()[-2000:]  # uvicorn's STARTUP_FAILURE
    assert "no manifest.json" in done.stderr.decode()
