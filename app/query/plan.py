"""Parsed constraints + the request's explicit filters → the search filter, and what to report.

Explicit filters win field by field: a form's max_price replaces a parsed one, a parsed
bound that contradicts an explicit one is dropped, and a field the shopper removed (a
chip taken off the page: `ignore_parsed`) is not parsed again. In a follow-up, what the
conversation carried comes last: this turn's words win over it the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from app.query.capacity import Room, RoomReader
from app.query.category import CategoryMatcher, Frequent
from app.query.phrasebook import load_phrasebook
from app.query.restriction import Readings, RestrictionReader
from app.query.types import Constraint, ConstraintField, FilterField, ParsedQuery
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

logger = logging.getLogger(__name__)
# Each shelf is a search per request ("best sellers" searched every category of the shop,
# 10,000 at most); a row shows one product of each, so a few more than a page holds.
MAX_SHELVES = 16

# query: heard in this turn's words; request: the request's `filters`; conversation:
# carried from the conversation's last turn (a follow-up refines it).
FilterSource = Literal["query", "request", "conversation"]


@dataclass(frozen=True, slots=True)
class AppliedFilter:
    """One filter the search used. `text`: the shopper's words it came from (query only)."""

    field: FilterField
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
    # "best sellers": among the relevant matches, what shoppers bought most comes first.
    prefer_popular: bool = False
    # The words name nothing but the category filtered on ("toys", "outdoor gear"): every
    # product in it is what was asked for (app.query.category, `browses`).
    browse: bool = False
    # "a tent for 4 people": products that say they hold fewer are not matches ("only 4
    # people": those that say they hold another number).
    room: Room | None = None
    # The words name no product ("best sellers", "under 50", "a gift"): the catalog's
    # categories, a few of each shown (app.query.search, `shop_shelves`); a gift for
    # someone ("gift ideas for my dad") only when a search by its meaning finds nothing close.
    shelves: tuple[str, ...] = ()
    shelves_first: bool = True
    # The words name no product (whether or not a category is set): no kind to judge.
    names_nothing: bool = False
    # "over ear headphones only": the relevant products whose names use those words (when
    # the best match's does: app/query/restriction.py).
    named: Readings = ()

    def with_room(self, products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
        """`products` without those that say they do not hold `room` (`RoomReader.holding`)."""
        return rooms().holding(products, self.room)

    def with_names(self, products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
        """`products` (best first) whose names use what "only" asked for, when the best
        one's does (`RestrictionReader.kept`)."""
        return restrictions().kept(products, self.named) if self.named else list(products)

    def lacks_room(self, products: Sequence[RetrievedProduct]) -> bool:
        """Whether the first of `products` (the best match) says it holds fewer than `room`
        and none says it holds enough ("a tent for 3 people" where the best match is a
        2-person tent: the 4-person tents are the matches, and nothing lacks room)."""
        if self.room is None or not products or self.with_room(products[:1]):
            return False
        return not self.any_says_room(products)

    def exact_room_first(self, products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
        """`products` that state exactly the room asked for first, the rest after, each in
        their order: "a 2 person tent" put a 4-person tent first (it holds two, but a tent
        for two was asked for)."""
        room = self.room
        if room is None:
            return list(products)
        exact = {
            p.id
            for p in products
            if rooms().stated(p.name, p.matched_content, room.unit) == room.count
        }
        return sorted(products, key=lambda p: p.id not in exact)

    def any_says_room(self, products: Sequence[RetrievedProduct]) -> bool:
        """Whether one of `products` says it holds `room` (or at least that many)."""
        room = self.room
        return room is not None and any(
            rooms().fits(p.name, room, p.matched_content) for p in products
        )

    def roomiest(self, products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
        """`products` with the most room first (as they were without a `room`)."""
        return list(products) if self.room is None else rooms().roomiest(products, self.room)

    @property
    def has_price_bounds(self) -> bool:
        f = self.search_filter
        return f.min_price is not None or f.max_price is not None


def money(value: float, symbol: str) -> str:
    """$100, $24.50: whole amounts without cents."""
    return f"{symbol}{value:,.0f}" if value == int(value) else f"{symbol}{value:,.2f}"


def label(field: FilterField, value: str | float, symbol: str) -> str:
    if field == "min_price":
        return f"≥ {money(float(value), symbol)}"
    if field == "max_price":
        return f"≤ {money(float(value), symbol)}"
    if field == "price_preference":
        return "lower prices first"
    if field == "popularity_preference":
        return "best sellers first"
    if field == "brand":
        return f"{value} only"
    if field in ("exclude_brand", "exclude_words"):
        return f"not {value}"
    return str(value)


def plan_filters(
    parsed: ParsedQuery,
    explicit: SearchFilter | None,
    ignore_parsed: Collection[FilterField] = (),
    currency_symbol: str = "$",
    carried: Sequence[Constraint] = (),
    categories: Collection[str] = (),
) -> FilterPlan:
    """Args:
    parsed: what the query understanding heard (a follow-up's own constraints included).
    explicit: the request's `filters` (they win).
    ignore_parsed: fields the shopper removed from what was heard (now or earlier).
    currency_symbol: the catalog's, for the labels.
    carried: what the conversation's last turn applied (app/query/turn.py); each one
        counts only where neither the request nor this query decides its field. A price
        bound that a narrower one replaced becomes an outer bound (`SearchFilter`'s
        `outer_*_price`): not applied, but nothing offered outside the new one passes it.
    categories: the catalog's; when the words name none of its products, the shelves.
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
    prefer_popular = False
    brands: dict[FilterSource, list[str]] = {}
    excluded: list[str] = []
    unwanted: list[str] = []
    heard: list[tuple[Constraint, FilterSource]] = [(c, "query") for c in parsed.constraints]
    heard += [(c, "conversation") for c in carried]
    outer: dict[str, float] = {}
    for c, source in heard:
        if c.field in ignore_parsed:
            continue
        if source == "conversation" and narrows(c, values):
            # "cheaper" after "under $200": the cap is lower, the budget said still holds
            # for what is offered outside it (never a $380 tent as the nearest match); of
            # several said before, the narrowest.
            tightest = min if c.field == "max_price" else max
            held = outer.get(c.field)
            outer[c.field] = float(c.value) if held is None else tightest(held, float(c.value))
        if not _fits(c, values):
            continue
        if c.field == "price_preference":
            if prefer_low:
                continue
            prefer_low = True
        elif c.field == "popularity_preference":
            if prefer_popular:
                continue
            prefer_popular = True
        elif c.field == "brand":
            # The newest words name the brands wanted: "only Nike" replaces "only Adidas".
            if any(s != source for s in brands) or str(c.value) in brands.get(source, []):
                continue
            brands.setdefault(source, []).append(str(c.value))
        elif c.field == "exclude_brand":
            if str(c.value) in excluded:
                continue
            excluded.append(str(c.value))
        elif c.field == "exclude_words":
            if str(c.value).lower() in (u.lower() for u in unwanted):
                continue
            unwanted.append(str(c.value))
        else:
            values[c.field] = c.value
        applied.append(
            AppliedFilter(
                c.field,
                c.value,
                source,
                label(c.field, c.value, currency_symbol),
                c.text,
                hard=c.field not in ("price_preference", "popularity_preference"),
            )
        )
    flt = SearchFilter(
        category=_str(values["category"]),
        min_price=_float(values["min_price"]),
        max_price=_float(values["max_price"]),
        brands=tuple(b for names in brands.values() for b in names),
        exclude_brands=tuple(excluded),
        exclude_words=tuple(unwanted),
        outer_min_price=outer.get("min_price"),
        outer_max_price=outer.get("max_price"),
    )
    words = _categories()
    said = [c.text for c, _ in heard]
    asked = words.asks_for(parsed.search_text, said)
    nothing = asked == "nothing"
    # "kitchen stuff" after "under 50": nothing named but the category, browsed.
    category = flt.category
    browse = words.browses(parsed.search_text, category) or (nothing and category is not None)
    room = rooms().asked(parsed.search_text)
    gift = asked == "a gift"
    on_shelves = (nothing or gift) and flt.category is None
    shelves = _largest(categories) if on_shelves else ()
    return FilterPlan(
        flt,
        tuple(applied),
        prefer_low,
        prefer_popular,
        browse,
        room,
        shelves=shelves,
        shelves_first=not gift,
        names_nothing=nothing,
        named=restrictions().asked(parsed.search_text),
    )


@lru_cache(maxsize=1)
def _categories() -> CategoryMatcher:
    return CategoryMatcher(load_phrasebook())


@lru_cache(maxsize=1)
def rooms() -> RoomReader:
    return RoomReader(load_phrasebook())


def _fits(c: Constraint, values: dict[str, str | float | None]) -> bool:
    """False when an explicit filter already decides this field or contradicts the bound."""
    if c.field in (
        "price_preference",
        "popularity_preference",
        "brand",
        "exclude_brand",
        "exclude_words",
    ):
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


def narrows(carried: Constraint, bounds: Mapping[str, str | float | None]) -> bool:
    """Whether `bounds` (price field -> value) hold a narrower bound on `carried`'s side:
    a lower max_price, a higher min_price."""
    now = bounds.get(carried.field)
    if carried.field not in ("min_price", "max_price") or now is None:
        return False
    was, now = float(carried.value), float(now)
    return was > now if carried.field == "max_price" else was < now


def _str(value: str | float | None) -> str | None:
    return None if value is None else str(value)


def _float(value: str | float | None) -> float | None:
    return None if value is None else float(value)


def _largest(categories: Collection[str]) -> tuple[str, ...]:
    """The shop's shelves: its MAX_SHELVES largest categories, in name order. Without their
    sizes (a plain collection), the first MAX_SHELVES by name."""
    largest = categories.most_first if isinstance(categories, Frequent) else sorted(categories)
    return tuple(sorted(largest[:MAX_SHELVES]))


@lru_cache(maxsize=1)
def restrictions() -> RestrictionReader:
    return RestrictionReader(load_phrasebook())
