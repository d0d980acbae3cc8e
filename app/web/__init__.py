"""The pages: `/` the shopper's (index.html), `/insights` the shop's analytics view
(insights.html), `/static` their stylesheet and scripts.

Plain files, no build step. The shopper page talks to the API through `POST /recommend`
and `POST /events`; the analytics view reads `GET /analytics` (an admin route: it asks for
the API key when the service has one).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent / "static"

# Sent as a header as well as the page's meta tag: a header also covers frame-ancestors,
# which a meta tag cannot. Scripts and styles only from this origin, so even if seller
# text ever reached the DOM as markup, an injected <script> or onerror= would not run.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page is tiny; revalidating keeps it in step with the API after a deploy.
    "Cache-Control": "no-cache",
}


def mount_web(app: FastAPI) -> None:
    """Serve the pages at `/` and `/insights` and their assets under `/static`."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers=_PAGE_HEADERS)

    @app.get("/insights", include_in_schema=False)
    async def insights() -> FileResponse:
        return FileResponse(STATIC_DIR / "insights.html", headers=_PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
