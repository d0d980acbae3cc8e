"""The written answer and why it may be degraded (generation → HTTP)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GeneratorName = Literal["openai", "extractive"]
# Why an LLM answer was not usable (the call was made and came back with this).
LLMFailure = Literal[
    "empty",
    "ungrounded",
    "timeout",
    "rate_limited",
    "server_error",
    "connection_error",
    "api_error",
    "unexpected_error",
]
# Why an answer is extractive although an LLM is configured: a failed call, or no call at
# all because the circuit breaker is open or the cap on in-flight calls is reached.
DegradedReason = Literal[LLMFailure, "breaker_open", "at_capacity"]


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The written answer. `degraded` is true when the LLM was meant to answer but could not,
    and `reason` then says why."""

    message: str
    generator: GeneratorName
    degraded: bool
    cited_ids: list[int]
    reason: DegradedReason | None = None


# What a streamed answer yields: pieces of text as they are written, then the checked
# answer (whose message is the concatenation of the pieces unless the text was replaced).
AnswerPart = str | Recommendation
