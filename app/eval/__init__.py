"""Offline retrieval evaluation: condensed nDCG@10 of dense, BM25 and the service's ranking.

python -m app.eval [--dataset DIR | --queries Q --qrels R --products FILE]
"""

from app.eval.ndcg import condensed_ndcg_at_k, dcg, ndcg_at_k
from app.eval.runner import EvalReport, evaluate

__all__ = ["EvalReport", "condensed_ndcg_at_k", "dcg", "evaluate", "ndcg_at_k"]
