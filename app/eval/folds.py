"""Folds by query: a query's fold is a hash of its qid, the same on every machine and run,
so training (`app.learn`) and scoring (`python -m app.eval --fold`) agree on which queries
a model never saw, and adding queries moves no other query between folds."""

from __future__ import annotations

import hashlib


def fold_of(qid: str, folds: int) -> int:
    """The query's fold in 0..folds-1 (sha256 of the qid, first 8 bytes, mod folds)."""
    return int.from_bytes(hashlib.sha256(qid.encode()).digest()[:8], "big") % folds
