"""Prometheus metrics of the service: HTTP traffic (middleware) and the sync (read at scrape).

HTTP series live on the default registry, next to `llm_requests_total` (app/llm/metrics.py).
The sync series are read from the engine's running totals when `/metrics` is scraped, so
they sit in a per-app registry: two apps in one process (tests) never share a collector.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.errors import RecommenderError
from app.store import StoreError

if TYPE_CHECKING:
    from app.sync.engine import SyncEngine

logger = logging.getLogger(__name__)

HTTP_REQUESTS = Counter(
    "http_requests", "HTTP requests by route template and status.", ["method", "route", "status"]
)
HTTP_LATENCY = Histogram(
    "http_request_duration_seconds",
    "HTTP request latency by route template (until the response is sent).",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
# Paths that matched no route share one label: raw paths would let scanners explode the series.
UNMATCHED = "unmatched"


class HttpMetricsMiddleware:
    """Counts and times every HTTP request under its route template (`/sync`, not raw paths)."""

    def __init__(
        self, app: ASGIApp, route_templates: Callable[[], Iterable[str]] | None = None
    ) -> None:
        """Args:
        route_templates: the app's path templates (`/products/{id}/similar`), read at the
            first request answered before routing (a 413 from the body limit), so that it
            is counted under the route it was for instead of "unmatched".
        """
        self.app = app
        self._route_templates = route_templates
        self._patterns: list[tuple[re.Pattern[str], str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server sends if the app raises before starting a response

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            # Routing stores the matched route in the (shared) scope dict.
            route = getattr(scope.get("route"), "path", None) or self._match(scope)
            method = str(scope.get("method", ""))
            HTTP_REQUESTS.labels(method=method, route=route, status=str(status)).inc()
            HTTP_LATENCY.labels(method=method, route=route).observe(time.perf_counter() - started)

    def _match(self, scope: Scope) -> str:
        """The template of the route this path is for (any method), else UNMATCHED."""
        if self._route_templates is None:
            return UNMATCHED
        if self._patterns is None:
            # Starlette's own template compiler: `{id:int}` etc. match as routing would.
            self._patterns = [(compile_path(t)[0], t) for t in self._route_templates()]
        path = str(scope.get("path", ""))
        return next((t for regex, t in self._patterns if regex.match(path)), UNMATCHED)


class SyncCollector(Collector):
    """Sync counters and gauges taken from the engine's totals at scrape time."""

    def __init__(self, engine: SyncEngine | Callable[[], SyncEngine]) -> None:
        # A callable names the serving index's engine, which a model switch replaces.
        self._engine = engine

    @property
    def engine(self) -> SyncEngine:
        return self._engine() if callable(self._engine) else self._engine

    def collect(self) -> Iterator[Metric]:
        try:
            # Lag from the table itself, also when another process syncs (SYNC_MODE=off).
            self.engine.observe()
        except RecommenderError as e:  # a known condition (no table yet, store down): one line
            logger.warning("cannot read the table's latest commit for /metrics: %s", e)
        except Exception:  # a scrape must not fail on an unreadable table or store
            logger.warning("cannot read the table's latest commit for /metrics", exc_info=True)
        t = self.engine.totals
        counters = {
            "sync_cycles": ("Completed sync cycles (noop cycles included).", t.cycles),
            "sync_failures": ("Sync cycles that failed.", t.failures),
            "sync_embedded_chunks": ("Chunks embedded and written.", t.embedded),
            "sync_loaded_chunks": (
                "Chunks written with a vector loaded from VECTORS_TABLE_PATH (spark_jobs.embed).",
                t.loaded,
            ),
            "sync_skipped_chunks": ("Chunks kept because their content was unchanged.", t.skipped),
            "sync_deleted_chunks": ("Stale or removed chunks deleted.", t.deleted),
        }
        for name, (doc, value) in counters.items():
            yield CounterMetricFamily(name, doc, value=value)
        yield GaugeMetricFamily(
            "sync_lag_seconds",
            "Age of the oldest table commit not yet searchable (0: the index is current).",
            value=t.lag_seconds(),
        )
        since = time.time() - t.last_success_at if t.last_success_at else -1.0
        yield GaugeMetricFamily(
            "sync_seconds_since_success", "Seconds since the last good cycle (-1: none).", since
        )
        try:
            points = float(self.engine.store.count())
        except StoreError:
            logger.warning("cannot count store points for /metrics", exc_info=True)
            points = float("nan")
        yield GaugeMetricFamily("vector_store_points", "Points (chunks) in the collection.", points)


def sync_registry(engine: SyncEngine | Callable[[], SyncEngine]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SyncCollector(engine))
    return registry


def render(*registries: CollectorRegistry) -> bytes:
    """The exposition text of several registries (their metric names never overlap)."""
    return b"".join(generate_latest(r) for r in registries)
