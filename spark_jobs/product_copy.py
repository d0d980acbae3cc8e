"""The copy of the generated catalog, loaded from `product_copy.json` beside this file: per
category, invented brands and product kinds with openings, feature sentences and a price
band. Edit the JSON to change what `generate_products` writes; this module only types it.

Generated descriptions take one opening, one or two features and sometimes a closing line,
so two products of the same kind rarely read alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COPY_PATH = Path(__file__).with_name("product_copy.json")


@dataclass(frozen=True, slots=True)
class Kind:
    noun: str
    qualifiers: tuple[str, ...]
    openings: tuple[str, ...]
    features: tuple[str, ...]
    price: tuple[float, float]


@dataclass(frozen=True, slots=True)
class CategorySpec:
    brands: tuple[str, ...]
    kinds: tuple[Kind, ...]
    closings: tuple[str, ...]
    # Colour lines make no sense for every shelf (a cookbook in "sage green").
    colours: bool = True


def _kind(raw: dict[str, Any]) -> Kind:
    low, high = raw["price"]
    return Kind(
        noun=raw["noun"],
        qualifiers=tuple(raw["qualifiers"]),
        openings=tuple(raw["openings"]),
        features=tuple(raw["features"]),
        price=(float(low), float(high)),
    )


def _category(raw: dict[str, Any]) -> CategorySpec:
    return CategorySpec(
        brands=tuple(raw["brands"]),
        kinds=tuple(_kind(k) for k in raw["kinds"]),
        closings=tuple(raw["closings"]),
        colours=bool(raw.get("colours", True)),
    )


_COPY: dict[str, Any] = json.loads(COPY_PATH.read_text(encoding="utf-8"))
SERIES: tuple[str, ...] = tuple(_COPY["series"])
COLOURS: tuple[str, ...] = tuple(_COPY["colours"])
FINISH_TEMPLATES: tuple[str, ...] = tuple(_COPY["finish_templates"])
MODELS: tuple[str, ...] = tuple(_COPY["models"])
CATALOG: dict[str, CategorySpec] = {
    name: _category(spec) for name, spec in _COPY["categories"].items()
}
