"""The generator interface and the one place that picks an implementation from settings."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Protocol

from app.core.config import Settings
from app.llm.breaker import CircuitBreaker
from app.llm.extractive import ExtractiveGenerator
from app.llm.openai_generator import OpenAIGenerator
from app.llm.types import AnswerPart, Question, Recommendation
from app.retrieval.types import RetrievedProduct


class Generator(Protocol):
    async def generate(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> Recommendation: ...

    def stream(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> AsyncGenerator[AnswerPart, None]:
        """The answer as it is written: text pieces, then the `Recommendation` (always last;
        no exception but cancellation escapes)."""
        ...

    async def aclose(self) -> None: ...


def build_generator(settings: Settings) -> Generator:
    """The LLM when a key is configured (it falls back by itself), else the extractive one."""
    if settings.openai_api_key is None or not settings.openai_api_key.get_secret_value():
        return ExtractiveGenerator()
    attempts_budget = settings.llm_timeout_seconds * (settings.llm_max_retries + 1)
    return OpenAIGenerator(
        api_key=settings.openai_api_key.get_secret_value(),
        model=settings.openai_model,
        base_url=settings.openai_base_url or None,
        timeout_seconds=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
        deadline_seconds=min(settings.llm_deadline_seconds, attempts_budget),
        max_in_flight=settings.llm_max_in_flight,
        breaker=CircuitBreaker(
            failure_threshold=settings.llm_breaker_failures,
            probe_interval_seconds=settings.llm_breaker_probe_seconds,
        ),
    )
