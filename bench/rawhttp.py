"""Minimal HTTP/1.1 over asyncio streams, for load generation and stand-in servers.

A load client must cost far less CPU than the service it measures, and here all three
(client, service, stand-in LLM) share 2 cores. With httpx's async pool at 100 req/s against
2-s answers (200+ in flight) the old load client sat at 100% of a core with 6,659
connections open and starved the service it was measuring (BENCHMARKS.md, issue 13).
Against a trivial server, one connection, httpx.Client costs 0.52 ms of CPU per request
and this 0.05 ms.
This speaks just enough HTTP for that job: keep-alive connections reused LIFO, requests
with a Content-Length body, responses with Content-Length (what uvicorn sends for JSON).
It is not a general client: no chunked bodies, redirects, TLS or pipelining. A stand-in
server may answer with an event stream, sent as a chunked body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
# uvicorn closes a connection idle for 5 s (its --timeout-keep-alive): one idle longer than
# this is not reused, so a request never races the server's close.
MAX_IDLE_SECONDS = 4.0


class ProtocolError(Exception):
    """The peer sent something this minimal HTTP cannot read."""


async def _read_message(reader: asyncio.StreamReader) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """(start line, lower-cased headers, body) of one message; body by Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    start, *lines = head[:-4].split(b"\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"chunked" in headers.get(b"transfer-encoding", b""):
        raise ProtocolError("chunked bodies are not supported")
    length = int(headers.get(b"content-length", b"0"))
    return start, headers, await reader.readexactly(length) if length else b""


class Pool:
    """Keep-alive connections to one host; opens more as concurrency needs them."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._idle: list[tuple[_Conn, float]] = []
        self.opened = 0

    def _reusable(self) -> _Conn | None:
        while self._idle:
            conn, since = self._idle.pop()
            if time.monotonic() - since < MAX_IDLE_SECONDS and not conn[0].at_eof():
                return conn
            conn[1].close()  # timed out or closed by the server
        return None

    async def request(
        self, method: str, path: str, body: bytes = b"", timeout: float = 60
    ) -> tuple[int, bytes]:
        """(status, body). Raises TimeoutError, OSError, ProtocolError or IncompleteReadError."""
        conn = self._reusable()
        if conn is None:
            conn = await asyncio.open_connection(self.host, self.port)
            self.opened += 1
        reader, writer = conn
        try:
            async with asyncio.timeout(timeout):
                head = (
                    f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                )
                writer.write(head.encode() + body)
                start, headers, payload = await _read_message(reader)
        except BaseException:
            writer.close()  # a half-read connection cannot be reused
            raise
        if headers.get(b"connection", b"").lower() == b"close":
            writer.close()
        else:
            self._idle.append((conn, time.monotonic()))
        return int(start.split(b" ", 2)[1]), payload

    async def close(self) -> None:
        for (_, writer), _ in self._idle:
            writer.close()
        self._idle.clear()


# (method, path, body) -> (status, JSON body), or (status, SSE chunks) sent chunked
Handler = Callable[[str, str, bytes], Awaitable[tuple[int, bytes | AsyncIterator[bytes]]]]


async def _send_chunked(
    writer: asyncio.StreamWriter, status: int, chunks: AsyncIterator[bytes]
) -> None:
    """An event stream in a chunked body, each chunk written (and drained) as it comes."""
    writer.write(
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    )
    async for chunk in chunks:
        writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def serve(handler: Handler, host: str, port: int) -> None:
    """Serve `handler` with keep-alive until cancelled (a deep backlog, like the service)."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                start, _, body = await _read_message(reader)
                method, path, _ = start.decode("latin-1").split(" ", 2)
                status, payload = await handler(method, path, body)
                if not isinstance(payload, bytes):
                    await _send_chunked(writer, status, payload)
                    continue
                writer.write(
                    f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                    "Content-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ProtocolError, ValueError):
            pass  # the client went away or sent what this server does not speak
        finally:
            writer.close()

    server = await asyncio.start_server(connection, host, port, backlog=4096)
    async with server:
        await server.serve_forever()
