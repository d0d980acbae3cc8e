"""The parts one API process holds, built at startup and closed at shutdown."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from app.api.admission import RetrievalGate
from app.api.conversation import ConversationCodec, conversation_secret
from app.api.processes import check_processes
from app.core.config import Settings
from app.embedding import Embedder, embedder_for
from app.embedding.onnx_query import build_onnx_query_encoder
from app.events.ids import RecommendationIds
from app.events.log import EventLog
from app.events.shop import ShopEvents
from app.llm import Generator, OpenAIGenerator, build_generator
from app.llm.metrics import LLMStateCollector
from app.metrics import sync_registry
from app.query import QueryUnderstanding, build_query_understanding
from app.ranking import ranker_for
from app.retrieval import Retriever
from app.retrieval.retriever import QueryEncoder
from app.store import VectorStore, open_store
from app.sync.engine import SyncEngine
from app.sync.runner import SyncRunner

logger = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    store: VectorStore
    embedder: Embedder
    engine: SyncEngine
    retriever: Retriever
    understanding: QueryUnderstanding
    generator: Generator
    # None when SYNC_MODE=off: another process (python -m app.sync --loop) writes the index.
    runner: SyncRunner | None
    metrics_registry: CollectorRegistry
    retrieval_gate: RetrievalGate
    conversations: ConversationCodec
    events: ShopEvents

    def is_ready(self) -> bool:
        """Serving a complete index: a first cycle done here, or a checkpoint left by the syncer."""
        if self.runner is not None:
            return self.runner.ready
        return self.store.load_state() is not None

    async def aclose(self) -> None:
        if self.runner is not None:
            await self.runner.stop()
        await self.generator.aclose()
        await self.understanding.aclose()
        if self.events.log is not None:
            await asyncio.to_thread(self.events.log.close)
        await asyncio.to_thread(self.store.close)


def _query_encoder(settings: Settings, embedder: Embedder) -> QueryEncoder:
    if settings.query_encoder == "onnx":
        encoder = build_onnx_query_encoder(embedder, settings.model_cache_dir)
        if encoder is not None:
            return encoder
    return embedder


def build_services(settings: Settings) -> Services:
    """Open the store, load the model and build the engine (blocking; seconds).

    Raises:
        ScaleOutError: WEB_CONCURRENCY > 1 where only one process can run.
        StoreError: the store cannot be opened (locked by another process, wrong dimension).
        LearnedModelError: LEARNED_MODEL names a ranker that cannot be loaded.
    """
    check_processes(settings)
    store = open_store(settings)
    try:
        embedder = embedder_for(settings)
        engine = SyncEngine(settings, store, embedder)
        ranker = ranker_for(settings.learned_model)
    except BaseException:
        store.close()
        raise
    runner = (
        SyncRunner(engine, settings.sync_interval_seconds)
        if settings.sync_mode == "embedded"
        else None
    )
    generator = build_generator(settings)
    secret = conversation_secret(settings)
    registry = sync_registry(engine)
    if isinstance(generator, OpenAIGenerator):
        registry.register(LLMStateCollector(generator))
    return Services(
        settings=settings,
        store=store,
        embedder=embedder,
        engine=engine,
        retriever=Retriever(_query_encoder(settings, embedder), store, settings, ranker=ranker),
        understanding=build_query_understanding(settings, store),
        generator=generator,
        runner=runner,
        metrics_registry=registry,
        retrieval_gate=RetrievalGate(
            settings.retrieval_concurrency, settings.retrieval_max_waiting
        ),
        conversations=ConversationCodec(secret, settings.conversation_ttl_seconds),
        events=ShopEvents(
            log=_event_log(settings),
            ids=RecommendationIds(secret, settings.events_attribution_days),
            secret=secret,
            ranking_version=f"{embedder.model_id}|relevance",
            record_impressions=settings.record_impressions,
        ),
    )


def _event_log(settings: Settings) -> EventLog | None:
    try:
        return EventLog(
            Path(settings.events_dir),
            settings.events_flush_seconds,
            settings.events_segment_seconds,
        )
    except OSError as e:
        # Answers must not depend on the events' disk: they go out, events are refused.
        logger.error("events are not recorded: EVENTS_DIR %s: %s", settings.events_dir, e)
        return None
