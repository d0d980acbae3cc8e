"""Deterministic product generator for scale tests and benchmarks (no Spark needed).

    python -m spark_jobs.generate_products --count N --seed S --output FILE [--start-id K]

The same (count, seed, start-id) always gives the same file. Names combine an invented
brand, a series, a qualifier and a product kind; descriptions are two to four sentences
drawn from the catalog copy in `product_copy.json` (100k products in a few seconds).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_jobs import cli
from spark_jobs.product_copy import (
    CATALOG,
    COLOURS,
    FINISH_TEMPLATES,
    MODELS,
    SERIES,
    CategorySpec,
    Kind,
)

logger = logging.getLogger(__name__)

# Generated rows carry fixed, increasing ts values so the output is reproducible.
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z in epoch millis

_CHOICES: list[tuple[str, CategorySpec, Kind]] = [
    (category, spec, kind) for category, spec in CATALOG.items() for kind in spec.kinds
]


@dataclass(frozen=True, slots=True)
class GenerateResult:
    count: int
    output: str
    seconds: float


def _price(rng: random.Random, low: float, high: float) -> float:
    # Shop prices end in .99, .49 or .00 rather than arbitrary cents.
    whole = int(rng.uniform(low, high))
    return whole + rng.choice((0.99, 0.99, 0.49, 0.0))


def generate(count: int, seed: int, start_id: int = 1) -> Iterator[dict[str, Any]]:
    """Yield `count` product dicts with ids start_id, start_id + 1, ..."""
    rng = random.Random(seed)
    for offset in range(count):
        category, spec, kind = rng.choice(_CHOICES)
        brand = rng.choice(spec.brands)
        series = rng.choice(SERIES) + rng.choice(MODELS)
        name = f"{brand} {series} {rng.choice(kind.qualifiers)} {kind.noun}"
        sentences = [rng.choice(kind.openings)]
        sentences += rng.sample(kind.features, k=rng.randint(1, 2))
        last = rng.random()
        if last < 0.4:
            sentences.append(rng.choice(spec.closings))
        elif last < 0.75 and spec.colours:
            c1, c2 = rng.sample(COLOURS, k=2)
            finish = rng.choice(FINISH_TEMPLATES)
            sentences.append(finish.format(series=series, c1=c1, c2=c2))
        yield {
            "id": start_id + offset,
            "ts": BASE_TS + offset,
            "name": name,
            "description": " ".join(sentences),
            "category": category,
            "brand": brand,
            "price": round(_price(rng, *kind.price), 2),
        }


def write_jsonl(rows: Iterator[dict[str, Any]], output: str) -> int:
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    return written


def generate_file(count: int, seed: int, output: str, start_id: int = 1) -> GenerateResult:
    started = time.monotonic()
    written = write_jsonl(generate(count, seed, start_id), output)
    return GenerateResult(written, output, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.generate_products", description=__doc__)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", required=True, metavar="FILE")
    parser.add_argument("--start-id", type=int, default=1)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        result = generate_file(args.count, args.seed, args.output, args.start_id)
        print(f"generated {result.count}")
        print(f"seconds {result.seconds:.2f}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
