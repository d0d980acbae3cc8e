"""Row-level validation of incoming product records (pure Python, no Spark).

Rules (each failure is a reason; a row with any reason goes to quarantine):
- `id`: present and integral within BIGINT; ints, integral floats (12.0) and digit strings
  ("12", " 12 ") pass, "12.5", "abc", booleans do not.
- `name`: non-empty after trimming and stripping control characters.
- `price`: optional. Missing/null/"" stores null (a product listed without a price; price
  filters then leave it out). Otherwise a finite number >= 0 (numeric strings pass).
- `ts`: optional epoch millis (integral, >= 0). Missing gets the ingestion time, flagged so
  that re-sending unchanged content does not count as a change.
- Text fields are trimmed, control characters removed (newlines and tabs become spaces);
  empty optional text stores null.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SPACE_LIKE = re.compile(r"[\t\n\r]+")
_INT = re.compile(r"[+-]?\d+")


@dataclass(frozen=True, slots=True)
class ValidRow:
    id: int
    ts: int
    name: str
    description: str | None
    category: str | None
    brand: str | None
    price: float | None
    ts_defaulted: bool

    def as_tuple(self) -> tuple[object, ...]:
        """Table column order (app.core.catalog.COLUMN_NAMES)."""
        return (
            self.id,
            self.ts,
            self.name,
            self.description,
            self.category,
            self.brand,
            self.price,
        )


def clean_text(value: Any) -> str | None:
    """Trimmed text without control characters; None for missing/empty."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("must be text")
    text = _CONTROL.sub("", _SPACE_LIKE.sub(" ", str(value))).strip()
    return text or None


def parse_int(value: Any) -> int | None:
    """An integral value, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not value.is_integer():
            return None
        number = int(value)
    elif isinstance(value, str) and _INT.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if BIGINT_MIN <= number <= BIGINT_MAX else None


def parse_price(value: Any) -> float | None:
    """A finite non-negative price; raises ValueError with the reason otherwise."""
    if isinstance(value, bool):
        raise ValueError("price must be a number")
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError(f"price is not a number: {value[:40]!r}") from None
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise ValueError("price must be a number")
    if not math.isfinite(number):
        raise ValueError("price must be finite")
    if number < 0:
        raise ValueError("price must be >= 0")
    return number


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def validate(row: dict[str, Any], ingestion_ts: int) -> ValidRow | list[str]:
    """Validate one row already keyed by table column names.

    Returns:
        The cleaned row, or the list of reasons it was rejected.
    """
    reasons: list[str] = []

    raw_id = row.get("id")
    product_id = None
    if _missing(raw_id):
        reasons.append("id is missing")
    else:
        product_id = parse_int(raw_id)
        if product_id is None:
            reasons.append(f"id is not an integer: {str(raw_id)[:40]!r}")

    texts: dict[str, str | None] = {}
    for column in ("name", "description", "category", "brand"):
        try:
            texts[column] = clean_text(row.get(column))
        except ValueError as e:
            reasons.append(f"{column} {e}")
            texts[column] = None
    if texts["name"] is None and not any(r.startswith("name ") for r in reasons):
        reasons.append("name is empty")

    price = None
    if not _missing(row.get("price")):
        try:
            price = parse_price(row["price"])
        except ValueError as e:
            reasons.append(str(e))

    raw_ts = row.get("ts")
    ts_defaulted = _missing(raw_ts)
    ts = ingestion_ts if ts_defaulted else parse_int(raw_ts)
    if ts is None or ts < 0:
        reasons.append(f"ts is not epoch millis: {str(raw_ts)[:40]!r}")

    if reasons or product_id is None or ts is None or texts["name"] is None:
        return reasons
    return ValidRow(
        id=product_id,
        ts=ts,
        name=texts["name"],
        description=texts["description"],
        category=texts["category"],
        brand=texts["brand"],
        price=price,
        ts_defaulted=ts_defaulted,
    )
