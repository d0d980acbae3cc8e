"""uvicorn's httptools protocol with Nagle's algorithm off on every connection it serves.

A listening socket made as `socket.socket(family)` (uvicorn's with `--workers N`, each of
app/api/serve.py's workers') says protocol number 0, not IPPROTO_TCP, so asyncio's own
TCP_NODELAY (set only on sockets that say IPPROTO_TCP) is skipped on every connection
accepted from it. A response's headers and body then leave in two writes, and the second
waits for the client's delayed ACK: +40 ms per request on a keep-alive connection (a
trivial app measured 2.5 ms with one process, 44 ms with two). app/api/serve.py gives
uvicorn this class.

httptools (a C parser) rather than h11: a streamed answer sends an event per tick, and each
costs less in C (BENCHMARKS.md, "Streamed answers").
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class NoDelayHttpToolsProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
