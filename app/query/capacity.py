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

    @property
    def said(self) -> str:
        """The room in plain words, whatever the spelling asked: "4 people" for "a 4 person
        tent" (the answer read "room for 4 person")."""
        if self.count == 1:
            return f"1 {self.unit}"
        return f"{self.count} {'people' if self.unit == 'person' else self.unit + 's'}"


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

    def asked(self, text: str) -> Room | None:
        """The room `text` asks for; None when it names none, or two of one unit."""
        found = {
            Room(self._book.count_value(m.group(1)), self._units[m.group(2).lower()], m.group(0))
            for m in self._asked.finditer(text)
        }
        return next(iter(found)) if len(found) == 1 else None

    def stated(self, name: str, texts: Sequence[str], unit: str) -> int | None:
        """The room of `unit` a product states: its `name`'s, else that of the text it
        matched by (`texts`); None when neither states any."""
        room = self._stated(self._in_name, [name], unit)
        return room if room is not None else self._stated(self._in_text, texts, unit)

    def too_small(self, name: str, room: Room, texts: Sequence[str] = ()) -> bool:
        """Whether the product states room for fewer than `room` asks (see `stated`)."""
        stated = self.stated(name, texts, room.unit)
        return stated is not None and stated < room.count

    def enough(self, name: str, room: Room, texts: Sequence[str] = ()) -> bool:
        """Whether the product states room for at least what `room` asks (see `stated`)."""
        stated = self.stated(name, texts, room.unit)
        return stated is not None and stated >= room.count

    def holding(
        self, products: Sequence[RetrievedProduct], room: Room | None
    ) -> list[RetrievedProduct]:
        """`products` without those that say they hold fewer than `room`."""
        if room is None:
            return list(products)
        return [p for p in products if not self.too_small(p.name, room, p.matched_content)]

    def roomiest(self, products: Sequence[RetrievedProduct], room: Room) -> list[RetrievedProduct]:
        """`products` with the most room of `room`'s unit first (each room in their order;
        those that state none last)."""
        return sorted(
            products,
            key=lambda p: self.stated(p.name, p.matched_content, room.unit) or 0,
            reverse=True,
        )

    def _stated(self, pattern: re.Pattern[str], texts: Sequence[str], unit: str) -> int | None:
        """The most room of `unit` the first of `texts` that states any says (a range's top)."""
        for text in texts:
            counts = [
                max(self._book.count_value(c) for c in m.groups()[:-1] if c)
                for m in pattern.finditer(text)
                if self._units[m.groups()[-1].lower()] == unit
            ]
            if counts:
                return max(counts)
        return None
