"""Amounts in the shopper's words ("$50", "1,200 rupees", "fifty dollars", "US$75", "100$")
and the signs that a bare number is not money: a unit after it ("2 kg"), a "k" ("10k"), a
compound ("3-burner"), a thing it counts ("2 kids"), age or size talk before ("a kid under
10"). Ordinals ("50th") are not amounts at all. What the bounds are: app/query/price.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from app.query.phrasebook import Phrasebook, alternation

# How many words before a bound word are searched for age/size talk ("a kid under 10").
CONTEXT_WORDS = 3

PriceKind = Literal["range", "around", "lower", "upper"]


@dataclass(frozen=True, slots=True)
class Amount:
    value: float
    currency: str | None
    suffixed_k: bool
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PriceMatch:
    """Bounds heard in one phrase: the phrase's span in the query, and the pieces of it that
    are price words (two when a budget word stands apart: "budget for a tent is $200")."""

    min_price: float | None
    max_price: float | None
    currency: str | None
    start: int
    end: int
    kind: PriceKind
    pieces: tuple[tuple[int, int], ...]


def cue_before(phrases: list[str]) -> re.Pattern[str]:
    """A phrase that ends where the text ends (the text before an amount)."""
    return re.compile(rf"(?<![\w])(?:{alternation(phrases)})\s*$", re.IGNORECASE)


def cue_after(phrases: list[str]) -> re.Pattern[str]:
    """A phrase that starts the text (the text after an amount)."""
    return re.compile(rf"^\s*(?:{alternation(phrases)})(?![\w])", re.IGNORECASE)


class AmountScanner:
    def __init__(self, book: Phrasebook) -> None:
        self.book = book
        codes = [s for s in book.currency_symbols if s[0].isalpha()]
        signs = [s for s in book.currency_symbols if not s[0].isalpha()]
        words = list(book.currency_words)
        self._number_words = {w.lower(): float(v) for w, v in book.number_words.items()}
        spelled = alternation(list(self._number_words))
        self._amount = re.compile(
            rf"(?:(?P<pre>(?<![\w])(?:{alternation(codes)})|(?:{alternation(signs)}))\s?)?"
            r"(?<![\d.,])(?P<num>(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?=k?(?![\w]))"
            rf"|(?<![\w-])(?:{spelled})(?![\w-]))(?P<k>k(?![\w]))?"
            rf"(?:\s?(?P<post>(?:{alternation(signs)})|(?:{alternation(words + codes)})(?![\w])))?",
            re.IGNORECASE,
        )
        self._unit = re.compile(
            rf"^\s*-?\s*(?:{alternation(book.number_units_not_price)})(?![\w])", re.I
        )
        # "50 or less", "50 limit": the words after a price, not a thing it counts.
        self._bound_after = cue_after(
            book.upper_bound_after + book.lower_bound_after + book.budget_words
        )
        self._context = {w.lower() for w in book.not_price_context_before}
        # "of" follows counts ("3 of us"), never a price. A conversation's fillers may end
        # one ("under 200 then", "under 50 please") and count nothing.
        fillers = set(book.followup_trailing) - {"one", "ones", "version", "versions", "options"}
        self._followers = ({w.lower() for w in book.function_words} | fillers | {"each"}) - {"of"}

    def find(self, text: str) -> list[Amount]:
        """Every amount in `text`, in order."""
        out: list[Amount] = []
        for m in self._amount.finditer(text):
            # A number glued to a word ("mp3", "x100") is part of that word.
            if m.group("pre") is None and m.start() > 0 and text[m.start() - 1].isalpha():
                continue
            currency = self.book.currency_of(m.group("pre") or m.group("post") or "")
            num = m.group("num").lower()
            value = self._number_words.get(" ".join(num.split())) or float(num.replace(",", ""))
            if m.group("k"):
                value *= 1000
            out.append(Amount(value, currency, bool(m.group("k")), m.start(), m.end()))
        return out

    def is_measure(self, text: str, a: Amount) -> bool:
        """A bare number that measures or names something: "2 kg", "10k", "3-burner"."""
        if a.currency is not None:
            return False
        rest = text[a.end :]
        return a.suffixed_k or bool(self._unit.match(rest) or re.match(r"-[^\W\d_]", rest))

    def counts_something(self, text: str, a: Amount) -> bool:
        """A bare number followed by a content word counts that thing ("from 2 kids", "over
        2 nights"); a price is followed by nothing, a function word or "or less"."""
        if a.currency is not None:
            return False
        rest = text[a.end :]
        nxt = re.match(r"\s*([\w'-]+)", rest)
        return (
            nxt is not None
            # "under 40 that's not plastic": "that's" follows as "that" does.
            and nxt.group(1).lower().split("'")[0] not in self._followers
            and not self._bound_after.match(rest)
        )

    def age_or_size_before(self, text: str, position: int) -> bool:
        """Age or size talk just before `position` ("a kid under 10", "dogs over 20", "a kid
        who is under 10"). A thing named in between takes the bound: "kids toys under 30"
        prices the toys."""
        before = re.findall(r"[\w-]+", text[:position].lower())[-CONTEXT_WORDS:]
        for word in reversed(before):
            if word in self._context:
                return True
            if word not in self._followers:
                return False
        return False

    def is_bare_non_price(self, text: str, a: Amount, cue_start: int) -> bool:
        """A number with no currency that is something else, with a bound word at `cue_start`."""
        if a.currency is not None:
            return False
        return (
            self.is_measure(text, a)
            or self.counts_something(text, a)
            or self.age_or_size_before(text, cue_start)
        )
