"""The real app served by uvicorn on a free local port, in a thread of the test process."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import uvicorn
from fastapi import FastAPI

from app.core.config import Settings
from app.main import create_app


class ServerThread:
    def __init__(self, settings: Settings, app: FastAPI | None = None) -> None:
        """Serves `app` (default: `create_app(settings)`)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
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


def wait_ready(url: str, seconds: float) -> None:
    """Until /ready says the first sync is done (the catalog is searchable)."""
    deadline = time.monotonic() + seconds
    while httpx.get(url + "/ready").status_code != 200:
        assert time.monotonic() < deadline, httpx.get(url + "/sync/status").text
        time.sleep(0.2)
