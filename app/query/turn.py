"""A conversation's turn: what it searches (`Turn`), what it hands the next turn
(`ConversationState`, made by `next_state` and carried in the answer's token,
app/api/conversation.py), and which of those filters the next turn keeps (`carried_filters`).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.words import split_words
from app.query.brands import MAX_BRANDS
from app.query.ordering import SearchOutcome
from app.query.plan import FilterPlan, narrows
from app.query.types import Constraint, ParsedQuery

# Products a follow-up can point at ("the second one") and price ("cheaper"): the first of
# those shown, in order. Also what keeps the state token small (app/api/conversation.py).
MAX_SHOWN = 20
# Products "show me more" keeps out, on a run of them: the newest this many.
MAX_SEEN = 60
# The carried search text grows with each "in black"; past this it stops growing.
MAX_SEARCH_TEXT = 300
# A carried filter's words are for the chip only: cut to this.
MAX_FILTER_TEXT = 60
PRICE_FIELDS = ("min_price", "max_price")
# Exclusions carried at most ("not over-ear", "no cord", ...): this turn's first, then the
# newest carried ones (the token has room for 16 filters in all: app/api/conversation.py).
MAX_EXCLUDED_WORDS = 4


@dataclass(frozen=True, slots=True)
class ShownProduct:
    """A product the turn showed, in order; `outside`: outside its price bounds."""

    id: int
    price: float | None
    outside: bool = False


@dataclass(frozen=True, slots=True)
class ConversationState:
    """What one turn understood, handed to the next one as its context.

    `filters`: those heard in words (this turn's or carried), never the request's own
    `filters` (the client owns those and sends them again). `like`: the product the turn
    searched by instead of a text. `seen`: on a run of "show me more", the products the
    turns before this one showed (the next "more" keeps them out too).
    """

    search_text: str
    filters: tuple[Constraint, ...] = ()
    shown: tuple[ShownProduct, ...] = ()
    like: int | None = None
    seen: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """A query read in its conversation: what to search and which filters come along."""

    parsed: ParsedQuery
    carried: tuple[Constraint, ...] = ()
    like: int | None = None
    follow_up: bool = False
    # A question about shown products ("is the second one waterproof?"): those products,
    # and the words asked about them (the conversation's search text stays `parsed`'s).
    about: tuple[int, ...] = ()
    asked: str = ""
    # "Which one …?": the products asked about, best answer to the question first (those
    # named by their place keep that order).
    about_ranked: bool = False
    # "Show me more": the products shown so far, kept out of this turn's search.
    excluded: tuple[int, ...] = ()


def carried_filters(previous: tuple[Constraint, ...], now: ParsedQuery) -> tuple[Constraint, ...]:
    """The last turn's filters this turn keeps: a new budget replaces the bounds (a bound
    on one side keeps the other side's when the two make a range: "over 30" after "under
    50", $30 to $50), a new category the category, wanted brands the wanted ones; an
    exclusion stays unless the brand is now wanted (and a brand now excluded is no longer
    wanted), or its words are now searched for ("not over-ear", then "over-ear ones after
    all"). A bound the new budget narrows on its side (a lower max, a higher min) comes
    along too: `plan_filters` keeps what it offers outside the new bound within it."""
    fields = {c.field for c in now.constraints}
    bounds: dict[str, str | float | None] = {
        c.field: float(c.value) for c in now.constraints if c.field in PRICE_FIELDS
    }
    named = {str(c.value) for c in now.constraints if c.field in ("brand", "exclude_brand")}
    searched = set(split_words(now.search_text))
    kept = []
    for c in previous:
        if c.field == "exclude_words" and set(split_words(str(c.value))) <= searched:
            continue
        if c.field in PRICE_FIELDS and fields & set(PRICE_FIELDS) and not _kept_beside(c, bounds):
            continue
        if c.field in ("category", "price_preference") and c.field in fields:
            continue
        if c.field == "brand" and ("brand" in fields or str(c.value) in named):
            continue
        if c.field == "exclude_brand" and str(c.value) in named:
            continue
        kept.append(c)
    return tuple(kept)


def _kept_beside(carried: Constraint, bounds: dict[str, str | float | None]) -> bool:
    """Whether `carried`, a price bound, comes along with the new `bounds`: it is narrowed
    on its side (`narrows`), or it makes a range with them."""
    return narrows(carried, bounds) or _makes_a_range(carried, bounds)


def _makes_a_range(carried: Constraint, bounds: dict[str, str | float | None]) -> bool:
    """Whether `carried`, a price bound, and the new `bounds` (none on its side) can both
    hold: "over 30" after "under 50" asks for $30 to $50; "over 100" after it, a new budget."""
    if carried.field not in PRICE_FIELDS or bounds.get(carried.field) is not None:
        return False
    was = float(carried.value)
    if carried.field == "max_price":
        low = bounds.get("min_price")
        return low is not None and float(low) <= was
    high = bounds.get("max_price")
    return high is not None and float(high) >= was


def next_state(
    turn: Turn,
    plan: FilterPlan,
    outcome: SearchOutcome,
    previous: ConversationState | None = None,
) -> ConversationState:
    """What this turn hands to the next one (`previous`: what the last turn handed to it)."""
    heard = [
        Constraint(f.field, f.value, (f.text or "")[:MAX_FILTER_TEXT])
        for f in plan.applied
        if f.source != "request"
    ]
    brands = [c for c in heard if c.field in ("brand", "exclude_brand")][:MAX_BRANDS]
    unwanted = [c for c in heard if c.field == "exclude_words"][:MAX_EXCLUDED_WORDS]
    others = [c for c in heard if c.field not in ("brand", "exclude_brand", "exclude_words")]
    # The budget a narrower one replaced holds as long as the narrower one is carried: after
    # "cheaper", "in green" offered a $380.99 tent as the nearest to a $200 budget.
    flt = plan.search_filter
    if flt.outer_min_price is not None:
        others.append(Constraint("min_price", flt.outer_min_price, ""))
    if flt.outer_max_price is not None:
        others.append(Constraint("max_price", flt.outer_max_price, ""))
    shown = tuple(
        ShownProduct(p.id, p.price, p.outside_filters) for p in outcome.offered[:MAX_SHOWN]
    )
    if previous is not None and turn.about and not turn.about_ranked:
        # Products named by their place ("is it heavy?"): the list stays the last one.
        # Handed on as the answer's one product, "the second one" next was a 422.
        shown = previous.shown
    return ConversationState(
        turn.parsed.search_text[:MAX_SEARCH_TEXT],
        (*others, *brands, *unwanted),
        shown,
        turn.like,
        turn.excluded,
    )


__all__ = [
    "MAX_SEARCH_TEXT",
    "MAX_SEEN",
    "MAX_SHOWN",
    "ConversationState",
    "ShownProduct",
    "Turn",
    "carried_filters",
    "next_state",
]
