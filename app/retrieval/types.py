"""What retrieval returns; generation, query understanding and the HTTP layer read it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RetrievedProduct:
    """One distinct product the retrieval returned, best first.

    `matched_content` holds its best matching chunks, best first. Every text field is
    seller-written and untrusted.
    """

    id: int
    name: str
    category: str | None
    brand: str | None
    price: float | None
    score: float
    matched_content: list[str] = field(default_factory=list)
    # Offered although outside the shopper's hard price bounds (the closest relevant ones).
    outside_filters: bool = False
    # What shoppers did with it, in [0, 1) (app.retrieval.popularity); 0 without signals.
    popularity: float = 0.0
