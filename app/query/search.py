"""Retrieval under a filter plan: hard bounds exclude, the soft price preference reorders,
products far below the best match are cut, and when few fit a hard price bound the closest
relevant products outside it follow, labelled as such.

Sits in front of the Retriever (search text + SearchFilter in); it never changes how the
Retriever ranks. A conversation turn that points at a shown product searches by it
(`search_turn`). With a learned ranker the cut reads its calibrated probability instead of
the distance from the best match. Words that name no product ("best sellers", "under 50")
show a few of each category (app/query/shelves.py); what a search returns and the orderings
it applies are app/query/ordering.py's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

from app.query.ordering import (
    CANDIDATE_FACTOR,
    SearchOutcome,
    by_popularity,
    by_price,
    log_outside,
    log_price,
    nudge_by_cost,
    search_query,
    with_popularity_prior,
    within_margin,
)
from app.query.plan import FilterPlan
from app.query.shelves import shop_shelves
from app.retrieval import Query, Retriever
from app.retrieval.types import RetrievedProduct
from app.store.hybrid import RetrievalMode

logger = logging.getLogger(__name__)


def relevance_cut(
    retriever: Retriever, products: Sequence[RetrievedProduct], best: float, margin: float
) -> list[RetrievedProduct]:
    """The products that are matches. With a learned ranker, those whose calibrated
    P(relevant) is at least RANKER_MIN_PROBABILITY (a margin of math.inf switches the cut
    off); without one, those within `margin` of `best`."""
    if retriever.ranks_by_probability:
        if math.isinf(margin):
            return list(products)
        return [p for p in products if p.score >= retriever.min_probability]
    return within_margin(products, best, margin)


def constrained_retrieve(
    retriever: Retriever, text: str, top_k: int, plan: FilterPlan, margin: float | None = None
) -> SearchOutcome:
    """Up to `top_k` products for `text` under `plan` (blocking: call off the event loop).

    Products scoring more than `margin` (default: the retriever's RELEVANCE_MARGIN) below
    the best match are not matches; with a learned ranker, those whose probability of
    relevance is below RANKER_MIN_PROBABILITY (`relevance_cut`; math.inf: no cut). When
    fewer than `top_k` fit a hard price bound, the closest relevant products outside it
    come in `closest_outside` (all of them the products, `nearest`, when none fits),
    flagged `outside_filters`. Under a price bound the best match outside it sets the bar
    too (a second search, in the first one's batch), so a cheap unrelated product does not
    pass as a match only because nothing relevant is that cheap. Products that say they
    hold fewer than the room asked for (`plan.room`) are not matches; when the best match
    is one and no relevant product says it has the room (outside the price bounds either:
    then it is among the closest outside), the relevant products come with the most room
    first, flagged `no_room`. With "only" ("over ear headphones only"), the relevant
    products whose names use its words, when the best match's does (`plan.named`).

    Words that name no product show the shop's shelves (`shop_shelves`); a gift for
    someone ("gift ideas for my dad") is searched by its meaning first, and shows them when
    nothing is close ("a birthday present for a kid" finds toys; "dad", one notebook).

    Raises:
        StoreError: the vector store failed.
    """
    if plan.shelves and plan.shelves_first:
        return shop_shelves(retriever, top_k, plan)
    query = search_query(text)  # embedded once, for every search below and the shelves'
    found = _constrained(retriever, query, top_k, plan, margin)
    if not plan.shelves or (found.products and not found.no_close_match):
        return found
    return shop_shelves(retriever, top_k, plan, query)


def _constrained(
    retriever: Retriever, query: Query, top_k: int, plan: FilterPlan, margin: float | None
) -> SearchOutcome:
    """`constrained_retrieve` by the words."""
    # Re-ordering by price and the margin cut need scores on one scale: relevance (cosine
    # plus a bounded lexical share) or cosine. An RRF score is rank-based: a headlamp that
    # mentions "tent-mates" scores within 10% of the tents.
    mode: RetrievalMode | None = None if retriever.scores_are_similarities else "dense"
    cut = retriever.relevance_margin if margin is None else margin
    # Re-ordering, and products left out for the room or the names they state, need more
    # to choose from.
    reorders = (
        plan.prefer_low_price or plan.prefer_popular or plan.room is not None or bool(plan.named)
    )
    wanted = top_k * CANDIDATE_FACTOR if reorders else top_k
    flt = plan.search_filter
    # "toys": every product in the category is what was asked for. By words only those
    # whose text repeats the name (or a brand that shares it) matched, and the cosine of
    # one word is low for all of them: ranked by meaning, with no floor.
    browsing = plan.browse and not retriever.ranks_by_probability
    if browsing:
        mode = "dense"
        # "gear", "stuff", "show me" say nothing of a product: the category's name does.
        query = search_query(flt.category) if flt.category else query
    # Under a category the shopper named or chose, what is shown is of the kind asked for;
    # the retriever leaves the name out of the BM25 query there, and the close-match bar,
    # set where it counted, called "show me books" and "toys for a 5 year old" far.
    can_be_far = not flt.category
    beyond = replace(flt, outside_price=True)
    outside: list[RetrievedProduct] | None = None
    if plan.has_price_bounds and _cut_by_distance(retriever, cut):
        # The best match inside or outside the bounds sets the bar for both, whether or not
        # enough fit: "a tent under 50" showed night-sky field guides as matches, the best
        # of what fitted while no tent did. Both searches in one batch: one round trip to
        # a server.
        searches = [(flt, wanted), (beyond, top_k * CANDIDATE_FACTOR)]
        found, outside = retriever.retrieve_each(query, searches, mode=mode, floor=not browsing)
    else:
        found = retriever.retrieve(query, wanted, flt, mode=mode, floor=not browsing)
    best = max([p.score for p in found + (outside or [])], default=-math.inf)
    relevant = relevance_cut(retriever, found, best, cut)
    lacking = plan.lacks_room(relevant)
    if lacking and plan.has_price_bounds and outside is None:
        # Whether the room exists above the budget is asked before saying it does not
        # (searched with the first search where the cut is a distance: a ranker's is not).
        outside = retriever.retrieve(
            query, top_k * CANDIDATE_FACTOR, beyond, mode=mode, floor=not browsing
        )
        best = max([best, *(p.score for p in outside)])
    if lacking and not plan.any_says_room(relevance_cut(retriever, outside or [], best, cut)):
        # The best match has less room than asked for and no relevant product has it,
        # inside the price bounds or above them ("a tent for 8 people": past the tents for
        # four, headlamps; "a 4 person tent under 110" has them just above): said so, the
        # most room first.
        return SearchOutcome(plan.roomiest(relevant)[:top_k], no_room=plan.room)
    fitting = plan.with_names(plan.with_room(relevant))
    matches = with_popularity_prior(fitting, retriever.popularity_weight)
    if plan.prefer_popular:
        matches = by_popularity(matches)
    if plan.prefer_low_price:
        matches = nudge_by_cost(matches, log_price)
    matches = plan.exact_room_first(matches)[:top_k]
    if len(matches) >= top_k or not plan.has_price_bounds:
        return SearchOutcome(matches, no_close_match=can_be_far and _far(retriever, best, matches))
    # Few fit the price bounds: the relevant products outside them (the category and the
    # brands still hold), closest first, never presented as if they fitted (the caller
    # labels them).
    if outside is None:
        depth = top_k * CANDIDATE_FACTOR
        outside = retriever.retrieve(query, depth, beyond, mode=mode, floor=not browsing)
        best = max([best, *(p.score for p in outside)])
        matches = relevance_cut(retriever, matches, best, cut)
    outside = relevance_cut(retriever, outside, best, cut)
    if not matches and plan.lacks_room(outside):
        roomiest = [replace(p, outside_filters=True) for p in plan.roomiest(outside)[:top_k]]
        return SearchOutcome(roomiest, nearest=True, no_room=plan.room)
    outside = plan.with_names(plan.with_room(outside))
    closest = nudge_by_cost(outside, log_outside(flt))[: top_k - len(matches)]
    offered = [replace(p, outside_filters=True) for p in closest]
    logger.info(
        "%d of %d products within %s for %r; %d closest outside",
        len(matches),
        top_k,
        flt,
        query.text,
        len(offered),
    )
    if not matches:
        return SearchOutcome(offered, nearest=bool(offered))
    far = can_be_far and _far(retriever, best, matches)
    return SearchOutcome(matches, closest_outside=offered, no_close_match=far)


def names_a_kind(plan: FilterPlan, outcome: SearchOutcome) -> bool:
    """Whether the kind of product asked for is judged (`not_carried`): words that name
    nothing name no kind the shop could lack ("best sellers" read as "sellers")."""
    return not (plan.names_nothing or outcome.shelves)


def _cut_by_distance(retriever: Retriever, margin: float) -> bool:
    """Whether the cut is a distance from the best match (not a ranker's probability, and
    not switched off): then the best match outside a price bound matters to it."""
    return not retriever.ranks_by_probability and not math.isinf(margin)


def _far(retriever: Retriever, best: float, shown: Sequence[RetrievedProduct]) -> bool:
    """Whether products are shown although even the best match is not a close one."""
    bar = retriever.close_match_score
    return bool(shown) and bar is not None and best < bar


def past_shown(retriever: Retriever, text: str, top_k: int, plan: FilterPlan) -> SearchOutcome:
    """`constrained_retrieve`, past the products a run of "show me more" showed
    (`exclude_products`): searched as the first page was, so the same best match sets the
    same bar, and what was shown is dropped after. Kept out of the search, the best of the
    rest set the bar: after the four tents, headlamps came as the next page's matches. A
    search with nothing close has no next page."""
    seen = set(plan.search_filter.exclude_products)
    if not seen:
        return constrained_retrieve(retriever, text, top_k, plan)
    whole = constrained_retrieve(retriever, text, top_k + len(seen), _unseen(plan))
    if whole.no_close_match:  # nothing was close ("a hand mixer"): the next are further
        return SearchOutcome([])
    products = [p for p in whole.products if p.id not in seen][:top_k]
    outside = [p for p in whole.closest_outside if p.id not in seen]
    if not products and outside:  # past every match inside the price bounds
        return replace(whole, products=outside[:top_k], closest_outside=[], nearest=True)
    return replace(whole, products=products, closest_outside=outside[: top_k - len(products)])


def _unseen(plan: FilterPlan) -> FilterPlan:
    """`plan` without its products shown before (the search as the first page ran it)."""
    return replace(plan, search_filter=replace(plan.search_filter, exclude_products=()))


def search_turn(
    retriever: Retriever,
    text: str,
    like: int | None,
    top_k: int,
    plan: FilterPlan,
    about: Sequence[int] = (),
    asked: str = "",
    about_ranked: bool = False,
) -> SearchOutcome:
    """A conversation turn's products: the shown products a question is about ("is the
    second one waterproof?": `about`, each with its chunks nearest to `asked`, whatever the
    filters; "which one …?": `about_ranked`, nearest first), by example when it points at
    a shown product ("more like the second one"), else by its text (blocking: call off the
    event loop).

    By example: among the products that match the conversation's question (its text, the
    cut applied), those nearest to the shown one, nearest first. "More like the second
    tent" is more tents like it, not whatever else shares its brand's words. When only
    products outside the price bounds match it too, those nearest to the shown one are
    the answer, labelled as outside (`nearest`); when nothing else matches at all, the
    products nearest to it (GET /products/{id}/similar under the same filters).

    Raises:
        StoreError: the vector store failed.
    """
    if about:
        shown = retriever.about(about, asked or text, ranked=about_ranked)
        if about_ranked and plan.prefer_low_price:
            # "Which is the cheapest?": nothing else asked, the price alone orders them (by
            # the words, the $297 machine came first); "which is cheap and quiet?" both.
            price_only = not asked or asked == text
            shown = by_price(shown) if price_only else nudge_by_cost(shown, log_price)
        return SearchOutcome(shown)
    if like is None:
        return past_shown(retriever, text, top_k, plan)
    wanted = top_k * CANDIDATE_FACTOR
    seen = set(plan.search_filter.exclude_products)
    matching: list[int] = []
    beyond: list[int] = []  # what matches the question outside the price bounds
    question = None
    if text and not (plan.shelves and plan.shelves_first):
        question = constrained_retrieve(retriever, text, wanted + len(seen), _unseen(plan))
    if question is not None and question.shelves:
        # The shelves name nothing to stay within: more like the moisturiser shown among
        # them is the products nearest it, not the nearest of the other shelves' products.
        question = None
    if question is not None:
        left = [p.id for p in question.products if p.id != like and p.id not in seen]
        past = [p.id for p in question.closest_outside if p.id != like and p.id not in seen]
        if question.nearest:  # nothing fits the filters, so nothing matches inside them
            beyond = left
        else:
            matching, beyond = left, past
    if not matching and beyond:
        # The shown tent is the only one under the cap: more like it are the tents above
        # it, labelled as outside, not the cheap products that share its model name.
        outside = replace(plan.search_filter, outside_price=True)
        near = retriever.similar(like, wanted, outside, among=beyond)
        if near:
            offered = [replace(p, outside_filters=True) for p in near[:top_k]]
            return SearchOutcome(offered, nearest=True)
    if question is not None and not matching and seen:
        # "Show me more" past every product that matches the question: after the tents,
        # the products nearest the tent were backpacks.
        return SearchOutcome([])
    # No `among` (nothing else matches the question): the products nearest to it.
    found = retriever.similar(like, wanted, plan.search_filter, among=matching)
    if found is None:  # it left the catalog since it was shown
        logger.info("product %d is gone: searching %r instead", like, text)
        return constrained_retrieve(retriever, text, top_k, plan)
    if plan.prefer_low_price:
        found = nudge_by_cost(found, log_price)
    return SearchOutcome(found[:top_k])
