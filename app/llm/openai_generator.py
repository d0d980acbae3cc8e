"""Generation through any OpenAI-compatible chat endpoint, falling back to the extractive answer.

Three limits keep a slow, dead or overloaded LLM from costing the shopper more than a
moment (each answers extractively, `degraded`, with the reason):
- a hard deadline on one `generate` call. The client's `timeout` applies per attempt (and
  per read, not to the whole response), and between attempts it sleeps for the server's
  Retry-After (the openai client honours up to 120 s), so only a deadline around the
  whole call bounds it;
- a circuit breaker (app/llm/breaker.py): after repeated failures no request waits on the
  endpoint, and one probe per interval, run in the background, finds out when it is back;
- a cap on calls in flight: past it a request is answered at once instead of queueing for
  a connection or a provider's rate limit (at 50 req/s with no cap, requests queued for
  10-25 s behind a 2 s LLM).

`stream` applies the same three limits and the same checks to a streamed completion
(docs/http-api.md, "Streamed answers"): the client retries only before the first token,
the deadline bounds the whole stream, and the grounding check runs on the finished text.
The stream's body is read by app/llm/completion_stream.py, its text handed on once per
tick of a clock all streams share (READ_INTERVAL_SECONDS, wider when many streams flow):
a stream's CPU follows its events, not its tokens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

import httpx2
import openai
from openai import AsyncOpenAI

from app.llm.breaker import BreakerState, CircuitBreaker
from app.llm.completion_stream import Ticker, completion_deltas
from app.llm.extractive import extractive_recommendation, replay
from app.llm.grounding import cited_ids, unknown_references
from app.llm.metrics import LLMOutcome, SkipReason, record_llm_outcome, record_llm_skipped
from app.llm.prompt import build_messages
from app.llm.types import AnswerPart, LLMFailure, Question, Recommendation
from app.retrieval.types import RetrievedProduct

logger = logging.getLogger(__name__)

# Room for three short sentences; a cap keeps a rambling model from eating the deadline.
MAX_ANSWER_TOKENS = 300
# Outcomes that show the endpoint itself works (the answer may still be unusable).
_ENDPOINT_OK: frozenset[LLMOutcome] = frozenset({"ok", "empty", "ungrounded"})


class OpenAIGenerator:
    """Asks the LLM; on any failure, skip or ungrounded answer returns the extractive one."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout_seconds: float = 4.0,
        max_retries: int = 1,
        deadline_seconds: float | None = None,
        max_in_flight: int = 32,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        """Args:
        api_key, model, base_url: passed to the openai client as they are.
        timeout_seconds: the client's per-attempt timeout.
        max_retries: the client's retries (429, 5xx, timeouts, connection errors).
        deadline_seconds: hard cap on one `generate` call, all attempts and backoff
            included; defaults to timeout_seconds × (max_retries + 1).
        max_in_flight: LLM calls allowed at once; requests past it are answered extractively.
        breaker: the endpoint's circuit breaker (default: open after 5 failures in a row,
            probe every 10 s).
        """
        self.model = model
        self.deadline_seconds = (
            deadline_seconds
            if deadline_seconds is not None
            else timeout_seconds * (max_retries + 1)
        )
        self.max_in_flight = max_in_flight
        self.breaker = breaker or CircuitBreaker(failure_threshold=5, probe_interval_seconds=10.0)
        self._in_flight = 0
        # Strong references: the event loop keeps only weak ones to running tasks.
        self._probes: set[asyncio.Task[Recommendation]] = set()
        # The pace of every stream's reading (app/llm/completion_stream.py).
        self._ticker = Ticker()
        # Streams whose reader left: cancelled, kept until their cleanup has run.
        self._abandoned: set[asyncio.Task[tuple[LLMOutcome, str]]] = set()
        self._client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_seconds,
            max_retries=max_retries,
            # aiohttp's parser is C; httpx2's own parses each token's chunk in Python
            # (BENCHMARKS.md, "Streamed answers"). Its errors reach us as httpx2's.
            http_client=openai.DefaultAioHttpClient(),
        )

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def breaker_state(self) -> BreakerState:
        return self.breaker.state

    async def generate(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> Recommendation:
        skipped = self._admit(question, products)
        if skipped is not None:
            return skipped
        return await self._ask(question, products)

    async def stream(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> AsyncGenerator[AnswerPart, None]:
        skipped = self._admit(question, products)
        if skipped is not None:
            async for part in replay(skipped):
                yield part
            return
        # The LLM is read in its own task, so no timeout scope spans a `yield` (a slow
        # reader would take the cancellation), and a reader that leaves cancels it.
        pieces: asyncio.Queue[str | None] = asyncio.Queue()
        task = asyncio.create_task(self._ask_streamed(question, products, pieces.put_nowait))
        streamed = False
        try:
            # The reader hands text on at most once per read interval, so this wakes (and
            # the shopper gets an event) once per interval, not once per token.
            while (piece := await _joined(pieces)) is not None:
                streamed = True
                yield piece
            outcome, text = await task
        finally:
            if not task.done():
                task.cancel()  # closes the HTTP stream to the LLM
                self._abandoned.add(task)
                task.add_done_callback(self._abandoned.discard)
        answer = self._answer(question, products, outcome, text)
        if streamed:
            yield answer  # replaced, if it failed after text went out
        else:
            async for part in replay(answer):
                yield part

    def _admit(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> Recommendation | None:
        """The answer to give without waiting on the LLM, or None when it is to be asked."""
        if not products:
            # Nothing to recommend and nothing to ground an answer in: the fixed
            # "no match" message is the right answer, not a degraded one.
            return extractive_recommendation(question, products)
        permit = self.breaker.permit()
        if permit == "probe":
            # The shopper does not wait on an endpoint that was failing: the probe (this
            # very request) runs in the background and only decides the breaker's state.
            task = asyncio.create_task(self._ask(question, products))
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)
            return _skip(question, products, "breaker_open")
        if permit == "skip":
            return _skip(question, products, "breaker_open")
        if self._in_flight >= self.max_in_flight:
            return _skip(question, products, "at_capacity")
        return None

    async def aclose(self) -> None:
        for task in [*self._probes, *self._abandoned]:
            task.cancel()
        await self._client.close()

    async def _ask(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> Recommendation:
        """One guarded LLM call: its outcome goes to the metrics and the breaker."""
        started = time.perf_counter()
        self._in_flight += 1
        try:
            outcome, answer = await self._attempt(self._complete(question, products), products)
        finally:
            self._in_flight -= 1
        self._record(outcome, answer, started)
        return self._answer(question, products, outcome, answer)

    async def _ask_streamed(
        self,
        question: Question,
        products: Sequence[RetrievedProduct],
        emit: Callable[[str | None], None],
    ) -> tuple[LLMOutcome, str]:
        """`_ask` for a streamed completion: text goes to `emit` as it comes, then None.

        Cancelled (the reader left), it records nothing: that is no failure of the LLM.
        """
        started = time.perf_counter()
        self._in_flight += 1
        try:
            outcome, answer = await self._attempt(
                self._complete_streamed(question, products, emit), products
            )
        finally:
            self._in_flight -= 1
        emit(None)
        self._record(outcome, answer, started)
        return outcome, answer

    def _record(self, outcome: LLMOutcome, answer: str, started: float) -> None:
        if outcome in _ENDPOINT_OK:
            self.breaker.record_success()
        else:
            self.breaker.record_failure()
        record_llm_outcome(outcome)
        elapsed = time.perf_counter() - started
        if outcome == "ok":
            logger.debug("LLM answered in %.2fs", elapsed)
        else:
            logger.warning(
                "LLM answer unusable (%s after %.2fs: %s); answering extractively",
                outcome,
                elapsed,
                answer,
            )

    @staticmethod
    def _answer(
        question: Question, products: Sequence[RetrievedProduct], outcome: LLMOutcome, answer: str
    ) -> Recommendation:
        if outcome == "ok":
            return Recommendation(answer, "openai", False, cited_ids(answer))
        return extractive_recommendation(question, products, reason=outcome)

    async def _attempt(
        self, call: Awaitable[str], products: Sequence[RetrievedProduct]
    ) -> tuple[LLMOutcome, str]:
        """("ok", the answer) or (what went wrong, a description for the log)."""
        try:
            async with asyncio.timeout(self.deadline_seconds):
                answer = await call
        except (TimeoutError, openai.APIError, httpx2.TransportError, StreamCut) as err:
            return _classify(err), repr(err)
        except Exception as err:  # a malformed response must not turn into a 500
            logger.exception("LLM call failed unexpectedly")
            return "unexpected_error", repr(err)
        if not answer:
            return "empty", "empty answer"
        unknown = unknown_references(answer, (p.id for p in products))
        if unknown:
            return "ungrounded", f"answer names products that were not retrieved: {sorted(unknown)}"
        return "ok", answer

    async def _complete(self, question: Question, products: Sequence[RetrievedProduct]) -> str:
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=build_messages(question, products),
            max_tokens=MAX_ANSWER_TOKENS,
        )
        if not response.choices:
            return ""
        return (response.choices[0].message.content or "").strip()

    async def _complete_streamed(
        self,
        question: Question,
        products: Sequence[RetrievedProduct],
        emit: Callable[[str | None], None],
    ) -> str:
        """The streamed completion, emitted as it comes and returned whole; stripped as
        `_complete`'s is, so both give the same text for the same completion. Read by
        app/llm/completion_stream.py: one emit per read of the body, not per token."""
        request = self._client.chat.completions.with_streaming_response.create(
            model=self.model,
            messages=build_messages(question, products),
            max_tokens=MAX_ANSWER_TOKENS,
            stream=True,
        )
        text: list[str] = []
        finished = False
        held = ""  # whitespace not sent yet: at the end it is stripped
        async with request as response:
            async for piece, finish in completion_deltas(response, self._ticker):
                finished = finished or finish
                if not piece:
                    continue
                held += piece
                if not text:
                    held = held.lstrip()
                body = held.rstrip()
                if body:
                    text.append(body)
                    emit(body)
                    held = held[len(body) :]
        if not finished:
            raise StreamCut("the stream ended before the answer did (no finish_reason)")
        return "".join(text)


async def _joined(pieces: asyncio.Queue[str | None]) -> str | None:
    """The next piece joined with those already waiting (one event for all, when the reader
    fell behind); None once the stream has ended."""
    piece = await pieces.get()
    while piece is not None and not pieces.empty():
        following = pieces.get_nowait()
        if following is None:
            pieces.put_nowait(None)  # the end, for the next call
            break
        piece += following
    return piece


class StreamCut(Exception):
    """A streamed completion ended without its finish_reason: the answer is incomplete."""


def _skip(
    question: Question, products: Sequence[RetrievedProduct], reason: SkipReason
) -> Recommendation:
    # Counted, never logged per request: while the breaker is open that is every request.
    record_llm_skipped(reason)
    return extractive_recommendation(question, products, reason=reason)


def _classify(err: BaseException) -> LLMFailure:
    # APITimeoutError is a subclass of APIConnectionError: test it first.
    if isinstance(err, TimeoutError | openai.APITimeoutError | httpx2.TimeoutException):
        return "timeout"
    if isinstance(err, openai.RateLimitError):
        return "rate_limited"
    if isinstance(err, openai.InternalServerError):
        return "server_error"
    # A stream broken after its first bytes surfaces as the error of the client's HTTP
    # library (httpx2 since openai 3), not openai's: app/llm/completion_stream.py reads it.
    if isinstance(err, openai.APIConnectionError | httpx2.TransportError | StreamCut):
        return "connection_error"
    return "api_error"
