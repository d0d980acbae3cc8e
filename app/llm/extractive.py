"""The offline answer: a short recommendation assembled only from the retrieved products.

Deterministic and free of any model, so it is the default without an API key and the
fallback whenever the LLM fails or gives an answer that cannot be trusted.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Iterator, Sequence

from app.llm.grounding import unknown_references
from app.llm.types import AnswerPart, DegradedReason, Question, Recommendation
from app.retrieval.types import RetrievedProduct

MAX_ALTERNATIVES = 3
MAX_REASON_CHARS = 220
# A question about products shown that no sentence shares a word with ("which one has the
# best battery?" of "Expect about eight hours per charge."): the text nearest to it, this
# long at most, so the answer is in it without the reader being told it is absent.
MAX_ABOUT_CHARS = 400
NO_MATCH_MESSAGE = (
    "Sorry, no matching products were found for your request. "
    "Try different words or loosen the filters."
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Where a finished answer is cut into stream pieces: after each sentence's space.
_PIECE_END = re.compile(r"(?<=[.!?;] )")
_WORD = re.compile(r"[a-z0-9]+")
# Too common to say why a sentence fits the query.
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "good",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "need",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "want",
        "with",
        "you",
        "your",
    }
)


# Words of a question about products shown that name no quality of theirs: "compare the
# first two", "which one is best?" ask about everything a product says.
_ABOUT_WORDS = frozenset(
    {
        "best",
        "better",
        "between",
        "both",
        "compare",
        "difference",
        "differences",
        "first",
        "last",
        "one",
        "ones",
        "second",
        "them",
        "third",
        "three",
        "two",
        "versus",
        "vs",
        "which",
    }
)


class ExtractiveGenerator:
    """Builds the answer from the retrieved products; never names anything else."""

    async def generate(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> Recommendation:
        return extractive_recommendation(question, products)

    def stream(
        self, question: Question, products: Sequence[RetrievedProduct]
    ) -> AsyncGenerator[AnswerPart, None]:
        return replay(extractive_recommendation(question, products))

    async def aclose(self) -> None:
        return None


async def replay(answer: Recommendation) -> AsyncGenerator[AnswerPart, None]:
    """A finished answer as a stream: its message in sentence pieces, then the answer."""
    for piece in _PIECE_END.split(answer.message):
        if piece:
            yield piece
    yield answer


def extractive_recommendation(
    question: Question,
    products: Sequence[RetrievedProduct],
    *,
    reason: DegradedReason | None = None,
) -> Recommendation:
    """Top pick with a reason quoted from its best chunk, then up to three alternatives; in
    the `nearest` framing the closest products, said to be that; in the `about` framing
    (a question about products shown) each product with its sentence nearest the question.

    Args:
        question: the shopper's request; its words only choose which sentences to quote.
        products: retrieved products, best first.
        reason: why this stands in for an LLM answer (the answer is then `degraded`);
            None when the extractive answer is the intended one.
    """
    degraded = reason is not None
    if not products:
        return Recommendation(NO_MATCH_MESSAGE, "extractive", degraded, [], reason)
    if question.framing == "about":
        return _about(question.text, products, reason)
    nearest = question.framing == "nearest"
    # Products outside the price bounds are never the top pick while one fits.
    fitting = [p for p in products if not p.outside_filters] or list(products)
    outside = [p for p in products if p.outside_filters and p not in fitting]
    top, alternatives = fitting[0], fitting[1 : 1 + MAX_ALTERNATIVES]
    closest = outside[: max(MAX_ALTERNATIVES - len(alternatives), 1)] if outside else []
    allowed = [p.id for p in products]
    parts = [f"{'Closest' if nearest else 'Top pick'}: {_label(top)}."]
    why = _best_sentence(question.text, top.matched_content[:1], allowed)
    if why:
        parts.append(why if nearest else f"Why: {why}")
    if alternatives:
        also = "Also close" if nearest else "Also consider"
        parts.append(f"{also}: " + "; ".join(_label(p) for p in alternatives) + ".")
    if closest:
        parts.append(
            "Closest outside your price range: " + "; ".join(_label(p) for p in closest) + "."
        )
    cited = [top.id, *(p.id for p in alternatives), *(p.id for p in closest)]
    return Recommendation(" ".join(parts), "extractive", degraded, cited, reason)


def _about(
    asked: str, products: Sequence[RetrievedProduct], reason: DegradedReason | None
) -> Recommendation:
    """Each product asked about (at most MAX_ALTERNATIVES + 1) with its sentence that shares
    the most words with the question, or else its text nearest to the question (its first
    matched chunk: app.retrieval's `about` orders them so), said to be so: "is it
    waterproof?" of an e-reader whose text never says it was answered with its screen, as
    if that were a yes."""
    allowed = [p.id for p in products]
    shown = products[: MAX_ALTERNATIVES + 1]
    # "is the second one waterproof?" asks about "waterproof"; "compare them" about all.
    specific = [w for w in dict.fromkeys(_WORD.findall(asked.lower())) if _asks_about(w)]
    parts = []
    for p in shown:
        said = _best_sentence(" ".join(specific), p.matched_content, allowed, min_overlap=1)
        if said is None:
            text = _excerpt(p.matched_content[:1], allowed)
            said = text or "no description."
            if text and specific:
                said = f'its description does not mention "{" ".join(specific)}". It says: {text}'
        parts.append(f"{_label(p)}: {said}")
    cited = [p.id for p in shown]
    return Recommendation(" ".join(parts), "extractive", reason is not None, cited, reason)


def _asks_about(word: str) -> bool:
    """Whether a word of a question about products names what is asked of them."""
    return word not in _STOPWORDS and word not in _ABOUT_WORDS


def _label(product: RetrievedProduct) -> str:
    details = [d for d in (product.brand, _price(product.price)) if d]
    suffix = f" ({', '.join(details)})" if details else ""
    return f"{product.name}{suffix} [id:{product.id}]"


def _price(price: float | None) -> str | None:
    return None if price is None else f"${price:,.2f}"


def _best_sentence(
    query: str, chunks: Sequence[str], allowed_ids: list[int], min_overlap: int = 0
) -> str | None:
    """The sentence sharing the most words with the query (earliest on ties), if it shares
    at least `min_overlap`.

    Sentences that name a product outside the retrieved set are skipped: seller text may
    carry "recommend product 999", and quoting it would put 999 in the answer.
    """
    query_words = _words(query)
    best: tuple[int, str] | None = None
    for sentence in _sentences(chunks, allowed_ids):
        overlap = _overlap(query_words, _words(sentence))
        if best is None or overlap > best[0]:
            best = (overlap, sentence)
    return None if best is None or best[0] < min_overlap else _shorten(best[1])


def _excerpt(chunks: Sequence[str], allowed_ids: list[int]) -> str | None:
    """The chunks' sentences that name no other product, up to MAX_ABOUT_CHARS."""
    sentences = list(_sentences(chunks, allowed_ids))
    return _shorten(" ".join(sentences), MAX_ABOUT_CHARS) if sentences else None


def _sentences(chunks: Sequence[str], allowed_ids: list[int]) -> Iterator[str]:
    """The chunks' sentences, except those naming a product outside `allowed_ids`."""
    for chunk in chunks:
        for sentence in _SENTENCE_END.split(" ".join(chunk.split())):
            if sentence and not unknown_references(sentence, allowed_ids):
                yield sentence


def _overlap(query_words: set[str], sentence_words: set[str]) -> int:
    """Query words the sentence shares, counting "swim" for "swimming" (a shared 4+ prefix)."""
    return sum(
        1
        for q in query_words
        if any(
            q == w or (min(len(q), len(w)) >= 4 and (q.startswith(w) or w.startswith(q)))
            for w in sentence_words
        )
    )


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def _shorten(sentence: str, limit: int = MAX_REASON_CHARS) -> str:
    if len(sentence) <= limit:
        return sentence if sentence[-1] in ".!?" else sentence + "."
    cut = sentence[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"
