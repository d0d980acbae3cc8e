"""The conversation token (app/api/conversation.py) with real HMAC-SHA256: it round-trips,
and every way it can be wrong is a ConversationError naming the reason."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from app.api.conversation import (
    MAX_TOKEN_CHARS,
    SECRET_FILE,
    SHED_SEEN,
    ConversationCodec,
    ConversationError,
    conversation_secret,
)
from app.core.config import Settings
from app.query.turn import MAX_SEEN, MAX_SHOWN, ConversationState, ShownProduct
from app.query.types import Constraint

SECRET = b"0123456789abcdef0123456789abcdef"
NOW = 1_800_000_000.0
STATE = ConversationState(
    search_text="running shoes in black",
    filters=(
        Constraint("max_price", 100.0, "under $100"),
        Constraint("exclude_brand", "Lune & Leaf", "not Lune & Leaf"),
        Constraint("price_preference", "low", "cheaper"),
    ),
    shown=(ShownProduct(7, 45.5), ShownProduct(2**62, None), ShownProduct(9, 120.0, True)),
    like=7,
    seen=(3, 4),
)


def codec(ttl: float = 1800) -> ConversationCodec:
    return ConversationCodec(SECRET, ttl)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed(state: object, secret: bytes = SECRET) -> str:
    """A token over any JSON, correctly signed: what only a key holder could make."""
    payload = _b64(json.dumps(state).encode())
    mac = hmac.new(secret, payload.encode(), hashlib.sha256).digest()
    return f"{payload}.{_b64(mac)}"


def reason(token: str, *, now: float = NOW, ttl: float = 1800) -> str:
    with pytest.raises(ConversationError) as e:
        codec(ttl).read(token, now=now)
    return e.value.reason


def test_a_token_round_trips_its_state() -> None:
    token = codec().issue(STATE, now=NOW)
    assert codec().read(token, now=NOW + 1799) == STATE
    assert token.count(".") == 1 and len(token) < 600


def test_an_altered_token_or_another_secret_is_a_bad_signature() -> None:
    token = codec().issue(STATE, now=NOW)
    payload, mac = token.split(".")
    state = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    state["f"] = []
    altered = _b64(json.dumps(state).encode()) + "." + mac
    assert reason(altered).startswith("bad signature")
    assert reason(payload + "." + _b64(bytes(32))).startswith("bad signature")
    other = ConversationCodec(b"another secret, 32 bytes long...", 1800).issue(STATE, now=NOW)
    assert reason(other).startswith("bad signature")


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("no-dot-here", "malformed token (expected <state>.<signature>)"),
        (".abc", "malformed token (expected <state>.<signature>)"),
        ("abc.", "malformed token (expected <state>.<signature>)"),
        ("abc..def", "malformed token (expected <state>.<signature>)"),
        ("abc.def.ghi", "malformed token (expected <state>.<signature>)"),
        ("abc.A", "malformed token (signature is not base64url)"),
        ("x" * (MAX_TOKEN_CHARS + 1), f"malformed token (over {MAX_TOKEN_CHARS} characters)"),
        ("é" * (MAX_TOKEN_CHARS + 1), f"malformed token (over {MAX_TOKEN_CHARS} characters)"),
    ],
)
def test_a_malformed_token_says_so(token: str, expected: str) -> None:
    assert reason(token) == expected


# Issue 34: "é.AAAA" was a 500 (the state part was encoded as ASCII for the HMAC before
# anything looked at it). Every character outside base64url and the dot is named.
@pytest.mark.parametrize(
    ("token", "bad", "at"),
    [
        ("é.AAAA", "'\\xe9'", 0),
        ("AAAA.é", "'\\xe9'", 5),
        ("AAAA.AAAAé", "'\\xe9'", 9),
        ("\ud800.AAAA", "'\\ud800'", 0),
        ("\x00.AAAA", "'\\x00'", 0),
        ("１.AAAA", "'\\uff11'", 0),  # a fullwidth digit: a digit to Unicode, not to base64
        ("AAAA.AA AA", "' '", 7),
        ("AAAA.AAAA\n", "'\\n'", 9),
        ("AAAA.AAAA=", "'='", 9),
        ("abc.!!!", "'!'", 4),
        ("🙂", "'\\U0001f642'", 0),
    ],
)
def test_a_token_is_checked_as_text_before_it_is_decoded(token: str, bad: str, at: int) -> None:
    assert reason(token) == (
        f"malformed token (character {bad} at position {at}: a token is base64url text and one dot)"
    )


def test_a_signed_token_with_one_character_changed_to_non_ascii_is_refused() -> None:
    token = codec().issue(STATE, now=NOW)
    for i in (0, token.index("."), len(token) - 1):
        assert reason(token[:i] + "é" + token[i + 1 :]).startswith("malformed token (character")


def test_signed_but_wrong_contents_are_refused_by_name() -> None:
    good = {"v": 1, "iat": int(NOW), "t": "shoes"}
    assert codec().read(signed(good), now=NOW).search_text == "shoes"
    assert reason(signed({**good, "v": 2})) == "unsupported token version 2 (expected 1)"
    assert reason(signed(["not", "an", "object"])).startswith("unsupported token version None")
    assert reason(signed({**good, "p": [["x", 1.0, False]]})) == (
        "malformed token (state does not validate)"
    )
    assert reason(signed({**good, "extra": 1})) == "malformed token (state does not validate)"
    payload = _b64(b"\xff not json")
    mac = _b64(hmac.new(SECRET, payload.encode(), hashlib.sha256).digest())
    assert reason(f"{payload}.{mac}") == "malformed token (state is not JSON)"


def test_a_token_expires_after_the_ttl_and_not_before() -> None:
    token = codec().issue(STATE, now=NOW)
    assert codec(ttl=60).read(token, now=NOW + 60) == STATE
    assert reason(token, now=NOW + 61, ttl=60).startswith("expired (issued 61 s ago;")
    # Another replica's clock a little ahead is fine; far ahead is not.
    assert codec().read(token, now=NOW - 30) == STATE
    assert reason(token, now=NOW - 600).startswith("issued in the future")


def test_the_largest_state_fits_and_an_oversized_one_sheds_detail() -> None:
    largest = ConversationState(
        search_text="é" * 300,
        filters=(
            Constraint("category", "c" * 60, "t" * 60),
            Constraint("min_price", 1e9, "t" * 60),
            Constraint("max_price", 1e9, "t" * 60),
            Constraint("price_preference", "low", "t" * 60),
            *(Constraint("exclude_brand", "b" * 60, "t" * 60) for _ in range(6)),
        ),
        shown=tuple(ShownProduct(2**63 - 1 - i, 123456.78, True) for i in range(MAX_SHOWN)),
        like=2**63 - 1,
        seen=tuple(2**63 - 1 - i for i in range(MAX_SEEN)),
    )
    token = codec().issue(largest, now=NOW)
    # All of it but the products seen before the last "show me more" but the newest few.
    kept = replace(largest, seen=largest.seen[-SHED_SEEN:])
    assert len(token) <= MAX_TOKEN_CHARS and codec().read(token, now=NOW) == kept
    token = codec().issue(replace(largest, seen=()), now=NOW)
    assert codec().read(token, now=NOW) == replace(largest, seen=())
    # A catalog's absurdly long category cannot make a token too long to send back.
    huge = ConversationState("shoes", (Constraint("category", "c" * 5000, "x"),), STATE.shown)
    token = codec().issue(huge, now=NOW)
    assert len(token) <= MAX_TOKEN_CHARS
    assert codec().read(token, now=NOW) == ConversationState("shoes")


def test_the_secret_is_kept_under_data_dir_and_read_again(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path))
    first = conversation_secret(settings)
    assert len(first) == 64 and conversation_secret(settings) == first
    mode = stat.S_IMODE(os.stat(tmp_path / SECRET_FILE).st_mode)
    assert mode == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]  # no temp file left
    explicit = Settings(data_dir=str(tmp_path), conversation_secret="s" * 20)
    assert conversation_secret(explicit) == b"s" * 20


def test_an_unwritable_data_dir_gets_a_key_for_this_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    settings = Settings(data_dir=str(blocker))
    with caplog.at_level(logging.WARNING, logger="app.api.conversation"):
        a, b = conversation_secret(settings), conversation_secret(settings)
    assert len(a) == 32 and a != b
    assert "set CONVERSATION_SECRET" in caplog.text
