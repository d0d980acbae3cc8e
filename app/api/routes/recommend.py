"""POST /recommend (retrieval + written answer) and POST /search (retrieval only).

Both parse the query first (app/query): constraints written in words become filters,
explicit `filters` win, and the response lists every filter applied with its source.
A request carrying an earlier answer's `conversation` is a follow-up of that turn
(app/query/followup.py); every answer carries its own.
/recommend streams its answer (app/api/streaming.py) when the client accepts
text/event-stream, and answers JSON otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Response, status

from app.api.admission import RetrievalGate
from app.api.conversation import ConversationCodec, ConversationError
from app.api.deps import (
    ConversationsDep,
    GeneratorDep,
    RetrievalGateDep,
    RetrieverDep,
    SettingsDep,
    ShopEventsDep,
    UnderstandingDep,
    run_retrieval,
)
from app.api.schemas import (
    ErrorResponse,
    FilterApplied,
    ProductOut,
    RecommendRequest,
    RecommendResponse,
    SearchResponse,
)
from app.api.streaming import EVENT_STREAM, event_stream, wants_event_stream
from app.core.config import Settings
from app.events.shop import ShopEvents, Shown
from app.llm import Question, Recommendation
from app.llm.extractive import extractive_recommendation
from app.query import FilterPlan, ParsedQuery, QueryUnderstanding, SearchOutcome, plan_filters
from app.query.followup import FollowUpError
from app.query.search import names_a_kind, search_turn
from app.query.turn import next_state
from app.retrieval import Retriever

logger = logging.getLogger(__name__)

router = APIRouter(tags=["recommend"])

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (400, 413, 422, 503)
}


@dataclass(frozen=True, slots=True)
class _Searched:
    parsed: ParsedQuery
    plan: FilterPlan
    outcome: SearchOutcome
    conversation: str
    follow_up: bool
    recommendation_id: str
    ranking_version: str
    about_shown: bool = False
    # "Show me more": the products shown before were kept out.
    more: bool = False
    # Prices said in another currency than the catalog's ("under 150 euros").
    foreign_prices: tuple[str, ...] = ()

    @property
    def notice(self) -> str:
        """What the answer says before its own words (`constraint_notice`)."""
        if self.more and not self.outcome.products:
            return "Nothing else matches your request: the answers before showed every match. "
        if self.more and self.outcome.nearest:
            return (
                "Nothing else matches your request within its price range; "
                "these are the nearest matches outside it. "
            )
        return currency_notice(self.plan, self.foreign_prices) + constraint_notice(
            self.plan, self.outcome
        )

    def question(self, query: str) -> Question:
        """What the written answer answers: a follow-up's own words ("cheaper") alone would
        leave the LLM guessing what is being refined, and a model told nothing would offer
        a tent as the stove asked for."""
        if self.about_shown:
            note = "a question about the products listed, shown in the last answer"
            return Question(query, (note,), "about")
        notes = []
        if self.follow_up:
            notes.append(f"a follow-up; what is searched for now: {self.parsed.search_text}")
        if self.more:
            notes.append("more of the same: none of the products listed was shown before")
        if self.outcome.not_carried and self.outcome.carried_besides:
            notes.append(
                f'the shop has nothing called "{self.outcome.not_carried}": say so; '
                "the products listed are for the rest of the request"
            )
        elif self.outcome.not_carried:
            notes.append(
                f'the shop has nothing called "{self.outcome.not_carried}": say so; '
                "the products listed are the closest it has"
            )
        elif self.outcome.no_room is not None:
            notes.append(
                f'nothing in the catalog says it has room for "{self.outcome.no_room.text}": '
                "say so; the products listed have the most"
            )
        elif self.outcome.no_close_match:
            notes.append(
                "nothing in the catalog matches it closely: say so; "
                "the products listed are the nearest it has"
            )
        elif self.outcome.shelves:
            notes.append(
                "it names no product: the products listed are a few from each of the shop's "
                "categories, ideas to choose from; never present one as what was asked for"
            )
        far = (
            self.outcome.no_close_match
            or (self.outcome.not_carried is not None and not self.outcome.carried_besides)
            or self.outcome.no_room is not None
        )
        return Question(query, tuple(notes), "nearest" if far else "matches")

    def response_fields(self) -> dict[str, object]:
        return {
            "conversation": self.conversation,
            "recommendation_id": self.recommendation_id,
            "ranking_version": self.ranking_version,
            "search_text": self.parsed.search_text,
            "query_parser": self.parsed.parser,
            "filters_applied": [FilterApplied.of(f) for f in self.plan.applied],
            "nearest_matches": self.outcome.nearest,
            "no_close_match": self.outcome.no_close_match,
            "not_carried": self.outcome.not_carried,
            "shelves": self.outcome.shelves,
            "products": [ProductOut.of(p) for p in self.outcome.products],
            "closest_outside_filters": [ProductOut.of(p) for p in self.outcome.closest_outside],
        }


async def _search(
    body: RecommendRequest,
    retriever: Retriever,
    understanding: QueryUnderstanding,
    settings: Settings,
    gate: RetrievalGate,
    conversations: ConversationCodec,
    events: ShopEvents,
) -> _Searched:
    # Limits that come from settings cannot live in the static request model.
    if len(body.query) > settings.max_query_chars:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"query: longer than {settings.max_query_chars} characters",
        )
    top_k = body.top_k or settings.vector_search_top_k
    if top_k > settings.max_top_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"top_k: must be between 1 and {settings.max_top_k}",
        )
    try:
        state = conversations.read(body.conversation) if body.conversation else None
        turn = await understanding.follow_up(await understanding.parse(body.query), state)
    except (ConversationError, FollowUpError) as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(e)) from e
    plan = plan_filters(
        turn.parsed,
        body.filters.to_search_filter() if body.filters else None,
        body.ignore_parsed,
        understanding.currency_symbol,
        turn.carried,
        understanding.categories(),
    )
    if turn.excluded:  # "show me more": past what this run of answers showed
        shown = replace(plan.search_filter, exclude_products=turn.excluded)
        plan = replace(plan, search_filter=shown)
    outcome = await run_retrieval(
        gate,
        "retrieval",
        search_turn,
        retriever,
        turn.parsed.search_text,
        turn.like,
        top_k,
        plan,
        turn.about,
        turn.asked,
        turn.about_ranked,
    )
    if not turn.about and turn.like is None and names_a_kind(plan, outcome):
        missing = understanding.not_carried(turn.parsed.search_text, outcome.products)
        if missing is not None:
            # "a kettle and a toaster": the kettles answer what the shop does carry.
            outcome = replace(outcome, not_carried=missing.name, carried_besides=missing.besides)
    conversation = conversations.issue(next_state(turn, plan, outcome, state))
    rid = events.impression(
        query=body.query,
        search_text=turn.parsed.search_text,
        filters=[{"field": f.field, "value": f.value, "source": f.source} for f in plan.applied],
        shown=[Shown(p.id, p.score) for p in outcome.products],
        conversation=conversation,
        follows=body.conversation,
        ranking=retriever.version,
    )
    return _Searched(
        turn.parsed,
        plan,
        outcome,
        conversation,
        turn.follow_up,
        rid,
        retriever.version,
        bool(turn.about),
        bool(turn.excluded),
        understanding.foreign_prices(turn.parsed),
    )


def currency_notice(plan: FilterPlan, said: Sequence[str]) -> str:
    """What the answer says of a price said in another currency: it was read as the
    catalog's, unconverted ("tent under 150 euros" showed $144.99 tents, unsaid)."""
    return "".join(
        f'"{f.text}" is read as {f.label}, the shop\'s currency (not converted). '
        for f in plan.applied
        if f.source == "query" and f.text in said
    )


