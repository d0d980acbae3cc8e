"""A new encoder without a gap: build its index beside the serving one, verify, switch.

`open_indexes(settings)` opens the serving index (app/store/slots.py) with the encoder its
checkpoint was built with. When that is not the encoder the settings ask for (LEARNED_MODEL,
EMBEDDING_MODEL), it also opens the index of the wanted one beside it, and every sync cycle
then goes:

1. the serving index's own cycle, so the service keeps answering from a current catalog;
2. under the same hold (cycle lock, process lock, lease), a cycle of the next index: its
   first is a bootstrap from a hudi-rs snapshot, later ones resume from its checkpoint (a
   restart mid-build resumes the bootstrap: content keys skip what landed);
3. once: the mirror invariant of the next index against the snapshot at its checkpoint
   (0 missing, 0 stale, 0 extra, or the next cycle rebuilds it with a full one);
4. a catch-up cycle to the table's newest commit, then the switch: the process's readers
   first (`on_switch` swaps the query encoder and the index as one object and waits for
   requests still reading the old one), then the pointer (a restart from here on serves
   the new index; before it, the old one, and the build resumes), then the old index is
   dropped.

Nothing serves the next index before step 4, so no answer mixes two encoders' vectors.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from app.core.config import Settings
from app.core.errors import RecommenderError
from app.embedding import Embedder
from app.embedding.learned import wanted_embedder
from app.store import VectorStore, open_store
from app.store.slots import IndexSlots
from app.sync.engine import CycleCancelledError, SyncEngine
from app.sync.lease import LeaseHeldError, LeaseLostError, LeaseStore
from app.sync.lock import SyncBusyError
from app.sync.state import CycleReport, SyncCheckpoint
from app.sync.verify import mirror_verify

logger = logging.getLogger(__name__)

BuildPhase = Literal["bootstrap", "verify", "catch-up", "switch"]
# Failures that end the whole cycle (shutdown, another syncer's turn), not just the build.
_NOT_THE_BUILDS = (CycleCancelledError, LeaseLostError, LeaseHeldError, SyncBusyError)


@dataclass
class BuildStatus:
    """How far the next encoder's index is (GET /sync/status, `model.next`)."""

    model: str
    index: str
    phase: BuildPhase = "bootstrap"
    products_done: int = 0
    products_total: int | None = None
    started_at: float = field(default_factory=time.time)
    verified: dict[str, int] | None = None  # missing / stale / extra at the verified checkpoint
    last_error: str | None = None


@dataclass
class SwitchRecord:
    """The last switch this process made."""

    from_model: str
    to_model: str
    index: str
    at: float


class ModelSwitch:
    """The serving index's engine, and the engine building the next one (if any).

    Args:
        slots: the store's serving pointer.
        serving: the engine of the serving index.
        building: the engine of the wanted encoder's index, built beside (`beside=serving`).
        on_switch: called with the new serving engine right after the pointer moved; it
            returns once no reader uses the old index (the API's retriever swap).
    """

    def __init__(
        self,
        slots: IndexSlots | None,
        serving: SyncEngine,
        building: SyncEngine | None = None,
        *,
        serving_index: str = "",
        building_index: str = "",
        on_switch: Callable[[SyncEngine], None] | None = None,
    ) -> None:
        self.slots = slots
        self.serving = serving
        self.building = building
        self.serving_index = serving_index
        self.building_index = building_index
        self.on_switch = on_switch
        self.build: BuildStatus | None = (
            BuildStatus(building.embedder.model_id, building_index) if building else None
        )
        self.last_switch: SwitchRecord | None = None
        self._verified = False
        self._rebuild = False

    @classmethod
    def single(cls, engine: SyncEngine) -> ModelSwitch:
        """An engine with no switch to make (tests, a store opened by hand)."""
        return cls(None, engine)

    @property
    def serving_model(self) -> str:
        return self.serving.embedder.model_id

    def run_cycle(self, *, full: bool = False, wait: bool = True) -> CycleReport:
        """The serving index's cycle, then a step of the next index's build (if any).

        Raises what `SyncEngine.run_cycle` raises; a failed build step is kept in
        `build.last_error` and retried next cycle, the serving index unaffected.
        """
        step = self._build_step if self.building is not None else None
        return self.serving.run_cycle(full=full, wait=wait, then=step)

    def request_stop(self) -> None:
        self.serving.request_stop()  # the stop flag is shared with the building engine

    def progress(self) -> BuildStatus | None:
        """The build's status, with the running bootstrap's products counted."""
        build, engine = self.build, self.building
        if build is not None and engine is not None and engine.progress is not None:
            build.products_done = engine.progress.done
            build.products_total = engine.progress.total
        return build

    def _build_step(self) -> None:
        engine, build = self.building, self.build
        assert engine is not None and build is not None
        try:
            if not self._verified:
                build.phase = "bootstrap"
                engine.run_held(full=self._rebuild)
                build.phase = "verify"
                mirror = mirror_verify(engine.settings, engine.store, engine.chunker)
                build.verified = {
                    "missing": mirror.missing,
                    "stale": mirror.stale,
                    "extra": mirror.extra,
                }
                if not mirror.ok:
                    self._rebuild = True
                    raise SwitchVerifyError(
                        f"index of {build.model} is not a mirror at {mirror.checkpoint}: "
                        f"missing {mirror.missing}, stale {mirror.stale}, extra "
                        f"{mirror.extra}; rebuilding it with a full cycle"
                    )
                logger.info(
                    "index of %s verified at %s: %d products, %d chunks, 0/0/0",
                    build.model,
                    mirror.checkpoint,
                    mirror.products,
                    mirror.stored_chunks,
                )
                self._verified, self._rebuild = True, False
            build.phase = "catch-up"
            engine.run_held()
            build.phase = "switch"
            self._switch(engine)
        except _NOT_THE_BUILDS:
            raise
        except Exception as e:
            build.last_error = f"{type(e).__name__}: {e}"
            logger.warning("building the index of %s: %s", build.model, build.last_error)

    def _switch(self, engine: SyncEngine) -> None:
        """Readers first, then the pointer, then the old index: a server's first switch
        drops the old collection in `promote`, so this process must have left it by then.
        A crash before `promote` restarts on the old index, and resumes the new one's build."""
        old, old_index = self.serving, self.serving_index
        if engine.lease is not None and isinstance(engine.store, LeaseStore):
            engine.lease.move_to(engine.store)  # the old store is closed below
        self.serving, self.serving_index = engine, self.building_index
        self.building, self.build = None, None
        self.last_switch = SwitchRecord(
            old.embedder.model_id, engine.embedder.model_id, self.serving_index, time.time()
        )
        if self.on_switch is not None:
            self.on_switch(engine)
        if self.slots is not None:
            self.slots.promote(self.serving_index)
        logger.info(
            "switched: %s now serves (%s), was %s",
            engine.embedder.model_id,
            self.serving_index,
            old.embedder.model_id,
        )
        old.store.close()
        if self.slots is not None:
            self.slots.drop(old_index)
            for leftover in self.slots.leftovers(keep={self.serving_index}):
                self.slots.drop(leftover)

    def close(self) -> None:
        """Close both indexes; a lease held here ends now (the next syncer need not wait)."""
        lease = self.serving.lease
        if lease is not None:
            with contextlib.suppress(RecommenderError):
                lease.release()
        for engine in (self.building, self.serving):
            if engine is not None:
                engine.store.close()
        if self.slots is not None:
            self.slots.close()


