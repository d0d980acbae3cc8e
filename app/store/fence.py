"""A write fence the Qdrant server checks: a JWT whose `value_exists` claim names a point.

With `jwt_rbac` on, the server validates such a token on every request by looking the
point up (`matches` are payload values, all required), so a token naming the sync lease
point as holder H at epoch E stops working the moment another syncer writes epoch E+1
(app/sync/lease.py). Signed HS256 with the API key, as the server expects; no `exp`: the
lease point, not a clock, ends it. The token carries no access claim, so it has the key's
full rights while it is valid.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def fence_token(api_key: str, collection: str, matches: dict[str, Any]) -> str:
    """A JWT valid only while a point of `collection` has every payload value in `matches`."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {
        "value_exists": {
            "collection": collection,
            "matches": [{"key": k, "value": v} for k, v in matches.items()],
        }
    }
    body = _b64(json.dumps(claims, sort_keys=True).encode())
    signature = hmac.new(api_key.encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"
