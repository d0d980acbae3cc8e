"""The real app served by uvicorn on a free local port: in a thread of the test process
(`ServerThread`), or as a process of its own (`ApiProcess`) where a test kills it or runs
two."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from fastapi import FastAPI

from app.core.config import ROOT, Settings
from app.core.ports import free_port
from app.main import create_app


class ServerThread:
    def __init__(self, settings: Settings, app: FastAPI | None = None) -> None:
        """Serves `app` (default: `create_app(settings)`)."""
        self.port = free_port()
        config = uvicorn.Config(
            app or create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            assert self.thread.is_alive(), "server failed to start"
            assert time.monotonic() < deadline, "server did not start in 120 s"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


class _Gets(Protocol):
    def get(self, url: str, /) -> Any: ...


def wait_ready(service: str | _Gets, seconds: float = 120) -> None:
    """Until /ready says the first sync is done (the catalog is searchable): a service's URL
    or a client of it (a TestClient is one)."""
    if isinstance(service, str):
        with httpx.Client(base_url=service) as client:
            wait_ready(client, seconds)
        return
    deadline = time.monotonic() + seconds
    while service.get("/ready").status_code != 200:
        assert time.monotonic() < deadline, service.get("/sync/status").text
        time.sleep(0.2)


class ApiProcess:
    """`uvicorn app.main:app` in a subprocess on a free port, `env` over this process's
    environment, its output appended to `log`."""

    def __init__(self, env: Mapping[str, str], log: Path) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port)],
                cwd=ROOT,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait(self, path: str = "/ready", seconds: float = 600) -> None:
        """Until `path` answers 200 (the log's tail in the failure if the API exits)."""
        deadline = time.monotonic() + seconds
        while True:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(self.url + path, timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]
            time.sleep(0.2)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """`sig`, then SIGKILL if it has not exited within a minute."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
