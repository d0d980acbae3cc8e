"""One error body for every 4xx/5xx: `{"success": false, "detail": "<message>"}`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

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
