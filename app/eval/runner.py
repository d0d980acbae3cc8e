"""Run every judged query through each ranking and score it with condensed nDCG@k."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from app.eval.data import EvalQuery
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.parallel import each_query
from app.retrieval import Retriever

logger = logging.getLogger(__name__)


@dataclass
class EvalReport:
    k: int
    depth: int
    # ranking name -> qid -> condensed nDCG@k
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def mean(self, name: str) -> float:
        scores = self.per_query[name]
        return statistics.fmean(scores.values()) if scores else 0.0

    @property
    def judged_queries(self) -> int:
        return max((len(s) for s in self.per_query.values()), default=0)


def ranked_ids(retriever: Retriever, depth: int, query: str) -> list[int]:
    """The ids of the `depth` best products for `query`, best first."""
    return [p.id for p in retriever.retrieve(query, top_k=depth)]


def evaluate(
    queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[int, float]],
    rankings: Mapping[str, Retriever],
    *,
    k: int = 10,
    depth: int = 100,
) -> EvalReport:
    """Condensed nDCG@k of each named ranking, over its top `depth` products per query.

    Queries without judgments are skipped. `depth` must reach past the unjudged products:
    condensing drops them, and what is left has to fill k places.
    """
    report = EvalReport(k=k, depth=depth)
    judged = [(q, qrels[q.qid]) for q in queries if qrels.get(q.qid)]
    for name, retriever in rankings.items():
        started = time.perf_counter()
        scores = report.per_query.setdefault(name, {})
        rank = partial(ranked_ids, retriever, depth)
        found = zip(judged, each_query(rank, [q.query for q, _ in judged]), strict=True)
        for n, ((q, grades), ranked) in enumerate(found, start=1):
            scores[q.qid] = condensed_ndcg_at_k(ranked, grades, k)
            if n % 1000 == 0:
                logger.info("eval %s: %d/%d queries", name, n, len(judged))
        report.seconds[name] = time.perf_counter() - started
    return report
