"""A fenced lease in the Qdrant server, so that syncers on different hosts never write at once.

The per-host `flock` (lock.py) cannot see a syncer on another machine. Where the store is a
server (`QDRANT_URL`), a syncer also holds a lease before a cycle writes: one point in the
companion collection `<collection>__sync_lease` with `holder` (host:pid:random), `until`
(epoch seconds) and `epoch`, the fencing token. It is claimed by a *conditional* upsert
(Qdrant's `update_filter`): the write applies only when the stored point is the claimant's
(a renewal keeps its epoch) or has expired *and* still carries the epoch the claimant read
(a takeover writes that epoch + 1); a missing point is inserted at epoch 1. The claimant
then reads the point back and holds the lease only if it names it. The server applies the
updates of one point one after another (one shard, WAL order), each checking its condition
against what the one before left, so of N claimants racing for a free lease exactly one
condition holds, and no two takeovers ever write the same epoch.

The fence: with `QDRANT_API_KEY` (and a server run with `QDRANT__SERVICE__JWT_RBAC=true`)
every write of a cycle is sent under a JWT whose `value_exists` claim names the lease point
as this holder at this epoch (app/store/fence.py). The server checks that claim against the
lease point on every request, so once another syncer took over, a stalled holder's late
batch, delete or checkpoint is refused by the server, however long the pause was (a SIGSTOP,
a GC pause, a request stuck in the network). What the engine cannot give is a transaction
across points: a write the server admitted a moment before the takeover landed still
applies (a window of the server's own request handling, not of the client's pause). Without
an API key the fence is the syncer's own check before each batch and before the checkpoint:
a pause between that check and the write lets one late write land (logged at start-up).

The holder renews the lease each cycle and before each batch of a long one, timed on the
monotonic clock (a wall-clock step neither skips nor forces a renewal); a holder that dies
stops renewing, and after `SYNC_LEASE_SECONDS` the next claim takes over and resumes from
the checkpoint. Expiry is judged by the claimant's wall clock: clocks that differ by s
seconds shorten or lengthen a lease by s (NTP keeps that far below the lease length); the
fence, not the clocks, is what keeps a late holder from writing. The lease point outlives a
dropped products collection on purpose: it is about the syncers, not the vectors. The
embedded shard is single-process by itself and `:memory:` is private, so neither needs one.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from app.core.config import Settings
from app.core.errors import RecommenderError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseState:
    """What the lease point says: who holds it, until when (epoch seconds), at which epoch."""

    holder: str
    until: float
    epoch: int = 0

    @classmethod
    def from_payload(cls, raw: dict[str, Any] | None) -> LeaseState | None:
        if not raw or "holder" not in raw:
            return None
        return cls(
            holder=str(raw["holder"]),
            until=float(raw.get("until") or 0.0),
            epoch=int(raw.get("epoch") or 0),
        )

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{self.holder} until {when} (epoch {self.epoch})"


class LeaseHeldError(RecommenderError):
    """Another syncer holds the lease: this one does not write until it expires."""

    def __init__(self, state: LeaseState, now: float) -> None:
        self.state = state
        self.retry_in = max(0.0, state.until - now)
        super().__init__(f"sync lease held by {state.describe()} ({self.retry_in:.0f}s left)")


class LeaseLostError(RecommenderError):
    """The lease passed to another syncer during a cycle (it ran past its expiry)."""


@runtime_checkable
class LeaseStore(Protocol):
    """A store that can keep the lease (app/store/qdrant_client_store.py)."""

    def claim_lease(
        self, holder: str, until: float, now: float, *, epoch: int, seen: int
    ) -> dict[str, Any] | None:
        """Write {holder, until, epoch} if the stored lease is `holder`'s at `epoch`, or
        ended before `now` while at epoch `seen` (0: no point yet); return what the store
        holds afterwards (read back)."""
        ...

    def release_lease(self, holder: str, epoch: int) -> None:
        """End the lease now (until 0) if it is still `holder`'s at `epoch`."""
        ...

    def read_lease(self) -> dict[str, Any] | None: ...

    def fence(self, holder: str, epoch: int) -> bool:
        """Send every later write under this holder and epoch, checked by the server
        against the lease point; False when the server cannot check it (no API key)."""
        ...


