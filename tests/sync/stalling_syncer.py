"""`python -m tests.sync.stalling_syncer ARGS`: `python -m app.sync ARGS` that pauses itself.

The process stops itself with a real SIGSTOP just before its first batch of points goes to
the server: the lease check before the batch has passed, the write is built but not sent.
It first prints the batch (`late batch: {"points": [...], "products": [...]}`) so the test
can change exactly those products while it is stopped. Only the moment is chosen here; the
pause, the process and the write after SIGCONT are real.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence

from app.store.base import ChunkPoint
from app.store.qdrant_client_store import QdrantClientStore
from app.sync.__main__ import main

_upsert = QdrantClientStore.upsert
_stalled = False


def _stalling_upsert(self: QdrantClientStore, points: Sequence[ChunkPoint]) -> None:
    global _stalled
    if not _stalled and points:
        _stalled = True
        batch = {
            "points": [p.id for p in points],
            "products": sorted({int(p.payload["product_id"]) for p in points}),
        }
        print(f"late batch: {json.dumps(batch)}", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
    _upsert(self, points)


QdrantClientStore.upsert = _stalling_upsert  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
