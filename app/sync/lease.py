"""A lease in the Qdrant server, so that syncers on different hosts never write at once.

The per-host `flock` (lock.py) cannot see a syncer on another machine. Where the store is a
server (`QDRANT_URL`), a syncer also holds a lease before a cycle writes: one point in the
companion collection `<collection>__sync_lease` with `holder` (host:pid:random) and
`until` (epoch seconds). It is claimed by a *conditional* upsert (Qdrant's
`update_filter`): the write applies only when the stored holder is the claimant or `until`
has passed, and a missing point is simply inserted; the claimant then reads the point back
and holds the lease only if it names it. The server applies the updates of one point one
after another (one shard, WAL order), each checking its condition against what the one
before left, so of N claimants racing for a free lease exactly one condition holds.

The holder renews the lease each cycle and before each batch of a long one; a holder that
dies stops renewing, and after `SYNC_LEASE_SECONDS` the next claim takes over and resumes
from the checkpoint. Expiry is judged by the claimant's clock: clocks that differ by s
seconds shorten or lengthen a lease by s (NTP keeps that far below the lease length).
The lease point outlives a dropped products collection on purpose: it is about the
syncers, not the vectors. The embedded shard is single-process by itself and `:memory:`
is private, so neither needs one.
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
    """What the lease point says: who holds it and until when (epoch seconds)."""

    holder: str
    until: float

    @classmethod
    def from_payload(cls, raw: dict[str, Any] | None) -> LeaseState | None:
        if not raw or "holder" not in raw:
            return None
        return cls(holder=str(raw["holder"]), until=float(raw.get("until") or 0.0))

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{self.holder} until {when}"


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
        self, holder: str, until: float, now: float, *, release: bool = False
    ) -> dict[str, Any] | None:
        """Write {holder, until} if the stored lease is `holder`'s or ended before `now`;
        return what the store holds afterwards (read back)."""
        ...

    def read_lease(self) -> dict[str, Any] | None: ...


def new_holder_id() -> str:
    """host:pid:random, so a restarted process on the same host is another holder."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class SyncLease:
    """One syncer's side of the lease.

    Args:
        store: where the lease point lives.
        seconds: lease length; renewed once a third of it has passed.
        clock: epoch seconds (tests may pass another).
    """

    def __init__(
        self,
        store: LeaseStore,
        seconds: float,
        *,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.seconds = seconds
        self.holder = holder or new_holder_id()
        self._clock = clock
        self._claimed_at: float | None = None

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
        """Take or renew the lease.

        Raises:
            LeaseHeldError: another syncer holds it and it has not expired.
        """
        now = self._clock()
        state = LeaseState.from_payload(
            self.store.claim_lease(self.holder, now + self.seconds, now)
        )
        if state is None or state.holder != self.holder:
            self._claimed_at = None
            raise LeaseHeldError(state or LeaseState("?", now), now)
        if self._claimed_at is None:
            logger.info("sync lease taken: %s", state.describe())
        self._claimed_at = now
        return state

    def renew_if_due(self) -> None:
        """Renew once a third of the lease has passed (called before each batch).

        Raises:
            LeaseLostError: another syncer took it over meanwhile; stop writing.
        """
        if self._claimed_at is not None and self._clock() - self._claimed_at < self.seconds / 3:
            return
        self.confirm()

    def confirm(self) -> None:
        """Renew now, and fail if the lease is no longer this syncer's (before a checkpoint).

        Raises:
            LeaseLostError: another syncer holds it.
        """
        try:
            self.claim()
        except LeaseHeldError as e:
            raise LeaseLostError(f"sync lease lost mid-cycle: {e}") from e

    def release(self) -> None:
        """End the lease now (clean shutdown), so another syncer need not wait for expiry."""
        if self._claimed_at is None:
            return
        now = self._clock()
        self.store.claim_lease(self.holder, 0.0, now, release=True)
        self._claimed_at = None
        logger.info("sync lease released by %s", self.holder)
