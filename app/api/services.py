"""The parts one API process holds, built at startup and closed at shutdown.

Requests read the index through `Services.index`: the query encoder, the store it
searches and the learned ranker trained with that encoder, in one object that a model
switch replaces whole (app/sync/switch.py), so one request never embeds with one encoder
and searches another's vectors. Its `version` goes out on every answer and with every
impression. The old index is closed only once no request holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry

from app.api.admission import RetrievalGate
from app.api.conversation import ConversationCodec, conversation_secret
from app.api.processes import check_processes
from app.core.config import Settings
from app.embedding import Embedder
from app.embedding.onnx_query import query_encoder_for
from app.events.ids import RecommendationIds
from app.events.log import EventLog
from app.events.shipping import SegmentShipper, is_object_store, s3_client
from app.events.shop import ShopEvents
from app.learned import load_learned_model
from app.llm import Generator, OpenAIGenerator, build_generator
from app.llm.metrics import LLMStateCollector
from app.metrics import sync_registry
from app.query import QueryUnderstanding, build_query_understanding
from app.query.spelling import dictionary_words
from app.ranking import ranker_for
from app.retrieval import Retriever
from app.store import VectorStore
from app.sync.engine import SyncEngine
from app.sync.runner import SyncRunner
from app.sync.switch import ModelSwitch, open_indexes

logger = logging.getLogger(__name__)

# How long a switch waits for requests still searching the old index before closing it.
SWITCH_DRAIN_SECONDS = 60.0


class ServingIndex:
    """A retriever (the query encoder, the index it searches, the ranker) and its users.

    Args:
        retriever: searches `model`'s index with `model`'s query encoder; its `version`
            names the encoder and the ranking (`<model>|relevance` or `<model>|<learned>`).
        model: the encoder's id.
    """

    def __init__(self, retriever: Retriever, model: str) -> None:
        self.retriever = retriever
        self.model = model
        self.version = retriever.version
        self._users = 0
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def in_use(self) -> Iterator[Retriever]:
        """Count a user while inside (`Services.holding` is how a request takes it)."""
        with self._idle:
            self._users += 1
        try:
            yield self.retriever
        finally:
            with self._idle:
                self._users -= 1
                self._idle.notify_all()

    def wait_unused(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._users == 0, timeout)


@dataclass
class Services:
    settings: Settings
    # The serving index's parts (replaced by a model switch; requests use `index`).
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
    switch: ModelSwitch
    index: ServingIndex
    # The index being built, its retriever made ahead so the switch only swaps objects.
    upcoming: ServingIndex | None = field(default=None, repr=False)
    # LEARNED_MODEL's held-out verdict when it ranks below today's service (/sync/status).
    learned_warning: str | None = None

    @contextlib.contextmanager
    def holding(self) -> Iterator[ServingIndex]:
        """The serving index, held for one request: a switch closes it only after."""
        while True:
            index = self.index
            with index.in_use():
                # Held, then checked: a switch that replaced it in between waits for no one.
                if index is self.index:
                    yield index
                    return

    def adopt(self, engine: SyncEngine) -> None:
        """Serve `engine`'s index from now on (the switch's `on_switch`, in the sync thread):
        new requests get the new pair; returns once the old one has no request left."""
        new = self.upcoming
        if new is None or new.retriever.store is not engine.store:
            new = serving_index(self.settings, engine)
        old, self.upcoming = self.index, None
        self.index, self.retriever = new, new.retriever
        self.store, self.embedder, self.engine = engine.store, engine.embedder, engine
        for view in self.understanding.views():
            view.store = engine.store
        if not old.wait_unused(SWITCH_DRAIN_SECONDS):
            logger.warning(
                "requests still read the index of %s after %.0fs; closing it anyway",
                old.model,
                SWITCH_DRAIN_SECONDS,
            )

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
        await asyncio.to_thread(self.switch.close)


def serving_index(settings: Settings, engine: SyncEngine) -> ServingIndex:
    """The retriever of `engine`'s index, paired with the encoder its vectors came from
    and the ranker of the learned model that encoder belongs to (`engine.settings`: the
    serving index's own while another one is built).

    Raises:
        LearnedModelError: that learned model's ranker cannot be loaded.
    """
    learned = engine.settings.learned_model
    ranker = ranker_for(learned)
    ranking = load_learned_model(learned).model_id if ranker is not None else "relevance"
    model = engine.embedder.model_id
    retriever = Retriever(
        query_encoder_for(settings, engine.embedder),
        engine.store,
        settings,
        ranker=ranker,
        version=f"{model}|{ranking}",
    )
    return ServingIndex(retriever, model)


def build_services(settings: Settings) -> Services:
    """Open the store, load the model and build the engine (blocking; seconds).

    With LEARNED_MODEL naming another encoder than the serving index's, the serving index
    answers with its own encoder while the sync builds the new one's (app/sync/switch.py).

    Raises:
        ScaleOutError: WEB_CONCURRENCY > 1 where only one process can run.
        StoreError: the store cannot be opened (locked by another process, wrong dimension).
        LearnedModelError: LEARNED_MODEL is not a learned model folder, or its encoder or
            ranker cannot be loaded.
        ModelNotExportedError: no export of the model, and no torch to load it (the image).
    """
    check_processes(settings)
    warning = (
        load_learned_model(settings.learned_model).heldout_warning
        if settings.learned_model
        else None
    )
    if warning:
        logger.warning("LEARNED_MODEL=%s: %s", settings.learned_model, warning)
    # A replica (SYNC_MODE=off) serves what the syncer switched to; it builds nothing.
    switch = open_indexes(settings, build=settings.sync_mode == "embedded")
    try:
        engine = switch.serving
        store, embedder = engine.store, engine.embedder
        index = serving_index(settings, engine)
        building = switch.building
        upcoming = serving_index(settings, building) if building is not None else None
    except BaseException:
        switch.close()
        raise
    runner = (
        SyncRunner(switch, settings.sync_interval_seconds)
        if settings.sync_mode == "embedded"
        else None
    )
    generator = build_generator(settings)
    secret = conversation_secret(settings)
    registry = sync_registry(lambda: switch.serving)
    if isinstance(generator, OpenAIGenerator):
        registry.register(LLMStateCollector(generator))
    services = Services(
        settings=settings,
        store=store,
        embedder=embedder,
        engine=engine,
        retriever=index.retriever,
        understanding=build_query_understanding(
            settings, store, dictionary_words(embedder.tokenizer().get_vocab())
        ),
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
            record_impressions=settings.record_impressions,
        ),
        switch=switch,
        index=index,
        upcoming=upcoming,
        learned_warning=warning,
    )
    switch.on_switch = services.adopt
    return services


def _event_log(settings: Settings) -> EventLog | None:
    try:
        shipper = None
        folder = Path(settings.events_dir)
        if is_object_store(settings.events_dir):
            folder = Path(settings.events_spool_dir)
            folder.mkdir(parents=True, exist_ok=True)
            shipper = SegmentShipper(
                folder, settings.events_dir, s3_client(settings), settings.events_segment_seconds
            )
        return EventLog(
            folder,
            settings.events_flush_seconds,
            settings.events_segment_seconds,
            shipper,
        )
    except (OSError, ValueError) as e:
        # Answers must not depend on the events' disk: they go out, events are refused.
        logger.error("events are not recorded: EVENTS_DIR %s: %s", settings.events_dir, e)
        return None
