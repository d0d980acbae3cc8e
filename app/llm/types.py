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


# How the products relate to the request: what it asked for (`matches`), the closest the
# shop has when nothing matches closely or it lacks the kind asked for (`nearest`), or
# products already shown that a question is about (`about`).
AnswerFraming = Literal["matches", "nearest", "about"]


@dataclass(frozen=True, slots=True)
class Question:
    """What the written answer answers. `text`: the shopper's words. `notes`: what the
    words alone do not say and the LLM must know (what a follow-up searches for now, that
    the products were shown before, a kind the shop lacks)."""

    text: str
    notes: tuple[str, ...] = ()
    framing: AnswerFraming = "matches"

    @property
    def prompt(self) -> str:
        """The request as the LLM reads it: the words, then the notes in brackets."""
        words = self.text.strip()
        return f"{words} ({'; '.join(self.notes)})" if self.notes else words


# What a streamed answer yields: pieces of text as they are written, then the checked
# answer (whose message is the concatenation of the pieces unless the text was replaced).
AnswerPart = str | Recommendation