def constraint_notice(plan: FilterPlan, outcome: SearchOutcome) -> str:
    """What the answer says first when products outside the price bounds are shown, or when
    nothing in the catalog matches closely or is called what was asked for."""
    far = ""
    if outcome.not_carried and (outcome.carried_besides or not outcome.products):
        # "a kids bike"; "a kettle and a toaster" (the kettles match the rest)
        far = f'The shop has nothing called "{outcome.not_carried}". '
    elif outcome.not_carried:
        far = f'The shop has nothing called "{outcome.not_carried}"; '
        far += "these are the closest products. "
    elif outcome.no_room is not None:
        far = f"Nothing in the catalog says it has room for {outcome.no_room.said}; "
        far += "these have the most. "
    elif outcome.no_close_match:
        far = "Nothing in the catalog closely matches your request; "
        far += "these are the nearest products. "
    elif outcome.shelves:
        far = "A few ideas from across the shop. "
    bounds = " and ".join(f.label for f in plan.applied if f.field in ("min_price", "max_price"))
    if outcome.nearest:
        return far + (
            f"Nothing in the catalog matches your request at {bounds}. "
            "These are the nearest matches, outside that price range. "
        )
    if not outcome.closest_outside:
        return far
    n = len(outcome.products)
    if far and not outcome.carried_besides:
        # "Only 3 products match", after "nothing closely matches", read as a contradiction
        fit = "1 of them is" if n == 1 else f"{n} of them are"
        fit = f"Only {fit} at {bounds}"
    else:
        fit = "1 product matches" if n == 1 else f"{n} products match"
        fit = f"Only {fit} your request at {bounds}"
    return far + f"{fit}; the closest ones outside that price range are offered separately. "


