"""What shoppers did, at a glance: read from the interactions table with hudi-rs (no JVM).

Over the last `days` partitions: top queries with their click-through, queries that found
nothing, click-through by position, purchases per query. A click or purchase is credited
to the query of the answer it names (its `recommendation_id`) and, for click-through by
position, to the position the product had in that answer.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder

from app.core.config import Settings
from app.core.errors import RecommenderError
from app.sync.hudi_source import storage_options

_COLUMNS = ["type", "recommendation_id", "product_id", "query", "products", "shown"]


class AnalyticsError(RecommenderError):
    """The interactions table could not be read."""


@dataclass(frozen=True, slots=True)
class QueryStats:
    query: str
    answers: int
    clicks: int
    purchases: int

    @property
    def ctr(self) -> float:
        return self.clicks / self.answers if self.answers else 0.0


@dataclass(frozen=True, slots=True)
class PositionStats:
    position: int
    impressions: int
    clicks: int

    @property
    def ctr(self) -> float:
        return self.clicks / self.impressions if self.impressions else 0.0


@dataclass(slots=True)
class Analytics:
    days: int
    answers: int = 0
    clicks: int = 0
    add_to_carts: int = 0
    purchases: int = 0
    top_queries: list[QueryStats] = field(default_factory=list)
    no_match_queries: list[tuple[str, int]] = field(default_factory=list)
    ctr_by_position: list[PositionStats] = field(default_factory=list)
    purchases_by_query: list[tuple[str, int]] = field(default_factory=list)


def read_interactions(settings: Settings, days: int, *, now: float | None = None) -> pa.Table:
    """The interactions of the last `days` UTC days (today included); empty if no table."""
    path = settings.interactions_table_path
    if "://" not in path and not (Path(path) / ".hoodie").is_dir():
        return pa.table({c: pa.array([], pa.string()) for c in _COLUMNS})
    since = time.strftime("%Y-%m-%d", time.gmtime((now or time.time()) - (days - 1) * 86_400))
    try:
        table = (
            HudiTableBuilder.from_base_uri(path)
            .with_storage_options(storage_options(settings))
            .build()
        )
        options = HudiReadOptions().with_filters([("day", ">=", since)]).with_projection(_COLUMNS)
        batches = table.read(options)
    except Exception as e:  # hudi-rs raises plain exceptions for every storage failure
        raise AnalyticsError(f"interactions table {path}: {e}") from e
    if not batches:
        return pa.table({c: pa.array([], pa.string()) for c in _COLUMNS})
    return pa.Table.from_batches(batches)


def summarize(rows: pa.Table, days: int, top: int = 20) -> Analytics:
    """The figures of GET /analytics from the window's rows."""
    out = Analytics(days=days)
    answers: dict[str, tuple[str, dict[int, int]]] = {}  # rid -> (query, product -> position)
    asked: Counter[str] = Counter()
    empty: Counter[str] = Counter()
    seen_at: Counter[int] = Counter()
    acted: list[dict[str, Any]] = []
    for r in rows.to_pylist():
        kind = r["type"]
        if kind == "impression":
            query = (r["query"] or "").strip().lower()
            positions = {
                int(p["id"]): int(p["position"]) for p in json.loads(r["products"] or "[]")
            }
            answers[r["recommendation_id"]] = (query, positions)
            asked[query] += 1
            if not r["shown"]:
                empty[query] += 1
            seen_at.update(positions.values())
        elif kind in ("click", "add_to_cart", "purchase"):
            acted.append(r)
    clicks: Counter[str] = Counter()
    bought: Counter[str] = Counter()
    clicked_at: Counter[int] = Counter()
    for r in acted:
        kind = r["type"]
        out.clicks += kind == "click"
        out.add_to_carts += kind == "add_to_cart"
        out.purchases += kind == "purchase"
        answer = answers.get(r["recommendation_id"] or "")
        if answer is None:
            continue  # a sale fed back without an answer, or one from before the window
        query, positions = answer
        if kind == "click":
            clicks[query] += 1
            position = positions.get(int(r["product_id"]))
            if position is not None:
                clicked_at[position] += 1
        elif kind == "purchase":
            bought[query] += 1
    out.answers = sum(asked.values())
    out.top_queries = [QueryStats(q, n, clicks[q], bought[q]) for q, n in asked.most_common(top)]
    out.no_match_queries = empty.most_common(top)
    out.ctr_by_position = [
        PositionStats(p, seen_at[p], clicked_at[p]) for p in sorted(seen_at) if p <= 20
    ]
    out.purchases_by_query = bought.most_common(top)
    return out
