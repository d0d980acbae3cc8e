"""Generation through any OpenAI-compatible chat endpoint, falling back to the extractive answer.

Worst-case wall time: the client's `timeout` applies per attempt (and per read, not to
the whole response), and between attempts it sleeps for the server's Retry-After (the
openai client honours up to 120 s). So a hard deadline of timeout × (retries + 1) wraps
the whole call; whatever happens, the shopper gets an answer within it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import openai
from openai import AsyncOpenAI

from app.llm.extractive import extractive_recommendation
from app.llm.grounding import cited_ids, unknown_references
from app.llm.metrics import LLMOutcome, record_llm_outcome
from app.llm.prompt import build_messages
from app.llm.types import Recommendation, RetrievedProduct

logger = logging.getLogger(__name__)

# Room for three short sentences; a cap keeps a rambling model from eating the deadline.
MAX_ANSWER_TOKENS = 300


class OpenAIGenerator:
    """Asks the LLM; on any failure or ungrounded answer returns the extractive one, degraded."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout_seconds: float = 15.0,
        max_retries: int = 1,
        deadline_seconds: float | None = None,
    ) -> None:
        """Args:
        api_key, model, base_url: passed to the openai client as they are.
        timeout_seconds: the client's per-attempt timeout.
        max_retries: the client's retries (429, 5xx, timeouts, connection errors).
        deadline_seconds: hard cap on one `generate` call, all attempts and backoff
            included; defaults to timeout_seconds × (max_retries + 1).
        """
        self.model = model
        self.deadline_seconds = (
            deadline_seconds
            if deadline_seconds is not None
            else timeout_seconds * (max_retries + 1)
        )
        self._client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_seconds,
            max_retries=max_retries,
        )

    async def generate(self, query: str, products: Sequence[RetrievedProduct]) -> Recommendation:
        if not products:
            # Nothing to recommend and nothing to ground an answer in: the fixed
            # "no match" message is the right answer, not a degraded one.
            return extractive_recommendation(query, products, degraded=False)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.deadline_seconds):
                answer = await self._complete(query, products)
        except (TimeoutError, openai.APIError) as err:
            return self._fallback(query, products, _classify(err), repr(err), started)
        except Exception as err:  # a malformed response must not turn into a 500
            logger.exception("LLM call failed unexpectedly")
            return self._fallback(query, products, "unexpected_error", repr(err), started)

        if not answer:
            return self._fallback(query, products, "empty", "empty answer", started)
        unknown = unknown_references(answer, (p.id for p in products))
        if unknown:
            reason = f"answer names products that were not retrieved: {sorted(unknown)}"
            return self._fallback(query, products, "ungrounded", reason, started)
        record_llm_outcome("ok")
        logger.debug("LLM answered in %.2fs", time.perf_counter() - started)
        return Recommendation(answer, "openai", False, cited_ids(answer))

    async def aclose(self) -> None:
        await self._client.close()

    async def _complete(self, query: str, products: Sequence[RetrievedProduct]) -> str:
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=build_messages(query, products),
            max_tokens=MAX_ANSWER_TOKENS,
        )
        if not response.choices:
            return ""
        return (response.choices[0].message.content or "").strip()

    def _fallback(
        self,
        query: str,
        products: Sequence[RetrievedProduct],
        outcome: LLMOutcome,
        reason: str,
        started: float,
    ) -> Recommendation:
        record_llm_outcome(outcome)
        logger.warning(
            "LLM answer unusable (%s after %.2fs: %s); answering extractively",
            outcome,
            time.perf_counter() - started,
            reason,
        )
        return extractive_recommendation(query, products, degraded=True)


def _classify(err: BaseException) -> LLMOutcome:
    # APITimeoutError is a subclass of APIConnectionError: test it first.
    if isinstance(err, TimeoutError | openai.APITimeoutError):
        return "timeout"
    if isinstance(err, openai.RateLimitError):
        return "rate_limited"
    if isinstance(err, openai.InternalServerError):
        return "server_error"
    if isinstance(err, openai.APIConnectionError):
        return "connection_error"
    return "api_error"
