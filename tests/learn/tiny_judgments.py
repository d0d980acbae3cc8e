"""A tiny judged set in the dev-set layout, generated: 8 kinds of product in 4 variants,
two queries per kind that judge its variants relevant and another kind's irrelevant."""

from __future__ import annotations

import json
from pathlib import Path

KINDS = [
    ("cordless drill", "drill driver with battery and charger", "hammer drill"),
    ("garden hose", "flexible water hose for the garden", "hose reel"),
    ("ceiling fan", "ceiling fan with light kit and remote", "fan with light"),
    ("bath towel", "soft cotton towel for the bathroom", "cotton towels"),
    ("led bulb", "dimmable LED light bulb, warm white", "light bulbs"),
    ("office chair", "ergonomic desk chair with arm rests", "desk chair"),
    ("wine rack", "wooden rack holding twelve bottles", "bottle rack"),
    ("door lock", "keyed entry door knob with deadbolt", "deadbolt lock"),
]
VARIANTS = ["black", "white", "steel", "oak"]


def _pid(kind: int, variant: int) -> int:
    """Ids in no order of kind or grade (a permutation of 0..31): equal scores come in id
    order (app/store/relevance.py), so ids in kind order ranked a wrecked encoder's ties as
    well as a good one ranks."""
    return 100 + (13 * (len(VARIANTS) * kind + variant)) % (len(KINDS) * len(VARIANTS))


def write_tiny_judgments(root: Path) -> Path:
    """32 products, 16 queries, 4 relevant (grade 2 or 1) and 2 irrelevant judgments each."""
    root.mkdir(parents=True, exist_ok=True)
    products, queries, qrels = [], [], []
    for k, (kind, text, _) in enumerate(KINDS):
        for v, variant in enumerate(VARIANTS):
            pid = _pid(k, v)
            products.append(
                {"id": pid, "name": f"{variant.title()} {kind}", "description": f"A {text}."}
            )
    for k, (kind, _, other_words) in enumerate(KINDS):
        other = (k + 3) % len(KINDS)
        for n, words in enumerate((kind, other_words)):
            qid = f"q{2 * k + n}"
            queries.append({"qid": qid, "query": words})
            for v in range(len(VARIANTS)):
                qrels.append((qid, _pid(k, v), 2.0 if v < 2 else 1.67))
            for v in range(2):
                qrels.append((qid, _pid(other, v), 0.0))
    (root / "products.jsonl").write_text("".join(json.dumps(p) + "\n" for p in products))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels.tsv").write_text("".join(f"{q}\t{p}\t{g}\n" for q, p, g in qrels))
    return root
