"""The service's side of shoppers' events: minting ids, recording impressions, accepting
POST /events (validation beyond the request schema, server-assigned ids and times)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core.errors import TerminalError
from app.events.ids import RecommendationIds
from app.events.log import EventLog
from app.events.records import EventType, Interaction, digest, hash_token


class BadEventsError(TerminalError):
    """Events of a request that cannot be accepted; `problems` names each by index."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"events.{i}: {reason}" for i, reason in problems))


@dataclass(frozen=True, slots=True)
class ShopperEvent:
    """One event as the HTTP layer validated it."""

    type: EventType
    product_id: int
    recommendation_id: str | None = None
    event_id: str | None = None
    session: str | None = None


@dataclass(frozen=True, slots=True)
class Shown:
    """A product as an answer showed it."""

    id: int
    score: float


@dataclass
class ShopEvents:
    """Args:
    log: the process's event log; None when EVENTS_DIR cannot be written (events refused,
        answers unaffected).
    ids: mints and checks recommendation ids.
    secret: keys the hash of shoppers' session tokens.
    ranking_version: recorded with each impression (which model and fusion ranked it).
    record_impressions: RECORD_IMPRESSIONS.
    """

    log: EventLog | None
    ids: RecommendationIds
    secret: bytes
    ranking_version: str
    record_impressions: bool = True

    def impression(
        self,
        *,
        query: str,
        search_text: str,
        filters: Sequence[dict[str, Any]],
        shown: Sequence[Shown],
        conversation: str,
        follows: str | None,
    ) -> str:
        """Mint the answer's recommendation_id and queue its impression (never blocks)."""
        rid = self.ids.mint()
        if self.log is None or not self.record_impressions:
            return rid
        products = [{"id": p.id, "position": i, "score": p.score} for i, p in enumerate(shown, 1)]
        self.log.record(
            [
                Interaction(
                    event_id=rid,
                    type="impression",
                    ts=time.time_ns() // 1_000_000,
                    recommendation_id=rid,
                    query=query,
                    search_text=search_text,
                    filters=_json(list(filters)),
                    products=_json(products),
                    shown=len(shown),
                    ranking=self.ranking_version,
                    conversation=digest(conversation),
                    follows=digest(follows) if follows else None,
                    source=self.log.source,
                )
            ]
        )
        return rid

    def accept(self, events: Sequence[ShopperEvent]) -> list[Interaction]:
        """The records to store for a request's events, all or none.

        Raises:
            BadEventsError: naming every event that cannot be accepted.
        """
        problems: list[tuple[int, str]] = []
        for i, e in enumerate(events):
            if e.recommendation_id is not None:
                reason = self.ids.check(e.recommendation_id)
                if reason is not None:
                    problems.append((i, f"recommendation_id: {reason}"))
        if problems:
            raise BadEventsError(problems)
        now = time.time_ns() // 1_000_000
        source = self.log.source if self.log is not None else None
        return [
            Interaction(
                # Namespaced: a client's id can never name an impression or a minted id.
                event_id=f"c:{e.event_id}" if e.event_id else f"e:{uuid.uuid4().hex}",
                type=e.type,
                ts=now,
                recommendation_id=e.recommendation_id,
                product_id=e.product_id,
                session=hash_token(self.secret, e.session) if e.session else None,
                source=source,
            )
            for e in events
        ]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
