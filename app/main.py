"""The ASGI app (`app.main:app`): retrieval + generation over the synced index.

`create_app(settings)` builds one; the lifespan opens the store, loads the model, builds
the sync engine (started in-process when SYNC_MODE=embedded) and the generator, and
closes them on shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool

from app.api.body_limit import BodyLimitMiddleware
from app.api.errors import UnhandledErrorMiddleware, install_error_handlers
from app.api.router import api_router
from app.api.services import build_services
from app.core.config import Settings, get_settings
from app.core.logging import configure_logging
from app.metrics import HttpMetricsMiddleware
from app.web import mount_web

logger = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.log_level)
        services = await run_in_threadpool(build_services, settings)
        app.state.services = services
        if services.runner is not None:
            services.runner.start()
        logger.info(
            "serving: sync %s, generator %s",
            settings.sync_mode,
            type(services.generator).__name__,
        )
        try:
            yield
        finally:
            app.state.services = None
            await services.aclose()

    app = FastAPI(
        title="Hudi RAG product recommender",
        summary="Plain-language product recommendations over a live Hudi catalog.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(api_router)
    mount_web(app)
    # Added innermost first: the metrics middleware is outermost, so 413s and last-resort
    # 500s are counted too (under the route the request was for: it gets the routes).
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", "Authorization", "X-API-Key"],
        )
    app.add_middleware(UnhandledErrorMiddleware)
    app.add_middleware(HttpMetricsMiddleware, route_templates=lambda: app.openapi()["paths"])
    return app


app = create_app()
