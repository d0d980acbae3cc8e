"""What query understanding hands to retrieval: a search text plus the constraints it heard."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ConstraintField = Literal[
    "category", "min_price", "max_price", "price_preference", "popularity_preference"
]
CONSTRAINT_FIELDS: tuple[ConstraintField, ...] = (
    "category",
    "min_price",
    "max_price",
    "price_preference",
    "popularity_preference",
)
# What a filter applied can be: a constraint, a brand a follow-up named
# (app/query/followup.py), or what a negation rules out (app/query/negation.py).
FilterField = Literal[ConstraintField, "brand", "exclude_brand", "exclude_words"]
ParserName = Literal["offline", "llm"]


@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint heard in the query.

    `text` is the shopper's own words it came from ("under $100"), kept so the page can
    show what was understood; `currency` is the one they wrote, if any (amounts are
    compared as they are: the catalog's currency is assumed).
    """

    field: FilterField
    value: str | float
    text: str
    currency: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """The query split into what to search for and what to filter on."""

    query: str
    search_text: str
    constraints: tuple[Constraint, ...] = field(default_factory=tuple)
    parser: ParserName = "offline"

    def get(self, name: ConstraintField) -> Constraint | None:
        return next((c for c in self.constraints if c.field == name), None)
