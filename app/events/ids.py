"""`recommendation_id`: minted per answer, checked when an event names it.

`r1.<base64url(issued ms, 8 random bytes)>.<base64url(HMAC-SHA256(secret, body)[:12])>`.
Signed with the conversation secret (the same on every replica), so any replica accepts
any replica's id and nothing has to remember the ids handed out. An id older than
EVENTS_ATTRIBUTION_DAYS is refused: an event that late cannot be attributed honestly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct
import time

PREFIX = "r1"
_MAC_BYTES = 12
# A mint time this far in the future (another replica's clock) is still accepted.
_CLOCK_SKEW_MS = 60_000
MAX_ID_CHARS = 64


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


class RecommendationIds:
    """Args:
    secret: the HMAC key (the conversation secret).
    max_age_days: how long after an answer an event may still name it.
    """

    def __init__(self, secret: bytes, max_age_days: float) -> None:
        self._key = hashlib.sha256(b"recommendation-id\x00" + secret).digest()
        self.max_age_ms = int(max_age_days * 86_400_000)

    def mint(self, *, now_ms: int | None = None) -> str:
        issued = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        body = _b64(struct.pack(">Q", issued) + secrets.token_bytes(8))
        return f"{PREFIX}.{body}.{_b64(self._mac(body))}"

    def check(self, rid: str, *, now_ms: int | None = None) -> str | None:
        """None when `rid` is one of ours and recent enough; else why not (for the client)."""
        if len(rid) > MAX_ID_CHARS or not rid.isascii():
            return "not a recommendation_id of this service"
        parts = rid.split(".")
        if len(parts) != 3 or parts[0] != PREFIX:
            return "not a recommendation_id of this service"
        try:
            raw = _unb64(parts[1])
            mac = _unb64(parts[2])
        except (binascii.Error, ValueError):
            return "not a recommendation_id of this service"
        if len(raw) != 16 or not hmac.compare_digest(mac, self._mac(parts[1])):
            return "unknown recommendation_id (not issued by this service)"
        (issued,) = struct.unpack(">Q", raw[:8])
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        if issued > now + _CLOCK_SKEW_MS:
            return "recommendation_id issued in the future"
        if now - issued > self.max_age_ms:
            return "recommendation_id too old to attribute"
        return None

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest()[:_MAC_BYTES]
