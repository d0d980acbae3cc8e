"""Start the API on HOST:PORT: `python -m app.api.serve` (scripts/serve.sh, the image's command).

One process (WEB_CONCURRENCY=1, the default) is uvicorn as its CLI runs it. With N > 1
this module supervises N worker processes, each listening on a socket of its own bound to
the port with SO_REUSEPORT, and the kernel spreads new connections over them by address.
`uvicorn --workers` shares one listening socket instead, and the worker that wakes first
accepts every connection waiting: a client opening its keep-alive connections at once (a
proxy's pool, a load test) had all of them on one worker while the other idled
(BENCHMARKS.md, "Edge shard against a Qdrant server").

A worker listens only once its startup is done (the model loaded), so the kernel hands no
connection to one that cannot answer yet. A worker killed by a signal is replaced; one that
exits with an error (its startup failed) stops them all with its code; SIGINT or SIGTERM
stops the workers gracefully. A worker that hangs without exiting is not noticed
(uvicorn's supervisor pings its workers; this one watches exits). SO_REUSEPORT lets only
processes of the same user share the port.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from multiprocessing.process import BaseProcess

import uvicorn

from app.api.nodelay import NoDelayHttpToolsProtocol
from app.api.processes import ScaleOutError, check_processes
from app.core.config import get_settings
from app.core.logging import configure_logging

logger = logging.getLogger(__name__)

GRACEFUL_SECONDS = 10  # in-flight requests finish within this after SIGTERM
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def uvicorn_config(host: str, port: int, log_level: str) -> uvicorn.Config:
    # --http: TCP_NODELAY on every accepted connection (app/api/nodelay.py).
    return uvicorn.Config(
        "app.main:app",
        host=host,
        port=port,
        http=NoDelayHttpToolsProtocol,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        log_level=log_level.lower(),
    )


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port beside other SO_REUSEPORT sockets, not listening yet
    (uvicorn listens on it after the app's startup)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _worker(host: str, port: int, log_level: str) -> None:
    """One API process: its own socket, uvicorn on it; gone with the supervisor."""
    with contextlib.suppress(OSError, AttributeError):  # Linux only; elsewhere best effort
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    # On the SIGTERM uvicorn raises again after its shutdown (see _run): exit with clean-up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = reuseport_socket(host, port)
    _run(uvicorn.Server(uvicorn_config(host, port, log_level)), [sock])


def _run(server: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
    # uvicorn raises the signal that stopped it again once it has shut down; SIGINT's is a
    # KeyboardInterrupt, which uvicorn's CLI swallows too (else exit -2, or a traceback).
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=sockets)


def supervise(host: str, port: int, workers: int, log_level: str) -> int:
    """Run `workers` API processes on host:port until SIGINT/SIGTERM; the exit code."""
    reuseport_socket(host, port).close()  # a port another program holds fails here, once
    spawn = multiprocessing.get_context("spawn")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    def start() -> BaseProcess:
        process = spawn.Process(target=_worker, args=(host, port, log_level), daemon=False)
        process.start()
        return process

    running = [start() for _ in range(workers)]
    logger.info("%d API processes on %s:%d (SO_REUSEPORT)", workers, host, port)
    code = 0
    while not stop.wait(0.5):
        for i, process in enumerate(running):
            if process.is_alive():
                continue
            # A code of its own (a failed startup, a bad setting) would come back on a
            # restart; a signal (kill -9, the OOM killer) or a clean exit is replaced.
            if process.exitcode is not None and process.exitcode > 0:
                logger.error("API process %s exited %s; stopping", process.pid, process.exitcode)
                code = process.exitcode
                stop.set()
                break
            logger.warning(
                "API process %s exited (%s); starting another", process.pid, process.exitcode
            )
            running[i] = start()
    for process in running:
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGTERM)  # uvicorn's graceful shutdown
    for process in running:
        process.join(GRACEFUL_SECONDS + 5)
        if process.is_alive():
            process.kill()
            process.join()
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    try:
        workers = check_processes(settings)
    except ScaleOutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if workers == 1:
        _run(uvicorn.Server(uvicorn_config(args.host, args.port, settings.log_level)))
        return 0
    return supervise(args.host, args.port, workers, settings.log_level)


if __name__ == "__main__":
    sys.exit(main())
