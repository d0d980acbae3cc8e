"""Prometheus exposition."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY

from app.api.deps import ServicesDep
from app.metrics import render

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
def metrics(services: ServicesDep) -> Response:
    """HTTP, LLM and sync metrics in the Prometheus text format."""
    # A def route: counting store points is blocking work, so it runs in the threadpool.
    body = render(REGISTRY, services.metrics_registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
