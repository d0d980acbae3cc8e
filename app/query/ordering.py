"""What a search under a filter plan returns (`SearchOutcome`) and how it orders products:
the relevance margin, the popularity prior, price nudges, the cost of being outside the
price bounds; and the `Query` a search sends (app/query/search.py runs the searches,
app/query/shelves.py the shop's shelves).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from app.query.capacity import Room
from app.query.phrasebook import alternation, load_phrasebook
from app.retrieval import Query
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

# Candidates per wanted product when re-ordering (soft price preference, nearest matches).
CANDIDATE_FACTOR = 3
# Relevance given up per e-fold of price under "cheap": a product at a third of the price
# may be ~0.27 less relevant and still rank first (relevance spans ~0.4 more than cosine
# alone: FUSION_LEXICAL_WEIGHT).
PRICE_WEIGHT = 0.25
# Only products this close to the best match compete on price; the rest keep their
# places after them, so a cheap unrelated product is never lifted over relevant ones.
PRICE_COMPETITION_MARGIN = 0.25


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """`products`: the matches, best first. When none fits the hard price bounds they are
    the nearest matches outside them instead (`nearest`); when some but fewer than asked
    for fit, `closest_outside` holds the closest relevant products outside the bounds,
    offered as such and never as matches. Products outside are flagged `outside_filters`.
    `no_close_match`: even the best scored below the retriever's `close_match_score`: the
    catalog has nothing close to the request, and these are the nearest it has.
    `not_carried`: the kind of product asked for, when no product is called that
    (app/query/kind.py): these are the closest the shop has, unless the query also named
    a kind it carries (`carried_besides`: "a kettle and a toaster"), whose matches they
    are. `no_room`: the room asked
    for, when nothing has it ("a tent for 8 people"): these have the most. `shelves`: the
    words named no product (or a gift for someone, and nothing was close): these are a few
    of each category (`shop_shelves`)."""

    products: list[RetrievedProduct]
    nearest: bool = False
    closest_outside: list[RetrievedProduct] = field(default_factory=list)
    no_close_match: bool = False
    not_carried: str | None = None
    carried_besides: bool = False
    no_room: Room | None = None
    shelves: bool = False

    @property
    def offered(self) -> list[RetrievedProduct]:
        """Everything the answer may mention: the products, then the closest outside."""
        return [*self.products, *self.closest_outside]


def within_margin(
    products: Sequence[RetrievedProduct], best: float, margin: float
) -> list[RetrievedProduct]:
    """The products scoring at most `margin` below `best`: a shop assistant's "these fit"."""
    return [p for p in products if p.score >= best - margin]


def with_popularity_prior(
    products: Sequence[RetrievedProduct], weight: float
) -> list[RetrievedProduct]:
    """Re-order by relevance + `weight` x popularity (in [0, 1)): a product shoppers buy can
    pass one at most `weight` more relevant, never a clearly better match."""
    if weight <= 0:
        return list(products)
    return sorted(products, key=lambda p: p.score + weight * p.popularity, reverse=True)


def by_popularity(products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
    """ "Best sellers": the products near the best match, most popular first (relevance
    breaks ties); the others follow in their order."""
    near, rest = _near_best(products)
    return sorted(near, key=lambda p: (p.popularity, p.score), reverse=True) + rest


def nudge_by_cost(
    products: Sequence[RetrievedProduct], cost: Callable[[RetrievedProduct], float | None]
) -> list[RetrievedProduct]:
    """Re-order the products near the best match by relevance minus PRICE_WEIGHT × cost
    (unknown cost: the highest seen); the others follow in their order."""
    near, rest = _near_best(products)
    known = [c for c in map(cost, near) if c is not None]
    worst = max(known, default=0.0)

    def adjusted(p: RetrievedProduct) -> float:
        c = cost(p)
        return p.score - PRICE_WEIGHT * (worst if c is None else c)

    return sorted(near, key=adjusted, reverse=True) + rest


def _near_best(
    products: Sequence[RetrievedProduct],
) -> tuple[list[RetrievedProduct], list[RetrievedProduct]]:
    """The products within PRICE_COMPETITION_MARGIN of the best score, and the others, each
    in their order."""
    best = max((p.score for p in products), default=0.0)
    near = [p for p in products if p.score >= best - PRICE_COMPETITION_MARGIN]
    return near, [p for p in products if p.score < best - PRICE_COMPETITION_MARGIN]


def log_price(p: RetrievedProduct) -> float | None:
    # Log: what matters is "a third of the price", not "$40 less".
    return math.log(max(p.price, 0.01)) if p.price is not None else None


def log_outside(flt: SearchFilter) -> Callable[[RetrievedProduct], float | None]:
    """How far outside the price bounds a product is, relative to the bound."""

    def cost(p: RetrievedProduct) -> float | None:
        if p.price is None:
            return None
        if flt.max_price is not None and p.price > flt.max_price:
            return math.log1p((p.price - flt.max_price) / max(flt.max_price, 1.0))
        if flt.min_price is not None and p.price < flt.min_price:
            return math.log1p((flt.min_price - p.price) / max(p.price, 1.0))
        return 0.0

    return cost


@lru_cache(maxsize=1)
def _unsearched() -> re.Pattern[str]:
    words = alternation(load_phrasebook().unsearched_words)
    return re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.I)


def lexical_text(text: str) -> str:
    """`text` for the word match: without the phrasebook's `unsearched_words`, which say why
    or for whom rather than what ("a gift for a runner" matched the pens that arrive "in a
    gift box"). The meaning (the dense branch) still reads them."""
    return _unsearched().sub(" ", text)


def meaning_text(text: str) -> str:
    """`text` with a person's age said as who is that old ("for a 3-year-old": "for a
    child"). By its numbers it found the dog beds named "Quill 3" and a mixer whose spare
    parts last "ten years"; by the word, what is made for a child. Without the words that
    only bound others ("only", "exactly": app/query/restriction.py and capacity.py read
    them from the search text): searched, "only cheap kettles" ranked the kettles whose
    descriptions say "only" above the cheaper ones."""
    book = load_phrasebook()
    aged = book.without_ages(text, lambda m: book.aged(m.group(1), m.group(2)))
    bare = _cues().sub(" ", aged)
    return aged if bare == aged else " ".join(bare.split())


@lru_cache(maxsize=1)
def _cues() -> re.Pattern[str]:
    book = load_phrasebook()
    words = alternation([*book.restricting_words, *book.room_exact_words])
    return re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.I)


def search_query(text: str) -> Query:
    """The `Query` the service searches `text` with (the ranker's trainer too)."""
    meaning = meaning_text(text)
    return Query(meaning, lexical=lexical_text(meaning))


def by_price(products: Sequence[RetrievedProduct]) -> list[RetrievedProduct]:
    """`products` cheapest first (those without a price last, in their order)."""
    priced = sorted((p for p in products if p.price is not None), key=lambda p: p.price or 0.0)
    return [*priced, *(p for p in products if p.price is None)]
