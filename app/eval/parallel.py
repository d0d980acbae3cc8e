"""Judged queries run side by side, two at a time: the query encoder (ONNX Runtime or
OpenVINO) runs without the GIL, so a second thread overlaps it with the other query's
Python. The edge shard's search holds the GIL, which caps the gain (BENCHMARKS.md,
"Learning"). Every query is still searched alone, exactly as the
service searches it, so the scores do not depend on the thread count."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# More threads than cores only queue behind each other in the GIL's Python parts.
QUERY_THREADS = min(2, os.cpu_count() or 1)


def each_query(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None) -> Iterator[R]:
    """`fn` of each item, in the items' order, computed on `threads` threads (default
    QUERY_THREADS). The Retriever is shared by request threads in the service, so it is
    safe to share here."""
    threads = QUERY_THREADS if threads is None else threads
    if threads <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="eval-query") as pool:
        yield from pool.map(fn, items)