def new_holder_id() -> str:
    """host:pid:random, so a restarted process on the same host is another holder."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class SyncLease:
    """One syncer's side of the lease.

    Args:
        store: where the lease point lives.
        seconds: lease length; renewed once a third of it has passed.
        clock: epoch seconds, for the `until` other hosts compare with (tests may pass another).
        monotonic: seconds on a clock that never steps, for when to renew.
    """

    def __init__(
        self,
        store: LeaseStore,
        seconds: float,
        *,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.seconds = seconds
        self.holder = holder or new_holder_id()
        self._clock = clock
        self._monotonic = monotonic
        self._claimed_at: float | None = None  # monotonic
        self.epoch = 0  # the epoch this syncer holds (0: none yet)
        self.fenced = False

    @classmethod
    def for_settings(cls, settings: Settings, store: object) -> SyncLease | None:
        """A lease when the store is a server other hosts may share; None otherwise."""
        if not settings.qdrant_url or not isinstance(store, LeaseStore):
            return None
        return cls(store, settings.sync_lease_seconds)

    def current(self) -> LeaseState | None:
        """The lease as stored (None when nobody claimed it yet)."""
        return LeaseState.from_payload(self.store.read_lease())

    def claim(self) -> LeaseState:
        """Take or renew the lease; a takeover moves the epoch on and fences the writes.

        Raises:
            LeaseHeldError: another syncer holds it and it has not expired.
        """
        now, started = self._clock(), self._monotonic()
        seen = self.current()
        mine = seen is not None and seen.holder == self.holder and seen.epoch == self.epoch > 0
        epoch = self.epoch if mine else (seen.epoch if seen else 0) + 1
        state = LeaseState.from_payload(
            self.store.claim_lease(
                self.holder, now + self.seconds, now, epoch=epoch, seen=seen.epoch if seen else 0
            )
        )
        if state is None or state.holder != self.holder or state.epoch != epoch:
            self._claimed_at = None
            raise LeaseHeldError(state or LeaseState("?", now), now)
        if state.epoch != self.epoch:
            self.epoch = state.epoch
            self.fenced = self.store.fence(self.holder, self.epoch)
            logger.log(
                logging.INFO if self.fenced else logging.WARNING,
                "sync lease taken: %s, writes %s",
                state.describe(),
                "fenced by the server"
                if self.fenced
                else "not fenced by the server (no QDRANT_API_KEY or SYNC_LEASE_FENCE=false): "
                "a write sent during a pause past the expiry can land after a takeover",
            )
        self._claimed_at = started
        return state

    def renew_if_due(self) -> None:
        """Renew once a third of the lease has passed (called before each batch).

        Raises:
            LeaseLostError: another syncer took it over meanwhile; stop writing.
        """
        if self._claimed_at is not None and self._monotonic() - self._claimed_at < self.seconds / 3:
            return
        self.confirm()

    def confirm(self) -> None:
        """Renew now, and fail if the lease is no longer this syncer's (before a checkpoint).

        Raises:
            LeaseLostError: another syncer holds it.
        """
        held = self.epoch
        try:
            self.claim()
        except LeaseHeldError as e:
            raise LeaseLostError(f"sync lease lost mid-cycle: {e}") from e
        if self.epoch != held:
            # Lost and taken again between two batches: another syncer may have written.
            raise LeaseLostError(
                f"sync lease passed through another epoch ({held} -> {self.epoch})"
            )

    def release(self) -> None:
        """End the lease now (clean shutdown), so another syncer need not wait for expiry."""
        if self._claimed_at is None:
            return
        self.store.release_lease(self.holder, self.epoch)
        self._claimed_at = None
        logger.info("sync lease released by %s", self.holder)
