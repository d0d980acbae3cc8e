"""Parsed constraints + the request's explicit filters → the search filter, and what to report.

Explicit filters win field by field: a form's max_price replaces a parsed one, a parsed
bound that contradicts an explicit one is dropped, and a field the shopper removed (a
chip taken off the page: `ignore_parsed`) is not parsed again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from app.query.types import Constraint, ConstraintField, ParsedQuery
from app.store import SearchFilter

logger = logging.getLogger(__name__)

FilterSource = Literal["query", "request"]


@dataclass(frozen=True, slots=True)
class AppliedFilter:
    """One filter the search used. `text`: the shopper's words it came from (query only)."""

    field: ConstraintField
    value: str | float
    source: FilterSource
    label: str
    text: str | None = None
    # Hard filters exclude; the soft price preference only reorders.
    hard: bool = True


@dataclass(frozen=True, slots=True)
class FilterPlan:
    search_filter: SearchFilter
    applied: tuple[AppliedFilter, ...]
    prefer_low_price: bool

    @property
    def has_price_bounds(self) -> bool:
        f = self.search_filter
        return f.min_price is not None or f.max_price is not None


def money(value: float, symbol: str) -> str:
    """$100, $24.50: whole amounts without cents."""
    return f"{symbol}{value:,.0f}" if value == int(value) else f"{symbol}{value:,.2f}"


def label(field: ConstraintField, value: str | float, symbol: str) -> str:
    if field == "min_price":
        return f"≥ {money(float(value), symbol)}"
    if field == "max_price":
        return f"≤ {money(float(value), symbol)}"
    if field == "price_preference":
        return "lower prices first"
    return str(value)


def plan_filters(
    parsed: ParsedQuery,
    explicit: SearchFilter | None,
    ignore_parsed: Collection[ConstraintField] = (),
    currency_symbol: str = "$",
) -> FilterPlan:
    """Args:
    parsed: what the query understanding heard.
    explicit: the request's `filters` (they win).
    ignore_parsed: fields the shopper removed from what was parsed.
    currency_symbol: the catalog's, for the labels.
    """
    given = explicit or SearchFilter()
    values: dict[str, str | float | None] = {
        "category": given.category,
        "min_price": given.min_price,
        "max_price": given.max_price,
    }
    explicit_values: tuple[tuple[ConstraintField, str | float | None], ...] = (
        ("category", given.category),
        ("min_price", given.min_price),
        ("max_price", given.max_price),
    )
    applied = [
        AppliedFilter(name, value, "request", label(name, value, currency_symbol))
        for name, value in explicit_values
        if value is not None
    ]
    prefer_low = False
    for c in parsed.constraints:
        if c.field in ignore_parsed or not _fits(c, values):
            continue
        if c.field == "price_preference":
            prefer_low = True
        else:
            values[c.field] = c.value
        applied.append(
            AppliedFilter(
                c.field,
                c.value,
                "query",
                label(c.field, c.value, currency_symbol),
                c.text,
                hard=c.field != "price_preference",
            )
        )
    flt = SearchFilter(
        category=_str(values["category"]),
        min_price=_float(values["min_price"]),
        max_price=_float(values["max_price"]),
    )
    return FilterPlan(flt, tuple(applied), prefer_low)


def _fits(c: Constraint, values: dict[str, str | float | None]) -> bool:
    """False when an explicit filter already decides this field or contradicts the bound."""
    if c.field == "price_preference":
        return True
    if values[c.field] is not None:
        return False
    low, high = values["min_price"], values["max_price"]
    if c.field == "min_price" and isinstance(high, float | int) and float(c.value) > high:
        logger.info("parsed %s contradicts the explicit max_price %s: dropped", c, high)
        return False
    if c.field == "max_price" and isinstance(low, float | int) and float(c.value) < low:
        logger.info("parsed %s contradicts the explicit min_price %s: dropped", c, low)
        return False
    return True


def _str(value: str | float | None) -> str | None:
    return None if value is None else str(value)


def _float(value: str | float | None) -> float | None:
    return None if value is None else float(value)
