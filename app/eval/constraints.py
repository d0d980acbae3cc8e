"""Constraint understanding on a labelled set: parse accuracy, budget violations, no nDCG loss.

`data/eval/constraints.jsonl` holds `{"qid", "query", "expect"}` lines; `expect` has the
constraints a shopper means (`min_price`, `max_price`, `category`, `price_preference`),
`{}` for look-alikes that state none ("a 100 mm lens"). A parse is right when it hears
exactly those. A product outside the *labelled* budget counts as a violation unless the
answer was flagged as nearest matches, so a budget the parser misses shows up here too.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.config import ROOT
from app.eval.data import EvalQuery
from app.eval.ndcg import ndcg_at_k
from app.query import OfflineQueryParser, ParsedQuery, constrained_retrieve, plan_filters
from app.query.category import CategoryVocabulary
from app.retrieval import Retriever
from app.store import VectorStore

DEFAULT_CONSTRAINTS = ROOT / "data" / "eval" / "constraints.jsonl"

Expected = dict[str, str | float]


@dataclass(frozen=True, slots=True)
class ConstraintCase:
    qid: str
    query: str
    expect: Expected


def load_constraint_cases(path: Path) -> list[ConstraintCase]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            expect = {k: v for k, v in dict(row["expect"]).items() if v is not None}
            out.append(ConstraintCase(str(row["qid"]), str(row["query"]), expect))
    return out


def heard(parsed: ParsedQuery) -> Expected:
    return {c.field: c.value for c in parsed.constraints}


@dataclass
class ConstraintReport:
    cases: int = 0
    parsed_right: int = 0
    # (qid, query, expected, heard)
    misses: list[tuple[str, str, Expected, Expected]] = field(default_factory=list)
    budget_cases: int = 0
    products_checked: int = 0
    outside_budget: int = 0
    nearest_answers: int = 0
    # nDCG@k of the judged queries: searched as written vs through query understanding.
    ndcg_plain: float | None = None
    ndcg_understood: float | None = None

    @property
    def accuracy(self) -> float:
        return self.parsed_right / self.cases if self.cases else 0.0


def evaluate_constraints(
    cases: Sequence[ConstraintCase],
    parser: OfflineQueryParser,
    categories: Collection[str],
    retriever: Retriever,
    *,
    top_k: int = 5,
) -> ConstraintReport:
    report = ConstraintReport(cases=len(cases))
    for case in cases:
        parsed = parser.parse(case.query, categories)
        got = heard(parsed)
        if got == case.expect:
            report.parsed_right += 1
        else:
            report.misses.append((case.qid, case.query, case.expect, got))
        low, high = case.expect.get("min_price"), case.expect.get("max_price")
        if low is None and high is None:
            continue
        report.budget_cases += 1
        outcome = constrained_retrieve(
            retriever, parsed.search_text, top_k, plan_filters(parsed, None)
        )
        if outcome.nearest:
            report.nearest_answers += 1
            continue
        # Products offered as outside the budget are flagged; only matches must fit it.
        for p in outcome.products:
            if p.outside_filters:
                continue
            report.products_checked += 1
            if p.price is None or not float(low or 0) <= p.price <= float(high or "inf"):
                report.outside_budget += 1
    return report


def ndcg_through_understanding(
    queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[int, float]],
    parser: OfflineQueryParser,
    categories: Collection[str],
    retriever: Retriever,
    k: int = 10,
) -> tuple[float, float]:
    """Mean nDCG@k of the judged queries searched as written, and as the API searches them."""
    plain, understood = [], []
    for q in queries:
        judged = qrels.get(q.qid)
        if not judged:
            continue
        plain.append(ndcg_at_k([p.id for p in retriever.retrieve(q.query, k)], judged, k))
        parsed = parser.parse(q.query, categories)
        # No margin cut: this measures what understanding costs, not what the cut removes
        # (tests/query/test_relevance_cut.py counts that).
        outcome = constrained_retrieve(
            retriever, parsed.search_text, k, plan_filters(parsed, None), margin=math.inf
        )
        understood.append(ndcg_at_k([p.id for p in outcome.products], judged, k))
    return statistics.fmean(plain), statistics.fmean(understood)


def format_report(report: ConstraintReport, k: int) -> list[str]:
    lines = [
        f"constraint queries       {report.cases}",
        f"parse accuracy           {report.accuracy:.4f} ({report.parsed_right}/{report.cases})",
        f"budget queries           {report.budget_cases} "
        f"({report.nearest_answers} answered with labelled nearest matches)",
        f"products outside budget  {report.outside_budget} of {report.products_checked}",
    ]
    if report.ndcg_plain is not None and report.ndcg_understood is not None:
        lines += [
            f"nDCG@{k} as written        {report.ndcg_plain:.4f}",
            f"nDCG@{k} understood        {report.ndcg_understood:.4f}",
        ]
    lines += [f"miss {qid}\t{q!r}\texpected {e}\theard {g}" for qid, q, e, g in report.misses]
    return lines


def report_constraints(
    cases: Sequence[ConstraintCase],
    queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[int, float]],
    store: VectorStore,
    retriever: Retriever,
    k: int = 10,
) -> list[str]:
    """The printed section of `python -m app.eval` (categories read from the store)."""
    parser = OfflineQueryParser()
    categories = CategoryVocabulary(store, refresh_seconds=3600).get()
    report = evaluate_constraints(cases, parser, categories, retriever)
    report.ndcg_plain, report.ndcg_understood = ndcg_through_understanding(
        queries, qrels, parser, categories, retriever, k
    )
    return format_report(report, k)
