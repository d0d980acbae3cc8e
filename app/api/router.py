"""Every route of the API, joined in one place."""

from fastapi import APIRouter

from app.api.routes import analytics, events, health, metrics, products, recommend, sync

api_router = APIRouter()
api_router.include_router(recommend.router)
api_router.include_router(events.router)
api_router.include_router(products.router)
api_router.include_router(health.router)
api_router.include_router(sync.router)
api_router.include_router(metrics.router)
api_router.include_router(analytics.router)
