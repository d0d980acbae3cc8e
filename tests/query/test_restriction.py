"""What "only" restricts the names to (app/query/restriction.py)."""

from __future__ import annotations

import pytest

from app.query.phrasebook import load_phrasebook
from app.query.restriction import RestrictionReader
from app.retrieval.types import RetrievedProduct

READER = RestrictionReader(load_phrasebook())


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        # Before a trailing "only", back to a function word, which may start a compound.
        ("over ear headphones only", (("over", "ear", "headphones"), ("ear", "headphones"))),
        ("over-ear headphones only", (("over", "ear", "headphones"), ("ear", "headphones"))),
        ("headphones, wireless only", (("wireless",),)),
        # After it, to a function word or a comma; fillers and what wants are not required.
        ("only wireless ones", (("wireless",),)),
        ("I only want red ones", (("red",),)),
        ("only over-ear ones", (("over", "ear"), ("ear",))),
        ("only wireless for running", (("wireless",),)),
        # The room is judged as room (app/query/capacity.py), not as words of a name.
        ("only 2 person tents", (("tents",),)),
        ("a tent 2 person only", (("tent",),)),
        # Nothing restricted.
        ("a tent for only", ()),
        ("only, please", ()),
        ("just a kettle", ()),
        ("a kettle", ()),
        ("only red blue green yellow purple ones", ()),  # a sentence, not a kind
    ],
)
def test_the_words_only_bounds(text: str, readings: tuple[tuple[str, ...], ...]) -> None:
    assert READER.asked(text) == readings


def _p(pid: int, name: str) -> RetrievedProduct:
    return RetrievedProduct(pid, name, "audio", None, 100.0, 0.8, [])


SHOWN = [
    _p(1, "Tidewave Lumen Pro Wireless Over-Ear Headphones"),
    _p(2, "Keylight Audio Arc 3 Open-Ear Swimming Headphones"),
    _p(3, "Keylight Audio Flint X Closed-Back Over-Ear Headphones"),
    _p(4, "Sonavia Drift ANC Wireless Earbuds"),
]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # The open-ear swimming headphones matched every word but "over".
        ("over ear headphones only", [1, 3]),
        ("only wireless ones", [1, 4]),
        # No name uses the compound: the reading without it.
        ("in ear headphones only", [1, 2, 3]),
        # No name uses the words: nothing is restricted, the page is not emptied.
        ("headphones for running only", [1, 2, 3, 4]),
        # The best match's name does not: nothing ranked below it is brought up.
        ("only earbuds", [1, 2, 3, 4]),
    ],
)
def test_the_names_that_use_what_the_best_matchs_name_uses_are_kept(
    text: str, kept: list[int]
) -> None:
    assert [p.id for p in READER.kept(SHOWN, READER.asked(text))] == kept
