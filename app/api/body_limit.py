"""Reject request bodies over MAX_BODY_BYTES with a 413, by header and by counting the stream.

Content-Length alone is not enough: a chunked upload has none, and a client can lie.
The body is read (at most limit + one message) before the app sees it, then replayed.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await _reject(send, 400, "invalid Content-Length header")
                return
            if int(declared) > self.max_bytes:
                await _reject(send, 413, self._too_large())
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left; nobody to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await _reject(send, 413, self._too_large())
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    def _too_large(self) -> str:
        return f"request body is larger than {self.max_bytes} bytes"


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later calls wait for the disconnect, as the server's would

    return replay


async def _reject(send: Send, status: int, detail: str) -> None:
    data = json.dumps({"success": False, "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                # The rest of an oversized upload is not read: the connection cannot be reused.
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
