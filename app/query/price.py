"""Price bounds in words: "under $100", "50–100 euros", "between 50 and 100", "around ₹2000",
"$50 budget", "70 is my limit".

A number is read as a price only when something says so: a currency sign or word next to
it, or a bound word before it ("under", "at least") or after it ("or less"), or a budget
word within a few words of it (app/query/budget.py), and nothing says it is something
else (app/query/amounts.py: "under 2 kg", "a kid under 10", "from 2 kids"). The
vocabulary is data: phrasebook.json.
"""

from __future__ import annotations

import logging
import re

from app.query.amounts import Amount, AmountScanner, PriceMatch, cue_after, cue_before
from app.query.budget import BudgetWindow
from app.query.phrasebook import Phrasebook, alternation
from app.query.types import Constraint

logger = logging.getLogger(__name__)
_WORDS = re.compile(r"\w")


class PriceParser:
    def __init__(self, book: Phrasebook) -> None:
        self.book = book
        self.amounts = AmountScanner(book)
        self.window = BudgetWindow(book, self.amounts)
        self._upper = cue_before(book.upper_bound)
        self._upper_currency = cue_before(book.upper_bound_currency_only)
        self._lower = cue_before(book.lower_bound)
        self._approx = cue_before(book.approximately)
        self._upper_after = cue_after(book.upper_bound_after)
        self._lower_after = cue_after(book.lower_bound_after)
        self._opener = cue_before(book.range_openers)
        self._joiner = re.compile(rf"^\s*(?:{alternation(book.range_joiners)})\s*$", re.I)

    def find(self, text: str) -> list[PriceMatch]:
        """Every price phrase in `text`, in order of appearance."""
        amounts = self.amounts.find(text)
        # What each amount was heard as (a range under both of its amounts).
        heard: list[PriceMatch | None] = [None] * len(amounts)
        i = 0
        while i < len(amounts):
            if i + 1 < len(amounts):
                pair = self._range(text, amounts[i], amounts[i + 1])
                if pair is not None:
                    heard[i] = heard[i + 1] = pair
                    i += 2
                    continue
            following = amounts[i + 1] if i + 1 < len(amounts) else None
            heard[i] = self._single(text, amounts[i], following)
            i += 1
        heard = self.window.apply(text, amounts, heard)
        found: list[PriceMatch] = []
        for m in heard:
            if m is not None and (not found or found[-1] is not m):
                found.append(m)
        return found

    def _range(self, text: str, a: Amount, b: Amount) -> PriceMatch | None:
        joiner = self._joiner.match(text[a.end : b.start])
        if joiner is None or a.value == b.value:
            return None
        opener = self._opener.search(text[: a.start])
        between = opener is not None and opener.group(0).strip().lower().startswith("between")
        if a.value > b.value and not between:
            return None  # "between 200 and 100" is the range either way round; "200-100" none
        start = opener.start() if opener else a.start
        if joiner.group(0).strip().lower() == "and" and not between:
            return None  # "2 and 100" without "between" is a list, not a range
        currency = b.currency or a.currency
        # Two bare numbers joined by a plain hyphen are a size, a fraction or a model number
        # on real catalogs ("single hung 32-46", "1-5/8 drywall screws", "000-767-816"):
        # such a range is a price only with a currency or a word that opens a range.
        # Typed prose ("kettle 50–100", "50 to 100") keeps its reading.
        if currency is None and opener is None and joiner.group(0).strip() == "-":
            return None
        if currency is None and self.amounts.is_bare_non_price(text, b, start):
            return None
        low, high = sorted((a.value, b.value))
        return PriceMatch(low, high, currency, start, b.end, "range", ((start, b.end),))

    def _single(self, text: str, a: Amount, following: Amount | None) -> PriceMatch | None:
        head = text[: a.start]
        # The bound words after the amount, by direction (upper first): "or less", "and up".
        after: dict[bool, int] = {}
        for cue, is_upper in ((self._upper_after, True), (self._lower_after, False)):
            m = cue.match(text[a.end :])
            if m is None:
                continue
            # "for 4 max $200": "max" is the next amount's; a bare number keeps no claim on it.
            end = a.end + m.end()
            taken = following is not None and not text[end : following.start].strip()
            if a.currency is not None or not taken:
                after[is_upper] = end
        approx = self._approx.search(head)
        if approx:
            if self.amounts.is_bare_non_price(text, a, approx.start()):
                return None
            band = self.book.around_band
            low, high = round(a.value * (1 - band), 2), round(a.value * (1 + band), 2)
            start = approx.start()
            return PriceMatch(low, high, a.currency, start, a.end, "around", ((start, a.end),))
        # A bound word after the amount joins the phrase: "for $30 or cheaper". The longest
        # bound phrase before it wins: "no less than 30" is a floor, not "less than 30".
        directions = ((self._upper, True), (self._lower, False))
        cues = [(m, is_upper) for cue, is_upper in directions if (m := cue.search(head))]
        for m, is_upper in sorted(cues, key=lambda c: c[0].start()):
            if not self.amounts.is_bare_non_price(text, a, m.start()):
                return bound(a, is_upper, m.start(), after.get(is_upper, a.end))
        if a.currency is not None:
            m = self._upper_currency.search(head)
            if m:
                return bound(a, True, m.start(), after.get(True, a.end))
        for is_upper, end in after.items():
            if not self.amounts.is_bare_non_price(text, a, a.start):
                return bound(a, is_upper, a.start, end)
        if a.currency is not None and not _WORDS.search(text[: a.start] + text[a.end :]):
            # A price and nothing else ("$50", "50 dollars") is what the shopper can spend:
            # by its words "50 dollars" was a kind of product the shop lacked.
            return bound(a, True, a.start, a.end)
        return None


def bound(a: Amount, is_upper: bool, start: int, end: int) -> PriceMatch:
    if is_upper:
        return PriceMatch(None, a.value, a.currency, start, end, "upper", ((start, end),))
    return PriceMatch(a.value, None, a.currency, start, end, "lower", ((start, end),))


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
