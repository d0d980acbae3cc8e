"""How many a query asks room for ("a tent for 4 people", "a four-person tent", "a game
for 2 players"), and whether a product's name says it holds fewer.

Words rank a "2-Person Camping Tent" close to "a tent for 4 people": every word but the
count matches, and a count alone is no word match (app.store.core). A shop assistant would
never offer it, so a product whose name states a room for fewer of the unit asked for is
not a match. Names state room as a count or a range before the unit ("4-Person", "2-6
Players", "3 Seater"); where the name states none, the text the product matched by counts
only as a compound or a range ("a two-person tent", "for two to six players"), never a
loose mention ("two people can pitch it"). A product that states none (or only another
unit) is not judged, and a bigger one fits (a 6-person tent holds four). The units and
their spellings are the phrasebook's `capacity_units`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.query.phrasebook import Phrasebook, alternation
from app.retrieval.types import RetrievedProduct


@dataclass(frozen=True, slots=True)
class Room:
    """Room for `count` of `unit` (the unit's one spelling: "person" for "people"), asked
    for in `text` ("4 people")."""

    count: int
    unit: str
    text: str = field(default="", compare=False)
    # "only 2 person tents", "just the 2 person ones": that room and no other (a bigger
    # tent is no match then). The same room either way.
    exact: bool = field(default=False, compare=False)

    @property
    def said(self) -> str:
        """The room in plain words, whatever the spelling asked: "4 people" for "a 4 person
        tent" (the answer read "room for 4 person"); "exactly 4 people" when asked so."""
        exactly = "exactly " if self.exact else ""
        if self.count == 1:
            return f"{exactly}1 {self.unit}"
        return f"{exactly}{self.count} {'people' if self.unit == 'person' else self.unit + 's'}"


class RoomReader:
    def __init__(self, book: Phrasebook) -> None:
        self._book = book
        self._units = {k.lower(): v for k, v in book.capacity_units.items()}
        units = alternation(list(self._units))
        n = book.count()
        # "4 people", "4-person", "four people".
        self._asked = re.compile(rf"(?<![\w.-]){n}\s*-?\s*({units})(?![\w-])", re.I)
        # In a name: "4-Person", "4 Person", "2-6 Players", "2 to 6 Players".
        self._in_name = re.compile(
            rf"(?<![\w.-]){n}(?:\s*(?:-|–|to)\s*{n})?\s*-?\s*({units})(?![\w-])", re.I
        )
        # In a description only the compound or the range: "a two-person tent", "for two to
        # six players" (not "two people can pitch it").
        self._in_text = re.compile(
            rf"(?<![\w.-])(?:{n}-|{n}\s*(?:-|–|to)\s*{n}\s+)({units})(?![\w-])", re.I
        )
        # Room for that many and no other: "only 2-person", "just the 2 person ones", "only
        # for 4 people", "for exactly 4 people", "2 person tents only" (one word between at
        # most, not a function word: "for 2 people for only $50" asks a price). Each pattern
        # matches the cue alone, so `unmarked` takes out what `asked` read.
        cues = alternation(book.room_exact_words)
        function = alternation(book.function_words)
        word = rf"\s+(?!(?:{function})(?![\w-]))[^\W\d_][\w-]*"
        self._word_after = re.compile(word, re.I)
        self._cue_before = re.compile(rf"(?<![\w-])(?:{cues})\s+(?=(?:for\s+)?(?:the\s+)?$)", re.I)
        self._cue_after = re.compile(rf"^((?:{word})?)\s+(?:{cues})(?![\w-])", re.I)

    def asked(self, text: str) -> Room | None:
        """The room `text` asks for; None when it names none, or two of one unit."""
        found: dict[tuple[int, str], Room] = {}
        for m in self._asked.finditer(text):
            count, unit = self._book.count_value(m.group(1)), self._units[m.group(2).lower()]
            exact = bool(
                self._cue_before.search(text[: m.start()]) or self._cue_after.match(text[m.end() :])
            )
            held = found.get((count, unit))
            found[count, unit] = Room(count, unit, m.group(0), exact or bool(held and held.exact))
        return next(iter(found.values())) if len(found) == 1 else None

    def marked_exact(self, text: str, room: Room) -> str:
        """`text`, which asks `room` (not exactly), asking it exactly as `asked` reads it:
        the first of `room_exact_words` after the room and the word after it ("a tent 2
        person only", "a 2 person tent only in green")."""
        at = text.find(room.text)
        if at < 0:
            return text
        end = at + len(room.text)
        word = self._word_after.match(text[end:])
        end += word.end() if word else 0
        return f"{text[:end]} {self._book.room_exact_words[0]}{text[end:]}"

    def unmarked(self, text: str, room: Room) -> str:
        """`text`, which asks `room`, asking it no longer exactly: the cue beside it taken
        out ("bigger" after "a tent 2 person only" asks room for at least three)."""
        at = text.find(room.text)
        if at < 0:
            return text
        end = at + len(room.text)
        before = self._cue_before.sub("", text[:at], count=1)
        after = self._cue_after.sub(r"\1", text[end:], count=1)
        return f"{before}{room.text}{after}"

    def stated(self, name: str, texts: Sequence[str], unit: str) -> int | None:
        """The room of `unit` a product states: its `name`'s, else that of the text it
        matched by (`texts`); None when neither states any."""
        spans = self._stated(name, texts, unit)
        return max(high for _, high in spans) if spans else None

    def fits(self, name: str, room: Room, texts: Sequence[str] = ()) -> bool | None:
        """Whether the room the product states (see `stated`) holds `room`: at least that
        many, or with `room.exact` that many ("2-6 Players" holds exactly 4); None when it
        states none."""
        spans = self._stated(name, texts, room.unit)
        if not spans:
            return None
        if room.exact:
            return any(low <= room.count <= high for low, high in spans)
        return max(high for _, high in spans) >= room.count

    def misfits(self, name: str, room: Room, texts: Sequence[str] = ()) -> bool:
        """Whether the product states a room that does not hold `room` (see `fits`)."""
        return self.fits(name, room, texts) is False

    def holding(
        self, products: Sequence[RetrievedProduct], room: Room | None
    ) -> list[RetrievedProduct]:
        """`products` without those that say they do not hold `room` (fewer, or with
        `room.exact` another number)."""
        if room is None:
            return list(products)
        return [p for p in products if not self.misfits(p.name, room, p.matched_content)]

    def roomiest(self, products: Sequence[RetrievedProduct], room: Room) -> list[RetrievedProduct]:
        """`products` with the most room of `room`'s unit first (each room in their order;
        those that state none last)."""
        return sorted(
            products,
            key=lambda p: self.stated(p.name, p.matched_content, room.unit) or 0,
            reverse=True,
        )

    def _stated(self, name: str, texts: Sequence[str], unit: str) -> list[tuple[int, int]]:
        """The rooms of `unit` (lowest, highest) the name states, else the first of the
        texts that states any (see `stated`)."""
        return self._spans(self._in_name, [name], unit) or self._spans(self._in_text, texts, unit)

    def _spans(
        self, pattern: re.Pattern[str], texts: Sequence[str], unit: str
    ) -> list[tuple[int, int]]:
        """The rooms of `unit` the first of `texts` that states any says, each as (lowest,
        highest): a range's ends, or one count twice."""
        for text in texts:
            spans = []
            for m in pattern.finditer(text):
                if self._units[m.groups()[-1].lower()] == unit:
                    counts = [self._book.count_value(c) for c in m.groups()[:-1] if c]
                    spans.append((min(counts), max(counts)))
            if spans:
                return spans
        return []
