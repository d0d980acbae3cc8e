"""The real service as a subprocess on a store folder, driven over HTTP.

`ServiceProcess` starts `python -m app.api.serve` (one or more API processes) from this
checkout (PYTHONPATH and cwd: the venv's editable install points at another checkout) with
SYNC_MODE=off, as an API replica beside a syncer runs, waits until every API process
listens (bench/procfs.py), and reads the processes' CPU time from /proc. `drive` runs closed-loop
clients on bench.rawhttp (keep-alive asyncio streams, not httpx: the client shares the
2 cores with the service, and its cost lands in the one-client p50; measured against a
trivial server, httpx.Client costs 0.52 ms of CPU per request and this 0.05 ms).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from app.core.ports import free_port
from bench.procfs import all_listening, children
from bench.rawhttp import Pool

ROOT = Path(__file__).resolve().parents[1]
_TICKS = os.sysconf("SC_CLK_TCK")
PROGRESS_EVERY_S = 10.0


def checkout_env() -> dict[str, str]:
    """This process's environment with this checkout first on the import path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}


class _ManagedProcess:
    """A subprocess started on entering and terminated on exit, ready once `ready_url`
    answers 200."""

    ready_url: str
    name: str
    _startup_s: float
    _proc: subprocess.Popen[bytes] | None = None

    def _wait_ready(self, poll_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self._startup_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.ready_url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self._proc.poll() is not None:
                raise SystemExit(f"{self.name} exited during startup")
            time.sleep(poll_s)
        self.__exit__(None, None, None)
        raise SystemExit(f"{self.name} not ready in {self._startup_s:.0f} s")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(30)
            self._proc = None


class ServiceProcess(_ManagedProcess):
    """`app.main:app` on the store at `shard` (SYNC_MODE=off), ready when entered."""

    def __init__(
        self,
        shard: Path,
        mode: str,
        *,
        table_path: Path,
        startup_s: float = 300,
        qdrant_url: str | None = None,
        collection: str | None = None,
        learned_model: str = "",
        workers: int = 1,
        env: dict[str, str] | None = None,
    ):
        """With `qdrant_url`, the store is that server's `collection`, not the shard;
        `learned_model` is LEARNED_MODEL (e.g. a ranker), none by default; `workers` API
        processes on one port (app/api/serve.py); `env` more settings."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = mode
        extra = env or {}
        env = {
            **checkout_env(),
            "RETRIEVAL_MODE": mode,
            "SYNC_MODE": "off",
            "QDRANT_PATH": str(shard),
            "HUDI_TABLE_PATH": str(table_path),
            "OPENAI_API_KEY": "",
            "LOG_LEVEL": "WARNING",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "LEARNED_MODEL": learned_model,
            **extra,
        }
        env.pop("QDRANT_URL", None)
        if qdrant_url:
            env["QDRANT_URL"] = qdrant_url
            env["QDRANT_COLLECTION"] = collection or "products"
        # As scripts/serve.sh runs it: `workers` processes, a socket each (app/api/serve.py).
        env["WEB_CONCURRENCY"] = str(workers)
        self._cmd = [sys.executable, "-m", "app.api.serve", "--host", "127.0.0.1"]
        self._cmd += ["--port", str(self.port)]
        self._env = env
        self._startup_s = startup_s
        self.workers = workers
        self.ready_url, self.name = f"{self.url}/ready", "service"

    def __enter__(self) -> ServiceProcess:
        self._proc = subprocess.Popen(self._cmd, cwd=ROOT, env=self._env)
        self._wait_ready(0.5)
        if self.workers > 1:
            self._wait_workers_listening()
        return self

    def _wait_workers_listening(self) -> None:
        """Until every worker listens on the port: /ready answers from the first one that
        finished loading, and a worker listens only once it has (app/api/serve.py)."""
        assert self._proc is not None
        deadline = time.monotonic() + self._startup_s
        while not all_listening(self._proc.pid, self.port, self.workers):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.workers} workers not listening in {self._startup_s:.0f} s")
            time.sleep(0.2)

    def cpu_seconds(self) -> float:
        """User + system CPU of the service so far (all its threads, and its workers')."""
        if self._proc is None:
            raise RuntimeError("service not running")
        return sum(_cpu_seconds(pid) for pid in (self._proc.pid, *children(self._proc.pid)))


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # a worker that has just exited
        return 0.0
    # utime and stime are fields 14 and 15 of stat(5); [0] here is field 3 (state).
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(frozen=True)
class Phase:
    """One measured phase: per-request latencies (s), wall time (s), service CPU (s)."""

    latencies: list[float]
    wall: float
    cpu: float = 0.0

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.wall

    @property
    def cpu_ms_per_request(self) -> float:
        return self.cpu / len(self.latencies) * 1000

    def pct(self, p: float) -> float:
        """The p-th percentile latency in ms (nearest rank)."""
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def drive(
    url: str,
    path: str,
    bodies: list[dict[str, Any]],
    clients: int,
    requests: int,
    *,
    max_seconds: float | None = None,
    label: str = "",
    expect: int = 200,
) -> Phase:
    """`clients` closed-loop clients sharing `requests` POST calls to `path`, body n being
    bodies[n % len(bodies)]; no new request starts after `max_seconds`; any answer but
    `expect` stops the run. With a `label`, progress and an ETA go to stderr every
    PROGRESS_EVERY_S."""
    host, port = url.removeprefix("http://").split(":")
    encoded = [json.dumps(b).encode() for b in bodies]

    async def run() -> Phase:
        pool = Pool(host, int(port))
        latencies: list[float] = []
        counter = iter(range(requests))
        started = time.perf_counter()
        deadline = started + max_seconds if max_seconds else float("inf")
        reported = started

        async def client() -> None:
            nonlocal reported
            for n in counter:
                t = time.perf_counter()
                if t >= deadline:
                    return
                status, raw = await pool.request("POST", path, encoded[n % len(encoded)])
                now = time.perf_counter()
                if status != expect:
                    raise SystemExit(f"POST {path} answered {status}: {raw[:200]!r}")
                latencies.append(now - t)
                if label and now - reported >= PROGRESS_EVERY_S:
                    reported = now
                    rate = len(latencies) / (now - started)
                    left = max(0.0, min((requests - len(latencies)) / rate, deadline - now))
                    print(
                        f"  {label}: {len(latencies)}/{requests}, {rate:.1f} req/s, "
                        f"ETA {left:.0f}s",
                        file=sys.stderr,
                        flush=True,
                    )

        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - started
        await pool.close()
        return Phase(latencies, wall)

    return asyncio.run(run())


def measure(
    service: ServiceProcess,
    path: str,
    bodies: list[dict[str, Any]],
    clients: int,
    requests: int,
    *,
    max_seconds: float | None = None,
    label: str = "",
) -> Phase:
    """`drive`, with the service's CPU time over the phase."""
    cpu = service.cpu_seconds()
    phase = drive(
        service.url, path, bodies, clients, requests, max_seconds=max_seconds, label=label
    )
    return Phase(phase.latencies, phase.wall, service.cpu_seconds() - cpu)


class QdrantServerProcess(_ManagedProcess):
    """A Qdrant server from `binary` on free loopback ports, its storage in `folder`."""

    def __init__(self, binary: str, folder: Path, startup_s: float = 60) -> None:
        http, grpc = free_port(), free_port()
        self.url = f"http://127.0.0.1:{http}"
        self.grpc_port = grpc
        self._env = {
            **os.environ,
            "QDRANT__STORAGE__STORAGE_PATH": str(folder / "storage"),
            "QDRANT__STORAGE__SNAPSHOTS_PATH": str(folder / "snapshots"),
            "QDRANT__SERVICE__HTTP_PORT": str(http),
            "QDRANT__SERVICE__GRPC_PORT": str(grpc),
            "QDRANT__SERVICE__HOST": "127.0.0.1",
            "QDRANT__TELEMETRY_DISABLED": "true",
        }
        self._cmd, self._folder, self._startup_s = [binary], folder, startup_s
        self.ready_url, self.name = f"{self.url}/readyz", f"qdrant (log: {folder}/qdrant.log)"

    def __enter__(self) -> QdrantServerProcess:
        self._folder.mkdir(parents=True, exist_ok=True)
        log = (self._folder / "qdrant.log").open("wb")
        self._proc = subprocess.Popen(
            self._cmd, cwd=self._folder, env=self._env, stdout=log, stderr=subprocess.STDOUT
        )
        self._wait_ready(0.2)
        return self
