"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.llm.types import GeneratorName, RetrievedProduct
from app.store import SearchFilter


class RecommendFilters(BaseModel):
    """Applied inside the vector search; price bounds are inclusive."""

    model_config = ConfigDict(extra="forbid")

    category: str | None = Field(None, min_length=1, max_length=200, strict=True)
    min_price: float | None = Field(None, ge=0, strict=True)
    max_price: float | None = Field(None, ge=0, strict=True)

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

    query: str = Field(strict=True, description="What the shopper is looking for.")
    top_k: int | None = Field(
        None, ge=1, strict=True, description="Products wanted (1..MAX_TOP_K)."
    )
    filters: RecommendFilters | None = None

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
        )


class SearchResponse(BaseModel):
    success: Literal[True] = True
    query: str
    products: list[ProductOut]


class RecommendResponse(SearchResponse):
    message: str
    generator: GeneratorName
    degraded: bool


class ErrorResponse(BaseModel):
    success: Literal[False] = False
    detail: str


class SimilarResponse(BaseModel):
    success: Literal[True] = True
    product_id: int
    products: list[ProductOut]
