"""One error body for every 4xx/5xx: `{"success": false, "detail": "<message>"}`."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


def _where(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) or "body"


def validation_message(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """Status and a readable message; malformed JSON is a 400, a well-formed bad body a 422."""
    for e in errors:
        if e.get("type") == "json_invalid":
            ctx = e.get("ctx") or {}
            return 400, f"malformed JSON: {ctx.get('error', e.get('msg', 'cannot parse body'))}"
    parts = [f"{_where(e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in errors]
    return 422, "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        code, message = validation_message(list(exc.errors()))
        return JSONResponse({"success": False, "detail": message}, status_code=code)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            {"success": False, "detail": str(exc.detail)},
            status_code=exc.status_code,
            headers=exc.headers,
        )


# Seen (exception type, route) pairs: the first hit of each logs its traceback, later hits
# one line. Bounded, so a flood of distinct failures cannot grow it without limit.
_MAX_SEEN = 256
# Never swallowed: these end a task or the process on purpose.
_PASS_THROUGH = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


class UnhandledErrorMiddleware:
    """The last resort: an error no handler took becomes a JSON 500 with a request id.

    Starlette's own ServerErrorMiddleware answers in text/plain and re-raises, so the
    server logs a full traceback on every hit; a bad input repeated at 100 req/s would
    flood the log. This one answers `{"success": false, "detail": ..., "request_id": ...}`
    (also in the X-Request-ID header), logs one line per hit (the traceback only the first
    time an error type is seen on a route) and does not re-raise. It catches
    BaseException: native extensions raise panics (pyo3's PanicException) outside Exception.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._seen: set[tuple[str, str]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except _PASS_THROUGH:
            raise
        except BaseException as exc:
            request_id = uuid.uuid4().hex[:16]
            route = getattr(scope.get("route"), "path", None) or str(scope.get("path", ""))
            key = (type(exc).__name__, route)
            # Once the set is full, new kinds log one line too: never a traceback per hit.
            first = key not in self._seen and len(self._seen) < _MAX_SEEN
            if first:
                self._seen.add(key)
            logger.error(
                "unhandled %s on %s %s (request_id=%s): %s",
                type(exc).__name__,
                scope.get("method", ""),
                route,
                request_id,
                exc,
                exc_info=exc if first else None,
            )
            if started:
                return  # the response is under way; the server closes the connection
            body = json.dumps(
                {
                    "success": False,
                    "detail": f"internal error (request_id {request_id})",
                    "request_id": request_id,
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"x-request-id", request_id.encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
