"""How many a query asks room for ("a tent for 4 people", "a four-person tent", "a game
for 2 players"), and whether a product's name says it holds fewer.

Words rank a "2-Person Camping Tent" close to "a tent for 4 people": every word but the
count matches, and a count alone is no word match (app.store.core). A shop assistant would
never offer it, so a product whose name states a room for fewer of the unit asked for is
not a match. Names state room as a count or a range before the unit ("4-Person", "2-6
Players", "3 Seater"); a name that states none (or another unit) is not judged, and a
bigger one fits (a 6-person tent holds four). The units and their spellings are the
phrasebook's `capacity_units`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.query.phrasebook import Phrasebook, alternation
from app.retrieval.types import RetrievedProduct


@dataclass(frozen=True, slots=True)
class Room:
    """Room for `count` of `unit` (the unit's one spelling: "person" for "people")."""

    count: int
    unit: str


class RoomReader:
    def __init__(self, book: Phrasebook) -> None:
        self._units = {k.lower(): v for k, v in book.capacity_units.items()}
        self._counts = {k.lower(): v for k, v in book.count_words.items()}
        units = alternation(list(self._units))
        counts = alternation(list(self._counts))
        # "4 people", "4-person", "four people".
        self._asked = re.compile(rf"(?<![\w.-])(\d+|{counts})\s*-?\s*({units})(?![\w-])", re.I)
        # "4-Person", "2-6 Players", "2 to 6 players".
        self._stated = re.compile(
            rf"(?<![\w.-])(\d+)(?:\s*(?:-|–|to)\s*(\d+))?\s*-?\s*({units})(?![\w-])", re.I
        )

    def asked(self, text: str) -> Room | None:
        """The room `text` asks for; None when it names none, or two of one unit."""
        found = {
            Room(self._count(m.group(1)), self._units[m.group(2).lower()])
            for m in self._asked.finditer(text)
        }
        return next(iter(found)) if len(found) == 1 else None

    def too_small(self, name: str, room: Room) -> bool:
        """Whether `name` states room for fewer than `room` asks (in the same unit)."""
        for m in self._stated.finditer(name):
            if self._units[m.group(3).lower()] == room.unit:
                return int(m.group(2) or m.group(1)) < room.count
        return False

    def holding(
        self, products: Sequence[RetrievedProduct], room: Room | None
    ) -> list[RetrievedProduct]:
        """`products` without those whose names say they hold fewer than `room`."""
        if room is None:
            return list(products)
        return [p for p in products if not self.too_small(p.name, room)]

    def _count(self, word: str) -> int:
        return int(word) if word.isdigit() else self._counts[word.lower()]
