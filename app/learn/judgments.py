"""The judged set a model learns from, its fingerprint, and its folds by query.

A judgments folder has the dev-set layout (`products.jsonl`, `queries.jsonl`, `qrels.tsv`;
app.eval.data reads them). Folds are by query and stable: a query's fold is a hash of its
qid, so adding queries never moves another one between folds, and every trainer in a run
(encoder, ranker) sees the same split.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from app.core.catalog import Product
from app.core.errors import TerminalError
from app.eval.data import (
    PRODUCTS_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    EvalQuery,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.folds import fold_of

FILES = (PRODUCTS_FILE, QUERIES_FILE, QRELS_FILE)


class JudgmentsError(TerminalError):
    """The judgments folder cannot be read or holds nothing to learn from."""


@dataclass(frozen=True, slots=True)
class Judgments:
    """A judged set: the catalog, the queries with at least one judgment, their grades."""

    root: Path
    products: list[Product]
    queries: list[EvalQuery]
    qrels: dict[str, dict[int, float]]
    fingerprint: str

    @property
    def top_grade(self) -> float:
        """The highest grade in the set (2 for Home Depot, 3 for CrowdFlower)."""
        return max(g for grades in self.qrels.values() for g in grades.values())


def load_judgments(root: Path) -> Judgments:
    """Read a judgments folder; queries without judgments are dropped.

    Raises:
        JudgmentsError: a file is missing or unreadable, or nothing is judged.
    """
    try:
        products = load_products(root / PRODUCTS_FILE)
        qrels = load_qrels(root / QRELS_FILE)
        queries = [q for q in load_queries(root / QUERIES_FILE) if qrels.get(q.qid)]
    except (OSError, ValueError, KeyError) as e:
        raise JudgmentsError(f"judgments {root}: {e}") from e
    if not queries:
        raise JudgmentsError(f"judgments {root}: no judged queries")
    return Judgments(root, products, queries, qrels, fingerprint(root))


def fingerprint(root: Path) -> str:
    """sha256 over the three files, in a fixed order (names included)."""
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0")
        with (root / name).open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Folds:
    """k folds by query; `fold` of a qid is `fold_of(qid, k)`."""

    k: int
    of: dict[str, int]

    @classmethod
    def split(cls, queries: list[EvalQuery], k: int) -> Folds:
        if k < 2:
            raise JudgmentsError(f"folds: need at least 2, got {k}")
        return cls(k, {q.qid: fold_of(q.qid, k) for q in queries})

    def qids(self, fold: int) -> set[str]:
        """The queries held out in `fold`."""
        return {qid for qid, f in self.of.items() if f == fold}

    def train_qids(self, held_out: set[int]) -> set[str]:
        """The queries of every fold not in `held_out`."""
        return {qid for qid, f in self.of.items() if f not in held_out}
