"""Records that cross the retrieval → generation → HTTP boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

GeneratorName = Literal["openai", "extractive"]


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


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The written answer. `degraded` is true when the LLM was meant to answer but could not."""

    message: str
    generator: GeneratorName
    degraded: bool
    cited_ids: list[int]
