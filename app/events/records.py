"""One event as a JSON line: what a segment holds and `spark_jobs.ingest_events` reads.

Nested parts (the products shown, the filters applied) travel as JSON text, so the
`interactions` table keeps one flat schema however the response shape grows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import asdict, dataclass
from typing import Literal

EventType = Literal["impression", "click", "add_to_cart", "purchase"]
# (column, Spark SQL type) of the interactions table, in order; `day` is the partition.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("event_id", "STRING"),
    ("type", "STRING"),
    ("ts", "BIGINT"),
    ("recommendation_id", "STRING"),
    ("product_id", "BIGINT"),
    ("session", "STRING"),
    ("query", "STRING"),
    ("search_text", "STRING"),
    ("filters", "STRING"),
    ("products", "STRING"),
    ("shown", "INT"),
    ("ranking", "STRING"),
    ("conversation", "STRING"),
    ("follows", "STRING"),
    ("source", "STRING"),
)


@dataclass(frozen=True, slots=True)
class Interaction:
    event_id: str
    type: EventType
    ts: int  # epoch millis when the service received or served it
    recommendation_id: str | None = None
    product_id: int | None = None
    session: str | None = None  # hashed: the shopper's token never reaches the table
    query: str | None = None
    search_text: str | None = None
    filters: str | None = None  # JSON list of {field, value, source}
    products: str | None = None  # JSON list of {id, position, score}, position from 1
    shown: int | None = None  # products shown; 0 is a query with no match
    ranking: str | None = None  # the ranking's version (model and fusion)
    conversation: str | None = None  # a digest of the conversation token this turn issued
    follows: str | None = None  # ... and of the one it was a follow-up of
    source: str | None = None  # host:pid of the process that wrote it

    def to_line(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def hash_token(secret: bytes, token: str) -> str:
    """A shopper's session token as stored: keyed, so the table cannot be reversed into
    tokens, and stable across replicas (same secret), so a session's events join."""
    return hmac.new(secret, b"session\x00" + token.encode(), hashlib.sha256).hexdigest()[:32]


def digest(text: str) -> str:
    """A short stable id for an opaque token (the conversation chain's links)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]
