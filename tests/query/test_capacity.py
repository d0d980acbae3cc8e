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
    ],
)
def test_the_room_a_query_asks_for(text: str, room: Room | None) -> None:
    assert reader.asked(text) == room


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
    assert reader.too_small(name, room) is too_small


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
    assert reader.too_small(name, room, [text]) is too_small
