"""bench/rawhttp.py: the load client and stand-in server speak HTTP/1.1 with each other
and with uvicorn-style keep-alive."""

from __future__ import annotations

import asyncio
import socket

from bench.rawhttp import Pool, serve


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _echo(method: str, path: str, body: bytes) -> tuple[int, bytes]:
    if path == "/missing":
        return 404, b'{"error": "not found"}'
    return 200, method.encode() + b" " + path.encode() + b" " + body


def test_requests_reuse_one_keep_alive_connection() -> None:
    async def main() -> None:
        port = _free_port()
        server = asyncio.create_task(serve(_echo, "127.0.0.1", port))
        await asyncio.sleep(0.2)
        pool = Pool("127.0.0.1", port)
        try:
            assert await pool.request("POST", "/recommend", b'{"q": 1}') == (
                200,
                b'POST /recommend {"q": 1}',
            )
            assert await pool.request("GET", "/missing") == (404, b'{"error": "not found"}')
            # Concurrent requests open more connections; sequential ones reuse them.
            answers = await asyncio.gather(
                *(pool.request("POST", f"/{i}", b"x" * i) for i in range(5))
            )
            assert [a[1] for a in answers] == [f"POST /{i} ".encode() + b"x" * i for i in range(5)]
            assert pool.opened == 5
        finally:
            await pool.close()
            server.cancel()

    asyncio.run(main())


def test_a_connection_the_server_closed_is_not_reused() -> None:
    # What uvicorn does to a connection idle past its keep-alive timeout: answer, then
    # close without saying so in the response.
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(once, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Pool("127.0.0.1", port)
        try:
            assert await pool.request("GET", "/a") == (200, b"ok")
            await asyncio.sleep(0.2)  # the close arrives while the connection is idle
            assert await pool.request("GET", "/b") == (200, b"ok")
            assert pool.opened == 2
        finally:
            await pool.close()
            server.close()

    asyncio.run(main())
