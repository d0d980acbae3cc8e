"""What a shopper wants and nothing else: "over ear headphones only", "only wireless ones",
"I only want red ones". By their words the open-ear swimming headphones matched "over ear
headphones only" in every word but "over", and were shown with the over-ear ones.

The words "only" bounds (the phrasebook's `restricting_words`) must all be in a product's
name (each in one of its plain forms; "Over-Ear" is "over", "ear"): after it up to a
comma or a function word, or, when it ends the text, before it back to the start, a comma
or a function word. Determiners, words that never name a kind ("want", "ones") and a room
asked for ("2 person": app/query/capacity.py judges that) are not required. A function
word at the far end may start a compound of the names ("over ear", "in ear"): that
reading comes first, the one without it second. When the best match's name uses a
reading (the first that it does), the relevant products whose names use it are kept;
otherwise all are. So "only" takes away, never empties a page the words fill, and never
brings up what the words ranked below: "headphones for running only" kept two running
shoes, the only names saying "running" among the relevant products, until the best
match had to say it too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.core.words import CLAUSE_BREAK, plain_forms, split_words
from app.query.capacity import RoomReader
from app.query.phrasebook import Phrasebook, alternation
from app.retrieval.types import RetrievedProduct

# Longer runs are a sentence, not a kind of product: nothing restricted.
MAX_WORDS = 4
_END = re.compile(r"[\s?!.]*")

# The readings of a restriction, longest first: each the words a name must use.
Readings = tuple[tuple[str, ...], ...]


class RestrictionReader:
    def __init__(self, book: Phrasebook) -> None:
        cues = alternation(book.restricting_words)
        self._cue = re.compile(rf"(?<![\w-])(?:{cues})(?![\w-])", re.I)
        self._function = {w.lower() for w in book.function_words}
        self._skipped = {
            w.lower() for w in (*book.determiners, *book.not_kind(), *book.followup_trailing)
        }
        self._rooms = RoomReader(book)

    def asked(self, text: str) -> Readings:
        """What `text` restricts the names to (see the module), longest reading first; ()
        when nothing."""
        unsaid: set[str] | None = None  # the room's words, read once a cue is found
        for cue in self._cue.finditer(text):
            if unsaid is None:
                room = self._rooms.asked(text)
                unsaid = set(split_words(room.text)) if room is not None else set()
            after = text[cue.end() :]
            forward = not _END.fullmatch(after)
            if forward:
                tokens = split_words(CLAUSE_BREAK.split(after)[0])
            else:
                tokens = split_words(CLAUSE_BREAK.split(text[: cue.start()])[-1])[::-1]
            readings = self._readings(tokens, unsaid, forward)
            if readings:
                return readings
        return ()

    def _readings(self, tokens: list[str], unsaid: set[str], forward: bool) -> Readings:
        """The words of the run next to the cue (`tokens` walk away from it), and first the
        same with the function word that starts it as a compound: right after the cue
        ("only over ear ones"), or where the run ends before it ("over ear headphones
        only")."""
        words: list[str] = []
        compound: str | None = None
        for token in tokens:
            if token in self._skipped or token in unsaid or not token.isalpha() or len(token) < 2:
                continue  # "kid's": "kid", "s"
            if token in self._function:
                if forward and not words and compound is None:
                    compound = token
                    continue
                if not forward and words:
                    compound = token
                break
            words.append(token)
        if not words or len(words) > MAX_WORDS:
            return ()
        plain = tuple(words) if forward else tuple(reversed(words))
        if compound is None:
            return (plain,)
        return ((compound, *plain), plain)

    def kept(
        self, products: Sequence[RetrievedProduct], readings: Readings
    ) -> list[RetrievedProduct]:
        """`products` (best first) whose names use the first reading the best one's name
        uses; all of them when it uses none."""
        for reading in readings:
            if products and _uses(products[0].name, reading):
                return [p for p in products if _uses(p.name, reading)]
        return list(products)


def _uses(name: str, words: Sequence[str]) -> bool:
    """Whether `name` uses each of `words` in one of its plain forms."""
    said = set(split_words(name))
    return all(said.intersection(plain_forms(w)) for w in words)
