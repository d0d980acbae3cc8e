"""Offline retrieval evaluation: nDCG@10 of the service's ranking vs a whole-text dense baseline.

python -m app.eval [--queries Q] [--qrels R] [--products FILE | --use-store]
"""

from app.eval.metrics import dcg, ndcg_at_k
from app.eval.runner import EvalReport, evaluate

__all__ = ["EvalReport", "dcg", "evaluate", "ndcg_at_k"]
