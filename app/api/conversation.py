"""The conversation token: a turn's state handed to the client, signed, and read back.

`base64url(compact JSON state) "." base64url(HMAC-SHA256(secret, first part))`. The
state says what the turn understood (app/query/turn.py: search text, the filters
heard in words, the products shown with their prices, the product searched by, those a
run of "show me more" showed before) with a
version and the time it was issued. Any replica holding the secret reads any replica's
token: no session store, no sticky sessions. A token is valid for
CONVERSATION_TTL_SECONDS after it was issued and at most MAX_TOKEN_CHARS long; read() checks
it as text (base64url and one dot) before it decodes or verifies anything.
docs/decisions/conversation-state.md has the design and its alternatives.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.core.config import Settings
from app.core.errors import TerminalError
from app.query.turn import MAX_SEEN, MAX_SHOWN, ConversationState, ShownProduct
from app.query.types import Constraint, FilterField

logger = logging.getLogger(__name__)

VERSION = 1
# The request field's bound. A full state (MAX_SHOWN products, the longest search text,
# six brands) is ~1.5 KB; issue() sheds detail rather than ever go past this.
MAX_TOKEN_CHARS = 4096
# Products seen before that a token keeps when the ids are too long for all MAX_SEEN.
SHED_SEEN = 15
# A token issued this far in the future (another replica's clock) is still accepted.
CLOCK_SKEW_SECONDS = 60
# What a token is as text: two base64url runs joined by a dot. Checked before any decoding,
# so no byte of a client's string reaches the codecs or the HMAC unchecked.
_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_NOT_BASE64URL = re.compile(r"[^A-Za-z0-9_.-]")
# The secret kept under DATA_DIR when CONVERSATION_SECRET is unset.
SECRET_FILE = "conversation.key"


class ConversationError(TerminalError):
    """A conversation token that cannot be used; `reason` says why, for the client."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"conversation: {reason}")


class _Wire(BaseModel):
    """The token's JSON: short keys, because it travels with every request."""

    model_config = ConfigDict(extra="forbid")

    v: int
    iat: int
    t: str = Field(max_length=1000)
    f: list[tuple[FilterField, str | float, str]] = Field(default_factory=list, max_length=16)
    p: list[tuple[int, float | None, bool]] = Field(default_factory=list, max_length=MAX_SHOWN)
    like: int | None = None
    x: list[int] = Field(default_factory=list, max_length=MAX_SEEN)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    # validate: a character outside the alphabet is an error, not silently skipped.
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


class ConversationCodec:
    """Args:
    secret: the HMAC key; every replica that should read a token needs the same one.
    ttl_seconds: how long after it was issued a token is accepted.
    """

    def __init__(self, secret: bytes, ttl_seconds: float) -> None:
        if len(secret) < 16:
            raise ValueError("the conversation secret must be at least 16 bytes")
        self._secret = secret
        self.ttl_seconds = ttl_seconds

    def issue(self, state: ConversationState, *, now: float | None = None) -> str:
        """The token for `state`; never longer than MAX_TOKEN_CHARS (the least useful
        detail is shed first when a state would not fit)."""
        issued = int(time.time() if now is None else now)
        for shed in _shedding(state):
            token = self._sign(_wire(shed, issued))
            if len(token) <= MAX_TOKEN_CHARS:
                return token
        raise AssertionError("unreachable: the last shed state is bounded")  # pragma: no cover

    def read(self, token: str, *, now: float | None = None) -> ConversationState:
        """The state in `token`.

        Raises:
            ConversationError: malformed, not signed with this secret, of another
                version, or expired.
        """
        if len(token) > MAX_TOKEN_CHARS:
            raise ConversationError(f"malformed token (over {MAX_TOKEN_CHARS} characters)")
        _check_text(token)
        payload, _, mac = token.partition(".")
        try:
            given = _unb64(mac)
        except (binascii.Error, ValueError) as e:
            raise ConversationError("malformed token (signature is not base64url)") from e
        # Constant time: how much of a forged signature was right must not leak.
        if not hmac.compare_digest(given, self._mac(payload)):
            raise ConversationError(
                "bad signature (forged, altered, or issued with another CONVERSATION_SECRET)"
            )
        try:
            raw: Any = json.loads(_unb64(payload))
        except (binascii.Error, ValueError) as e:
            raise ConversationError("malformed token (state is not JSON)") from e
        if not isinstance(raw, dict) or raw.get("v") != VERSION:
            version = raw.get("v") if isinstance(raw, dict) else None
            raise ConversationError(f"unsupported token version {version!r} (expected {VERSION})")
        try:
            wire = _Wire.model_validate(raw)
        except ValidationError as e:
            raise ConversationError("malformed token (state does not validate)") from e
        clock = time.time() if now is None else now
        age = clock - wire.iat
        if age > self.ttl_seconds:
            raise ConversationError(
                f"expired (issued {age:,.0f} s ago; a conversation lasts "
                f"{self.ttl_seconds:,.0f} s): send the query without it to start again"
            )
        if age < -CLOCK_SKEW_SECONDS:
            raise ConversationError("issued in the future (clocks of the replicas disagree)")
        return ConversationState(
            search_text=wire.t,
            filters=tuple(Constraint(name, value, text) for name, value, text in wire.f),
            shown=tuple(ShownProduct(i, price, outside) for i, price, outside in wire.p),
            like=wire.like,
            seen=tuple(wire.x),
        )

    def _mac(self, payload: str) -> bytes:
        return hmac.new(self._secret, payload.encode("ascii"), hashlib.sha256).digest()

    def _sign(self, wire: _Wire) -> str:
        body = json.dumps(
            wire.model_dump(exclude_defaults=True), separators=(",", ":"), ensure_ascii=False
        )
        payload = _b64(body.encode("utf-8"))
        return f"{payload}.{_b64(self._mac(payload))}"


