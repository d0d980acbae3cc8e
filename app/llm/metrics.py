"""Counters for LLM calls, on the default Prometheus registry so `/metrics` can expose them."""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import Counter

LLMOutcome = Literal[
    "ok",
    "empty",
    "ungrounded",
    "timeout",
    "rate_limited",
    "server_error",
    "connection_error",
    "api_error",
    "unexpected_error",
]
LLM_OUTCOMES: tuple[LLMOutcome, ...] = get_args(LLMOutcome)

LLM_REQUESTS = Counter(
    "llm_requests",
    "LLM generation attempts by outcome; anything but 'ok' was answered extractively.",
    ["outcome"],
)
# Export every outcome at 0 so a dashboard's rate() has a series before the first failure.
for _outcome in LLM_OUTCOMES:
    LLM_REQUESTS.labels(outcome=_outcome)


def record_llm_outcome(outcome: LLMOutcome) -> None:
    LLM_REQUESTS.labels(outcome=outcome).inc()
