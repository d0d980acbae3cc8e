"""Request dependencies as `Annotated` aliases: the app's services and the admin key check."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Callable
from typing import Annotated, ParamSpec, TypeVar

from fastapi import Depends, HTTPException, Request, Response, status
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from app.api.admission import Overloaded, RetrievalGate
from app.api.conversation import ConversationCodec
from app.api.services import Services
from app.core.config import Settings
from app.events.shop import ShopEvents
from app.llm import Generator
from app.query import QueryUnderstanding
from app.retrieval import Retriever
from app.store import StoreError

logger = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


# `async def` although none awaits: FastAPI runs a plain `def` dependency in the threadpool,
# a thread hop each (measured in git history of BENCHMARKS.md); reading attributes needs none.
async def get_services(request: Request) -> Services:
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:  # only between app creation and the end of startup
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "service is starting")
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_settings(services: ServicesDep) -> Settings:
    return services.settings


# Names the encoder (and so the index) and the ranking that answered, on every route that
# searches (the JSON answers also carry it as `ranking_version`).
RANKING_VERSION_HEADER = "X-Ranking-Version"


async def get_retriever(services: ServicesDep, response: Response) -> AsyncIterator[Retriever]:
    """The serving index for the whole request: a model switch waits until it is done."""
    with services.holding() as index:
        response.headers[RANKING_VERSION_HEADER] = index.version
        yield index.retriever


async def get_generator(services: ServicesDep) -> Generator:
    return services.generator


async def get_understanding(services: ServicesDep) -> QueryUnderstanding:
    return services.understanding


async def get_retrieval_gate(services: ServicesDep) -> RetrievalGate:
    return services.retrieval_gate


async def get_conversations(services: ServicesDep) -> ConversationCodec:
    return services.conversations


async def get_shop_events(services: ServicesDep) -> ShopEvents:
    return services.events


SettingsDep = Annotated[Settings, Depends(get_settings)]
RetrieverDep = Annotated[Retriever, Depends(get_retriever)]
GeneratorDep = Annotated[Generator, Depends(get_generator)]
UnderstandingDep = Annotated[QueryUnderstanding, Depends(get_understanding)]
RetrievalGateDep = Annotated[RetrievalGate, Depends(get_retrieval_gate)]
ConversationsDep = Annotated[ConversationCodec, Depends(get_conversations)]
ShopEventsDep = Annotated[ShopEvents, Depends(get_shop_events)]

# auto_error=False: a missing key is our 401 with a message, and no key is fine when
# API_KEY is unset.
_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)
_bearer = HTTPBearer(auto_error=False)


async def require_api_key(
    settings: SettingsDep,
    key: Annotated[str | None, Depends(_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Admin routes need API_KEY (X-API-Key or Authorization: Bearer) when one is set."""
    if settings.api_key is None or not settings.api_key.get_secret_value():
        return
    given = key if key is not None else (bearer.credentials if bearer is not None else None)
    expected = settings.api_key.get_secret_value().encode()
    # Constant time: the comparison must not leak how much of a guess was right.
    if given is None or not hmac.compare_digest(given.encode(), expected):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong API key (send X-API-Key or Authorization: Bearer)",
            headers={"WWW-Authenticate": "Bearer"},
        )


AdminDep = Depends(require_api_key)


async def run_retrieval(
    gate: RetrievalGate, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """Blocking retrieval work (query embedding, engine search) off the event loop, a few
    at a time: a full queue is a 503 with Retry-After at once, a store failure a 503."""
    try:
        async with gate.slot():
            return await run_in_threadpool(fn, *args, **kwargs)
    except Overloaded as e:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"busy: {e}; retry shortly",
            headers={"Retry-After": "1"},
        ) from e
    except StoreError as e:
        logger.error("%s failed: %s", what, e)
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"vector store unavailable: {e}"
        ) from e
