"""Reading the eval files and the product catalog they were judged against."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.core.catalog import Product
from app.core.config import ROOT

DEFAULT_QUERIES = ROOT / "data" / "eval" / "queries.jsonl"
DEFAULT_QRELS = ROOT / "data" / "eval" / "qrels.tsv"
DEFAULT_PRODUCTS = ROOT / "data" / "demo" / "products.jsonl"


# A dataset folder holds these three (e.g. ../shared/eval/homedepot-dev).
PRODUCTS_FILE, QUERIES_FILE, QRELS_FILE = "products.jsonl", "queries.jsonl", "qrels.tsv"


@dataclass(frozen=True, slots=True)
class EvalQuery:
    qid: str
    query: str


def load_queries(path: Path) -> list[EvalQuery]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(EvalQuery(str(row["qid"]), str(row["query"])))
    return out


def load_qrels(path: Path) -> dict[str, dict[int, float]]:
    """qid -> {product_id: grade}; tab-separated `qid product_id grade`, no header."""
    qrels: dict[str, dict[int, float]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ValueError(f"{path}:{n}: expected 3 tab-separated fields, got {len(parts)}")
        qid, pid, grade = parts
        qrels.setdefault(qid, {})[int(pid)] = float(grade)
    return qrels


def load_products(path: Path) -> list[Product]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        out.append(Product.from_row(json.loads(line)))
    return out
