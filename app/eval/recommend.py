"""What shoppers get: the `/recommend` path scored on judged queries, and the cut judged apart.

Each query runs as the route runs it (app.api.routes.recommend -> app.query): the offline
query understanding, `plan_filters`, then `constrained_retrieve`: the ranking (the fused
one, or the learned ranker's when the retriever has one) and the relevance cut. The
ranking is scored with the cut off (a top-`depth` list, condensed nDCG@k, as the
baselines are measured); the cut is judged apart on a top-k request: the share of the
judged-relevant and of the judged-irrelevant products in the uncut top k that the cut
removes. The answers' own words are counted too: how many say the shop has nothing called
what was asked for (`not_carried`), or nothing close (`no_close_match`), and how many of
those show a product judged relevant all the same (what the words would get wrong).

Relevant means a grade of at least half the set's top grade (app.learn.ranker explains
the choice for both dev sets); the demo set's 0-3 grades read the same way.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from app.eval.data import EvalQuery
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.parallel import each_query
from app.query import OfflineQueryParser, plan_filters
from app.query.kind import KindReader
from app.query.search import constrained_retrieve, names_a_kind
from app.query.spelling import Speller
from app.retrieval import Retriever
from app.retrieval.types import RetrievedProduct

logger = logging.getLogger(__name__)


def relevant_grade(qrels: Mapping[str, Mapping[int, float]]) -> float:
    """The lowest grade that counts as relevant: half the set's top grade."""
    return max((g for grades in qrels.values() for g in grades.values()), default=0.0) / 2


@dataclass
class CutEffect:
    """Judged products in the uncut top k, and how many of each kind the cut removed."""

    relevant: int = 0
    relevant_removed: int = 0
    irrelevant: int = 0
    irrelevant_removed: int = 0

    @property
    def relevant_share(self) -> float:
        return self.relevant_removed / self.relevant if self.relevant else 0.0

    @property
    def irrelevant_share(self) -> float:
        return self.irrelevant_removed / self.irrelevant if self.irrelevant else 0.0


@dataclass(frozen=True, slots=True)
class Answer:
    """What an answer shows: its products in order and its notices."""

    ids: tuple[int, ...]
    not_carried: str | None
    no_close_match: bool


@dataclass
class Flagged:
    """Answers that carry one notice, and those among them showing a judged-relevant product."""

    # (query, the word the notice names: not_carried's, or None)
    queries: list[tuple[str, str | None]] = field(default_factory=list)
    relevant_shown: int = 0

    def add(self, query: str, word: str | None, relevant_shown: bool) -> None:
        self.queries.append((query, word))
        self.relevant_shown += relevant_shown


# With a ranker, the cut at these RANKER_MIN_PROBABILITY values too (read off the uncut
# list's probabilities: no extra searches), to choose the setting.
PROBABILITY_GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)


@dataclass
class RecommendReport:
    k: int
    depth: int
    per_query: dict[str, float] = field(default_factory=dict)
    # qid -> what the answer shows (its top k, the cut on), and that list's nDCG@k; the
    # same list with the cut off (`uncut`): the two apart are the cut's effect on the score
    # (`per_query` ranks `depth` deep, so its top k holds more judged products)
    answers: dict[str, Answer] = field(default_factory=dict)
    shown: dict[str, float] = field(default_factory=dict)
    uncut: dict[str, float] = field(default_factory=dict)
    cut: CutEffect = field(default_factory=CutEffect)
    # min probability -> the cut's effect there (with a ranker only)
    grid: dict[float, CutEffect] = field(default_factory=dict)
    not_carried: Flagged = field(default_factory=Flagged)
    no_close_match: Flagged = field(default_factory=Flagged)
    seconds: float = 0.0

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_query.values()) if self.per_query else 0.0

    @property
    def shown_mean(self) -> float:
        return statistics.fmean(self.shown.values()) if self.shown else 0.0

    @property
    def uncut_mean(self) -> float:
        return statistics.fmean(self.uncut.values()) if self.uncut else 0.0


def _count(effect: CutEffect, relevant: bool, removed: bool) -> None:
    if relevant:
        effect.relevant += 1
        effect.relevant_removed += removed
    else:
        effect.irrelevant += 1
        effect.irrelevant_removed += removed


@dataclass(frozen=True, slots=True)
class _Shown:
    ranked: list[RetrievedProduct]  # the ranking with the cut off, `depth` deep
    uncut: list[RetrievedProduct]  # its top k
    kept: list[RetrievedProduct]  # what the answer shows: the top k the cut keeps
    not_carried: str | None
    no_close_match: bool


def evaluate_recommend(
    queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[int, float]],
    retriever: Retriever,
    categories: Collection[str],
    *,
    k: int = 10,
    depth: int = 100,
    speller: Speller | None = None,
) -> RecommendReport:
    """Condensed nDCG@k of the `/recommend` ranking (cut off) and the cut's effect."""
    report = RecommendReport(k=k, depth=depth)
    parser = OfflineQueryParser()
    kinds = KindReader(parser.book)
    relevant = relevant_grade(qrels)
    started = time.perf_counter()
    judged = [(q, qrels[q.qid]) for q in queries if qrels.get(q.qid)]

    def shown(query: EvalQuery) -> _Shown:
        parsed = parser.parse(query.query, categories, speller)
        plan = plan_filters(parsed, None, categories=categories)
        text = parsed.search_text
        ranked = constrained_retrieve(retriever, text, depth, plan, margin=math.inf).products
        uncut = constrained_retrieve(retriever, text, k, plan, margin=math.inf).products
        answer = constrained_retrieve(retriever, text, k, plan)
        # As the route words it (app.api.routes.recommend): on the products it shows.
        judged = names_a_kind(plan, answer)
        missing = kinds.not_carried(text, speller, answer.products, categories) if judged else None
        return _Shown(ranked, uncut, answer.products, missing, answer.no_close_match)

    searched = zip(judged, each_query(shown, [q for q, _ in judged]), strict=True)
    for n, ((q, grades), got) in enumerate(searched, start=1):
        ranked, uncut = got.ranked, got.uncut
        kept = {p.id for p in got.kept}
        report.per_query[q.qid] = condensed_ndcg_at_k([p.id for p in ranked], grades, k)
        ids = tuple(p.id for p in got.kept)
        report.answers[q.qid] = Answer(ids, got.not_carried, got.no_close_match)
        report.shown[q.qid] = condensed_ndcg_at_k(list(ids), grades, k)
        report.uncut[q.qid] = condensed_ndcg_at_k([p.id for p in uncut], grades, k)
        relevant_shown = any(grades.get(i, 0.0) >= relevant for i in kept)
        if got.not_carried is not None:
            report.not_carried.add(q.query, got.not_carried, relevant_shown)
        if got.no_close_match:
            report.no_close_match.add(q.query, None, relevant_shown)
        for p in uncut:
            grade = grades.get(p.id)
            if grade is None:
                continue
            _count(report.cut, grade >= relevant, p.id not in kept)
            if retriever.ranks_by_probability:
                for t in PROBABILITY_GRID:
                    _count(report.grid.setdefault(t, CutEffect()), grade >= relevant, p.score < t)
        if n % 500 == 0:
            logger.info("eval recommend: %d/%d queries", n, len(judged))
    report.seconds = time.perf_counter() - started
    return report
