"""LLM metrics: call outcomes and skipped calls (default registry), live state (per generator).

Counters sit on the default Prometheus registry so `/metrics` exposes them. The breaker
state and the calls in flight belong to one generator, so they are read from it at scrape
time by `LLMStateCollector`, which the app registers in its own registry: two apps in one
process (tests) never overwrite each other's gauges.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, Protocol, get_args

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.llm.breaker import BREAKER_STATES, BreakerState
from app.llm.types import LLMFailure

LLMOutcome = Literal["ok", LLMFailure]
LLM_OUTCOMES: tuple[LLMOutcome, ...] = get_args(LLMOutcome)
SkipReason = Literal["breaker_open", "at_capacity"]
SKIP_REASONS: tuple[SkipReason, ...] = get_args(SkipReason)

LLM_REQUESTS = Counter(
    "llm_requests",
    "LLM generation attempts by outcome; anything but 'ok' was answered extractively.",
    ["outcome"],
)
LLM_SKIPPED = Counter(
    "llm_skipped",
    "Requests answered extractively without calling the LLM (breaker open, or at the cap).",
    ["reason"],
)
# Export every label at 0 so a dashboard's rate() has a series before the first event.
for _outcome in LLM_OUTCOMES:
    LLM_REQUESTS.labels(outcome=_outcome)
for _reason in SKIP_REASONS:
    LLM_SKIPPED.labels(reason=_reason)


def record_llm_outcome(outcome: LLMOutcome) -> None:
    LLM_REQUESTS.labels(outcome=outcome).inc()


def record_llm_skipped(reason: SkipReason) -> None:
    LLM_SKIPPED.labels(reason=reason).inc()


class LLMState(Protocol):
    @property
    def breaker_state(self) -> BreakerState: ...

    @property
    def in_flight(self) -> int: ...

    @property
    def max_in_flight(self) -> int: ...


class LLMStateCollector(Collector):
    """`llm_breaker_state{state}` (1 for the current state) and the in-flight calls."""

    def __init__(self, llm: LLMState) -> None:
        self.llm = llm

    def collect(self) -> Iterator[Metric]:
        state = GaugeMetricFamily(
            "llm_breaker_state",
            "Circuit breaker state of the LLM endpoint (1: the current one).",
            labels=["state"],
        )
        current = self.llm.breaker_state
        for s in BREAKER_STATES:
            state.add_metric([s], 1.0 if s == current else 0.0)
        yield state
        yield GaugeMetricFamily(
            "llm_in_flight", "LLM calls waiting for an answer now.", value=self.llm.in_flight
        )
        yield GaugeMetricFamily(
            "llm_max_in_flight",
            "Cap on LLM calls in flight; requests past it are answered extractively.",
            value=self.llm.max_in_flight,
        )
