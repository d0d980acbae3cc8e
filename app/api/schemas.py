"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.api.conversation import MAX_TOKEN_CHARS
from app.api.text import SafeText
from app.events.ids import MAX_ID_CHARS
from app.events.shop import ShopperEvent
from app.llm.types import DegradedReason, GeneratorName
from app.query import AppliedFilter
from app.query.plan import FilterSource
from app.query.types import FilterField, ParserName
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

# A request's events are written (and fsynced) together, all or none.
MAX_EVENTS_PER_REQUEST = 500


class RecommendFilters(BaseModel):
    """Applied inside the vector search; price bounds are inclusive."""

    model_config = ConfigDict(extra="forbid")

    category: SafeText | None = Field(None, min_length=1, max_length=200, strict=True)
    # Finite only: a NaN bound panics the edge engine's range index (measured).
    min_price: float | None = Field(None, ge=0, strict=True, allow_inf_nan=False)
    max_price: float | None = Field(None, ge=0, strict=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _ordered(self) -> RecommendFilters:
        if (
            self.min_price is not None
            and self.max_price is not None
            and self.min_price > self.max_price
        ):
            raise ValueError("min_price must not be greater than max_price")
        return self

    def to_search_filter(self) -> SearchFilter:
        return SearchFilter(self.category, self.min_price, self.max_price)


class RecommendRequest(BaseModel):
    # Strict types: "5" for top_k or 12 for query is a client bug worth a clear 422.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"query": "wireless headphones for swimming, good value", "top_k": 5}]
        },
    )

    query: SafeText = Field(strict=True, description="What the shopper is looking for.")
    top_k: int | None = Field(
        None, ge=1, strict=True, description="Products wanted (1..MAX_TOP_K)."
    )
    filters: RecommendFilters | None = Field(
        None, description="Explicit filters; each one wins over the same one heard in the query."
    )
    ignore_parsed: list[FilterField] = Field(
        default_factory=list,
        max_length=6,
        description="Filters heard in the query or carried by the conversation to leave out "
        "(a chip the shopper removed).",
    )
    conversation: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_TOKEN_CHARS,
        strict=True,
        description="The `conversation` of an earlier answer: this query is a follow-up of "
        'that turn ("cheaper", "in black", "more like the second one", "not Samsung").',
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("query must not be empty or whitespace")
        return value


class ProductOut(BaseModel):
    id: int
    name: str
    score: float
    matched_content: list[str]
    category: str | None
    brand: str | None
    price: float | None
    outside_filters: bool = Field(
        False,
        description="Outside the hard price filters: a nearest match (none fit) or one of "
        "`closest_outside_filters`; never presented as fitting them.",
    )

    @classmethod
    def of(cls, p: RetrievedProduct) -> ProductOut:
        return cls(
            id=p.id,
            name=p.name,
            score=p.score,
            matched_content=list(p.matched_content),
            category=p.category,
            brand=p.brand,
            price=p.price,
            outside_filters=p.outside_filters,
        )


class FilterApplied(BaseModel):
    """A filter the search used, and where it came from."""

    field: FilterField
    value: str | float
    source: FilterSource = Field(
        description="query: heard in the words; request: `filters`; conversation: carried "
        "from the turn this one follows up."
    )
    label: str = Field(description='For display, e.g. "≤ $100".')
    text: str | None = Field(
        description="The shopper's words it was heard in (query, or the earlier turn's)."
    )
    hard: bool = Field(description="Hard filters exclude; the soft price preference reorders.")

    @classmethod
    def of(cls, f: AppliedFilter) -> FilterApplied:
        return cls(
            field=f.field,
            value=f.value,
            source=f.source,
            label=f.label,
            text=f.text or None,
            hard=f.hard,
        )


class SearchResponse(BaseModel):
    success: Literal[True] = True
    query: str
    search_text: str = Field(description="What was searched for once the constraints were cut.")
    query_parser: ParserName
    filters_applied: list[FilterApplied]
    nearest_matches: bool = Field(
        False,
        description="True when no relevant product met the hard price filters: `products` "
        "are all nearest matches outside them (each flagged `outside_filters`).",
    )
    no_close_match: bool = Field(
        False,
        description="True when even the best product scored below RELEVANCE_CLOSE_MATCH: "
        "the catalog has nothing close to the request, and `products` are the nearest it has.",
    )
    not_carried: str | None = Field(
        None,
        description="The kind of product asked for (the query's head word, e.g. `stove`) "
        "when no product in the catalog is called that and none shown mentions it: "
        "`products` are the closest the shop has, which may be that thing by another name.",
        examples=["stove"],
    )
    shelves: bool = Field(
        False,
        description='True when the words named no product ("best sellers", "under 50", or a '
        "gift for someone with nothing close): `products` are a few from each category.",
    )
    products: list[ProductOut]
    closest_outside_filters: list[ProductOut] = Field(
        default_factory=list,
        description="When fewer than top_k products fit the hard price filters: the closest "
        "relevant products outside them, offered as such (not matches).",
    )
    conversation: str = Field(
        description="This turn's state, signed: send it back as the request's "
        "`conversation` to follow up on this answer (valid CONVERSATION_TTL_SECONDS)."
    )
    recommendation_id: str = Field(
        description="This answer's id: name it in POST /events (clicks, add-to-carts, "
        "purchases) so what the shopper did is credited to what they were shown."
    )
    ranking_version: str = Field(
        description="Which encoder (and so which index) and which ranking answered: "
        "`<model id>|relevance`, or `<model id>|<learned model id>` with a learned ranker. "
        "A model switch changes it between two answers, never within one."
    )


class RecommendResponse(SearchResponse):
    message: str
    generator: GeneratorName
    degraded: bool
    degraded_reason: DegradedReason | None = Field(
        None, description="Why the answer is extractive although an LLM is configured."
    )


class RecommendStreamDone(RecommendResponse):
    """The last event of a streamed /recommend: the JSON response, and whether the text
    streamed before it was replaced by `message` (docs/http-api.md)."""

    text_replaced: bool = Field(
        description="True when `message` is not the text the `delta` events carried: the "
        "LLM failed (or its answer failed the grounding check) after text went out."
    )


class ErrorResponse(BaseModel):
    success: Literal[False] = False
    detail: str


class SimilarResponse(BaseModel):
    success: Literal[True] = True
    product_id: int
    products: list[ProductOut]


class EventIn(BaseModel):
    """What a shopper did with a product."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["click", "add_to_cart", "purchase"]
    product_id: int = Field(strict=True, ge=0, le=2**63 - 1)
    recommendation_id: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        strict=True,
        description="The answer it came from; none for sales fed back from the shop's systems.",
    )
    event_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.:-]{1,128}$",
        strict=True,
        description="The client's id for this event: a retry with the same id is stored once.",
    )
    session: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        strict=True,
        description="An opaque shopper/session token; stored only as a keyed hash.",
    )

    def to_event(self) -> ShopperEvent:
        return ShopperEvent(
            self.type, self.product_id, self.recommendation_id, self.event_id, self.session
        )


class EventsRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"events": [{"type": "click", "product_id": 42, "recommendation_id": "r1...."}]}
            ]
        },
    )

    events: list[EventIn] = Field(min_length=1, max_length=MAX_EVENTS_PER_REQUEST)


class EventsAccepted(BaseModel):
    success: Literal[True] = True
    accepted: int
    event_ids: list[str] = Field(
        description="The stored id of each event, in request order (the client's own, "
        "namespaced, or one the service assigned)."
    )
