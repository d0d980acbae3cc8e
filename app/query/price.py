"""Price bounds in words: "under $100", "50–100 euros", "between 50 and 100", "around ₹2000".

A number is read as a price only when something says so: a currency sign or word next to
it, or a bound word before it ("under", "at least") or after it ("or less") with no unit
or other noun after the number ("under 2 kg", "over 30 minutes", "from 2 kids") and no
age or size talk just before ("a kid under 10"). Ordinals and suffixed numbers ("50th", "10k") are
not amounts at all. The vocabulary is data: phrasebook.json.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from app.query.phrasebook import Phrasebook, alternation
from app.query.types import Constraint

logger = logging.getLogger(__name__)

# How many words before a bound word are searched for age/size talk ("a kid under 10").
CONTEXT_WORDS = 3


@dataclass(frozen=True, slots=True)
class Amount:
    value: float
    currency: str | None
    suffixed_k: bool
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PriceMatch:
    """Bounds heard in one phrase, with the phrase's span in the query."""

    min_price: float | None
    max_price: float | None
    currency: str | None
    start: int
    end: int


def _cue_before(phrases: list[str]) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w])(?:{alternation(phrases)})\s*$", re.IGNORECASE)


def _cue_after(phrases: list[str]) -> re.Pattern[str]:
    return re.compile(rf"^\s*(?:{alternation(phrases)})(?![\w])", re.IGNORECASE)


class PriceParser:
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
        self._upper = _cue_before(book.upper_bound)
        self._upper_currency = _cue_before(book.upper_bound_currency_only)
        self._lower = _cue_before(book.lower_bound)
        self._approx = _cue_before(book.approximately)
        self._upper_after = _cue_after(book.upper_bound_after)
        self._lower_after = _cue_after(book.lower_bound_after)
        self._opener = _cue_before(book.range_openers)
        self._joiner = re.compile(rf"^\s*(?:{alternation(book.range_joiners)})\s*$", re.I)
        self._unit = re.compile(
            rf"^\s*-?\s*(?:{alternation(book.number_units_not_price)})(?![\w])", re.I
        )
        self._context = {w.lower() for w in book.not_price_context_before}
        # "of" follows counts ("3 of us"), never a price.
        self._followers = {w.lower() for w in book.function_words} - {"of"}

    def find(self, text: str) -> list[PriceMatch]:
        """Every price phrase in `text`, in order of appearance."""
        amounts = [a for a in self._amounts(text) if a is not None]
        found: list[PriceMatch] = []
        i = 0
        while i < len(amounts):
            if i + 1 < len(amounts):
                pair = self._range(text, amounts[i], amounts[i + 1])
                if pair is not None:
                    found.append(pair)
                    i += 2
                    continue
            single = self._single(text, amounts[i])
            if single is not None:
                found.append(single)
            i += 1
        return found

    def _amounts(self, text: str) -> list[Amount | None]:
        out: list[Amount | None] = []
        for m in self._amount.finditer(text):
            # A number glued to a word ("mp3", "x100") is part of that word.
            if m.group("pre") is None and m.start() > 0 and text[m.start() - 1].isalpha():
                continue
            currency = self.book.currency_of(m.group("pre") or m.group("post") or "")
            num = m.group("num").lower()
            words = " ".join(num.split())
            value = self._number_words.get(words) or float(num.replace(",", ""))
            if m.group("k"):
                value *= 1000
            out.append(Amount(value, currency, bool(m.group("k")), m.start(), m.end()))
        return out

    def _is_bare_non_price(self, text: str, amount: Amount, cue_start: int) -> bool:
        """A number with no currency that is something else: "10k", "2 kg", "a kid under 10"."""
        if amount.currency is not None:
            return False
        rest = text[amount.end :]
        if amount.suffixed_k or self._unit.match(rest):
            return True
        # A bare number followed by a content word counts that thing ("from 2 kids",
        # "over 2 nights"); a price is followed by nothing, a function word or "or less".
        nxt = re.match(r"\s*([\w'-]+)", rest)
        if (
            nxt is not None
            and nxt.group(1).lower() not in self._followers
            and not (self._upper_after.match(rest) or self._lower_after.match(rest))
        ):
            return True
        before = re.findall(r"[\w-]+", text[:cue_start].lower())[-CONTEXT_WORDS:]
        return any(w in self._context for w in before)

    def _range(self, text: str, a: Amount, b: Amount) -> PriceMatch | None:
        joiner = self._joiner.match(text[a.end : b.start])
        if joiner is None or a.value >= b.value:
            return None
        opener = self._opener.search(text[: a.start])
        start = opener.start() if opener else a.start
        if joiner.group(0).strip().lower() == "and" and not (
            opener and opener.group(0).strip().lower().startswith("between")
        ):
            return None  # "2 and 100" without "between" is a list, not a range
        currency = b.currency or a.currency
        if currency is None and self._is_bare_non_price(text, b, start):
            return None
        return PriceMatch(a.value, b.value, currency, start, b.end)

    def _single(self, text: str, a: Amount) -> PriceMatch | None:
        head = text[: a.start]
        approx = self._approx.search(head)
        if approx:
            if self._is_bare_non_price(text, a, approx.start()):
                return None
            band = self.book.around_band
            low, high = round(a.value * (1 - band), 2), round(a.value * (1 + band), 2)
            return PriceMatch(low, high, a.currency, approx.start(), a.end)
        for cue, is_upper in ((self._upper, True), (self._lower, False)):
            m = cue.search(head)
            if m and not self._is_bare_non_price(text, a, m.start()):
                return self._bound(a, is_upper, m.start(), a.end)
        if a.currency is not None:
            m = self._upper_currency.search(head)
            if m:
                return self._bound(a, True, m.start(), a.end)
        for cue, is_upper in ((self._upper_after, True), (self._lower_after, False)):
            m = cue.match(text[a.end :])
            if m and not self._is_bare_non_price(text, a, a.start):
                return self._bound(a, is_upper, a.start, a.end + m.end())
        return None

    @staticmethod
    def _bound(a: Amount, is_upper: bool, start: int, end: int) -> PriceMatch:
        if is_upper:
            return PriceMatch(None, a.value, a.currency, start, end)
        return PriceMatch(a.value, None, a.currency, start, end)


def price_constraints(text: str, matches: list[PriceMatch]) -> list[Constraint]:
    """The first upper and first lower bound heard; none if they contradict each other."""
    low = next((m for m in matches if m.min_price is not None), None)
    high = next((m for m in matches if m.max_price is not None), None)
    if (
        low is not None
        and high is not None
        and low.min_price is not None
        and high.max_price is not None
        and low.min_price > high.max_price
    ):
        logger.info("contradictory price bounds in %r: ignored", text)
        return []
    out = []
    if low is not None and low.min_price is not None:
        out.append(Constraint("min_price", low.min_price, text[low.start : low.end], low.currency))
    if high is not None and high.max_price is not None:
        out.append(
            Constraint("max_price", high.max_price, text[high.start : high.end], high.currency)
        )
    return out
