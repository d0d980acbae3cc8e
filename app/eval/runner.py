"""Run every judged query through the service's Retriever and through the baseline."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.eval.data import EvalQuery
from app.eval.index import WholeTextIndex
from app.eval.metrics import ndcg_at_k
from app.retrieval import Retriever


@dataclass
class EvalReport:
    k: int
    # qid -> (retriever nDCG, baseline nDCG)
    per_query: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def retriever(self) -> float:
        return statistics.fmean(r for r, _ in self.per_query.values())

    @property
    def baseline(self) -> float:
        return statistics.fmean(b for _, b in self.per_query.values())


def evaluate(
    queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[int, float]],
    retriever: Retriever,
    baseline: WholeTextIndex | None,
    *,
    k: int = 10,
) -> EvalReport:
    """nDCG@k per judged query (queries without judgments are skipped)."""
    report = EvalReport(k=k)
    for q in queries:
        judged = qrels.get(q.qid)
        if not judged:
            continue
        ranked = [p.id for p in retriever.retrieve(q.query, top_k=k)]
        base = baseline.search(q.query, k) if baseline is not None else []
        report.per_query[q.qid] = (ndcg_at_k(ranked, judged, k), ndcg_at_k(base, judged, k))
    return report
