"""Room asked for and room a name states (app/query/capacity.py)."""

from __future__ import annotations

import pytest

from app.query.capacity import Room, RoomReader
from app.query.phrasebook import load_phrasebook

reader = RoomReader(load_phrasebook())


@pytest.mark.parametrize(
    ("text", "room"),
    [
        ("a tent for 4 people", Room(4, "person")),
        ("a four-person tent", Room(4, "person")),
        ("tent 4 persons", Room(4, "person")),
        ("a board game for 2 players", Room(2, "player")),
        ("a 6 seater sofa", Room(6, "seat")),
        ("a 3-seat sofa in grey", Room(3, "seat")),
        # No unit of room, another kind of count, or two different asks.
        ("a tent for two", None),
        ("a 4 burner stove", None),
        ("a tent for 2 people or 4 people", None),
        ("people who like tents", None),
        # "Only", "just" or "exactly" next to it: that room and no other.
        ("only 2 person tents", Room(2, "person", exact=True)),
        ("2 person tents only", Room(2, "person", exact=True)),
        ("a tent only 2 person", Room(2, "person", exact=True)),
        ("just the 2 person ones", Room(2, "person", exact=True)),
        ("a tent for exactly 4 people", Room(4, "person", exact=True)),
        ("only tents, for 4 people", Room(4, "person")),  # "only" there is not about room
        ("I just need a tent for 4 people", Room(4, "person")),
    ],
)
def test_the_room_a_query_asks_for(text: str, room: Room | None) -> None:
    asked = reader.asked(text)
    assert asked == room
    assert (asked.exact if asked else None) == (room.exact if room else None)


@pytest.mark.parametrize(
    ("name", "room", "too_small"),
    [
        ("Cairn & Co Tide Pro 2-Person Camping Tent", Room(4, "person"), True),
        ("Ridgeback Gear Terra Pro 4-Person Camping Tent", Room(4, "person"), False),
        ("Pinecrest 6 Person Cabin Tent", Room(4, "person"), False),  # bigger fits
        ("Wobbly Fox 2-6 Players Party Game", Room(4, "player"), False),
        ("Wobbly Fox 2 to 6 Players Party Game", Room(8, "player"), True),
        ("Lindqvist 3-Seater Sofa", Room(4, "person"), False),  # another unit: not judged
        ("Alpenglow Cirrus 2 Backpacking Tent", Room(4, "person"), False),  # states none
    ],
)
def test_a_name_that_states_less_room_is_too_small(name: str, room: Room, too_small: bool) -> None:
    assert reader.misfits(name, room) is too_small


@pytest.mark.parametrize(
    ("name", "text", "room", "too_small"),
    [
        # The name states no room: the text it matched by may, as a compound or a range.
        (
            "Alpenglow Cirrus 2 Backpacking Tent",
            "A two-person tent, 1.3 kg.",
            Room(4, "person"),
            True,
        ),
        ("Wobbly Fox Strategy Board Game", "For two to six players.", Room(8, "player"), True),
        ("Wobbly Fox Strategy Board Game", "For two to six players.", Room(4, "player"), False),
        # A loose mention is not a statement of room.
        ("Alpenglow Cirrus Tent", "Two people can pitch it in minutes.", Room(4, "person"), False),
        # The name's room wins over the text's.
        ("Pinecrest 4-Person Tent", "Pitched by a two-person team.", Room(4, "person"), False),
    ],
)
def test_the_matched_text_states_room_where_the_name_does_not(
    name: str, text: str, room: Room, too_small: bool
) -> None:
    assert reader.misfits(name, room, [text]) is too_small


@pytest.mark.parametrize(
    ("name", "count", "fits"),
    [
        # Room for exactly 2: a bigger tent is no longer a match ("just the 2 person ones"
        # showed the 4-person tents), a range holding 2 is.
        ("Cairn & Co Tide Pro 2-Person Camping Tent", 2, True),
        ("Ridgeback Gear Terra Pro 4-Person Camping Tent", 2, False),
        ("Wobbly Fox 2-6 Players Party Game", 4, True),
        ("Wobbly Fox 2-6 Players Party Game", 8, False),
        ("Alpenglow Cirrus 2 Backpacking Tent", 2, None),  # states none: not judged
    ],
)
def test_an_exact_room_takes_only_what_holds_that_many(
    name: str, count: int, fits: bool | None
) -> None:
    unit = "player" if "Players" in name else "person"
    assert reader.fits(name, Room(count, unit, exact=True)) is fits
    assert reader.misfits(name, Room(count, unit, exact=True)) is (fits is False)