def _check_text(token: str) -> None:
    """ConversationError unless `token` is `<base64url>.<base64url>` in ASCII."""
    bad = _NOT_BASE64URL.search(token)
    if bad is not None:
        raise ConversationError(
            f"malformed token (character {bad.group()!a} at position {bad.start()}: "
            "a token is base64url text and one dot)"
        )
    if _SHAPE.fullmatch(token) is None:
        raise ConversationError("malformed token (expected <state>.<signature>)")


def _wire(state: ConversationState, issued: int) -> _Wire:
    return _Wire(
        v=VERSION,
        iat=issued,
        t=state.search_text,
        f=[(c.field, c.value, c.text) for c in state.filters],
        p=[(p.id, p.price, p.outside) for p in state.shown],
        like=state.like,
        x=list(state.seen),
    )


def _shedding(state: ConversationState) -> list[ConversationState]:
    """The state, then ever smaller versions of it: fewer products seen before (ids as long
    as an int64 take ~27 characters each), fewer shown, no filter words, no products, no
    filters (a catalog's very long category or brand names)."""
    quiet = tuple(Constraint(c.field, c.value, "") for c in state.filters)
    recent = state.seen[-SHED_SEEN:]
    return [
        state,
        ConversationState(state.search_text, state.filters, state.shown, state.like, recent),
        ConversationState(state.search_text, state.filters, state.shown[:5], state.like, recent),
        ConversationState(state.search_text, quiet, state.shown[:5], state.like),
        ConversationState(state.search_text, quiet, (), None),
        ConversationState(state.search_text[:200], (), (), None),
    ]


def conversation_secret(settings: Settings) -> bytes:
    """CONVERSATION_SECRET, else a key kept in DATA_DIR (made on first use, so restarts
    and replicas sharing the folder keep their conversations), else a key for this
    process only (DATA_DIR not writable)."""
    if settings.conversation_secret is not None:
        return settings.conversation_secret.get_secret_value().encode("utf-8")
    path = Path(settings.data_dir) / SECRET_FILE
    try:
        return _kept_secret(path)
    except OSError as e:
        logger.warning(
            "conversation tokens signed with a key for this process only (%s: %s): they "
            "die with it; set CONVERSATION_SECRET, the same on every replica",
            path,
            e,
        )
        return secrets.token_bytes(32)


def _kept_secret(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
            # A link never replaces: of two processes starting at once, one key wins.
            try:
                os.link(tmp, path)
                logger.info("conversation key created at %s", path)
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)
    key = path.read_text(encoding="ascii").strip()
    if len(key) < 32:
        raise OSError(f"{path} holds fewer than 32 characters")
    return key.encode("ascii")