def recommend_response(
    body: RecommendRequest, searched: _Searched, answer: Recommendation
) -> RecommendResponse:
    """The /recommend response; also the `done` event of a streamed answer."""
    return RecommendResponse(
        query=body.query,
        message=searched.notice + answer.message,
        generator=answer.generator,
        degraded=answer.degraded,
        degraded_reason=answer.reason,
        **searched.response_fields(),
    )


_STREAMED = {
    "description": "The answer as JSON; with `Accept: text/event-stream`, the events "
    "`products`, `delta`…, `done` (docs/http-api.md).",
    "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
}


@router.post("/recommend", response_model=RecommendResponse, responses={**_ERRORS, 200: _STREAMED})
async def recommend(
    body: RecommendRequest,
    retriever: RetrieverDep,
    understanding: UnderstandingDep,
    generator: GeneratorDep,
    settings: SettingsDep,
    gate: RetrievalGateDep,
    conversations: ConversationsDep,
    events: ShopEventsDep,
    accept: Annotated[
        str | None,
        Header(
            description="`text/event-stream` streams the answer as server-sent events "
            "(docs/http-api.md); anything else answers JSON.",
            examples=["application/json", EVENT_STREAM],
        ),
    ] = None,
) -> RecommendResponse | Response:
    """Recommend products for a plain-language request, with a short written answer."""
    searched = await _search(body, retriever, understanding, settings, gate, conversations, events)
    offered = searched.outcome.offered
    question = searched.question(body.query)
    if wants_event_stream(accept):
        return event_stream(
            SearchResponse(query=body.query, **searched.response_fields()),
            searched.notice,
            generator.stream(question, offered),
            finish=lambda answer: recommend_response(body, searched, answer),
            fallback=lambda: extractive_recommendation(
                question, offered, reason="unexpected_error"
            ),
        )
    return recommend_response(body, searched, await generator.generate(question, offered))


@router.post("/search", response_model=SearchResponse, responses=_ERRORS)
async def search(
    body: RecommendRequest,
    retriever: RetrieverDep,
    understanding: UnderstandingDep,
    settings: SettingsDep,
    gate: RetrievalGateDep,
    conversations: ConversationsDep,
    events: ShopEventsDep,
) -> SearchResponse:
    """Retrieval only: the products /recommend would use, without the written answer."""
    searched = await _search(body, retriever, understanding, settings, gate, conversations, events)
    return SearchResponse(query=body.query, **searched.response_fields())