class SwitchVerifyError(RecommenderError):
    """The next index failed its mirror check: it is rebuilt, never switched to."""


def open_indexes(
    settings: Settings,
    *,
    build: bool = True,
    load: Callable[[Settings], Embedder] = wanted_embedder,
) -> ModelSwitch:
    """Open the serving index with its own encoder, and the wanted encoder's beside it
    when they differ (see the module docstring); `build=False` opens the serving one only
    (an API replica: the syncer builds).

    Raises:
        StoreError: a store or the pointer cannot be opened.
        LearnedModelError: LEARNED_MODEL is not a learned model folder.
    """
    slots = IndexSlots(settings)
    opened: list[VectorStore] = []
    try:
        wanted = load(settings)
        where = slots.serving(next_model=wanted.model_id)
        store = open_store(settings, where)
        opened.append(store)
        cp = SyncCheckpoint.from_dict(store.load_state())
        if cp is None or cp.model == wanted.model_id:
            if build:
                _drop_leftovers(slots, keep={where})
            engine = SyncEngine(settings, store, wanted)
            return ModelSwitch(slots, engine, serving_index=where)
        # The index serves another encoder's vectors: keep answering with that encoder
        # (a checkpoint from before the encoder was recorded names none: the packaged one).
        own = settings.model_copy(
            update={"embedding_model": cp.embedding_model, "learned_model": cp.learned_model}
        )
        serving = SyncEngine(own, store, load(own))
        if serving.embedder.model_id != cp.model:
            logger.warning(
                "the serving index holds %s vectors but its recorded encoder loads as %s",
                cp.model,
                serving.embedder.model_id,
            )
        if not build:
            return ModelSwitch(slots, serving, serving_index=where)
        beside = slots.beside(wanted.model_id)
        _drop_leftovers(slots, keep={where, beside})
        next_store = open_store(settings, beside)
        opened.append(next_store)
        building = SyncEngine(settings, next_store, wanted, beside=serving)
        logger.info(
            "index of %s (%s) serves; building the index of %s beside it (%s)",
            cp.model,
            slots.describe(where),
            wanted.model_id,
            slots.describe(beside),
        )
        return ModelSwitch(slots, serving, building, serving_index=where, building_index=beside)
    except BaseException:
        for s in opened:
            s.close()
        slots.close()
        raise


def _drop_leftovers(slots: IndexSlots, keep: set[str]) -> None:
    """Drop edge shards no switch will serve (a build given up, a drop a crash cut short).
    Only the edge, at start: its serving shard is open here, so no other process runs.
    A server's leftovers are dropped by the next switch, under the lease."""
    if slots.kind == "edge":
        for leftover in slots.leftovers(keep=keep):
            slots.drop(leftover)
