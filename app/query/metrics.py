"""How queries were parsed, on the default Prometheus registry (exposed by `/metrics`)."""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import Counter

# offline: the rules (no LLM configured); llm_ok: the LLM's parse was used; llm_rejected:
# it answered but failed validation; llm_failed: no usable answer (timeout, HTTP error).
ParseOutcome = Literal["offline", "llm_ok", "llm_rejected", "llm_failed"]
PARSE_OUTCOMES: tuple[ParseOutcome, ...] = get_args(ParseOutcome)

QUERY_PARSES = Counter(
    "query_parses", "Query constraint parses by outcome (app/query).", ["outcome"]
)
for _outcome in PARSE_OUTCOMES:
    QUERY_PARSES.labels(outcome=_outcome)


def record_parse(outcome: ParseOutcome) -> None:
    QUERY_PARSES.labels(outcome=outcome).inc()
