"""`python -m app.sync [--once | --loop | --verify | --full]`: the sync as its own process.

--once    one cycle; prints `embedded N`, `loaded N` (vectors from spark_jobs.embed),
          `skipped N`, `deleted N`
--loop    a cycle every SYNC_INTERVAL_SECONDS until interrupted; any failed cycle is
          logged and retried with backoff (app/sync/backoff.py), never fatal
--full    one cycle that reconciles the whole table (re-embeds only what changed)
--verify  check the mirror invariant of the serving index (with the encoder it was built
          with); prints `model M`, `missing N`, `stale N`, `extra N`; exit 1 if any

With LEARNED_MODEL (or EMBEDDING_MODEL) naming another encoder than the serving index's,
each cycle also builds that encoder's index beside it and switches once it verifies
(app/sync/switch.py).

Exit codes: 0 done, 1 verify found differences, 2 store/table/model error (a model
with no export and no torch to load it: app/embedding/exported.py), 3 another process
is syncing the same collection (app/sync/lock.py on this host, app/sync/lease.py across
hosts sharing a Qdrant server, or took the lease over mid-cycle; --loop waits for it instead).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time

from app.core.config import get_settings
from app.core.errors import TerminalError
from app.core.logging import configure_logging
from app.store import StoreError
from app.sync.backoff import RetryLoop
from app.sync.hudi_source import TableReadError
from app.sync.lease import LeaseHeldError, LeaseLostError
from app.sync.lock import SyncBusyError
from app.sync.switch import ModelSwitch, open_indexes
from app.sync.verify import mirror_verify

logger = logging.getLogger("app.sync")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.sync", description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="run one cycle (default)")
    mode.add_argument("--loop", action="store_true", help="run cycles until interrupted")
    mode.add_argument("--full", action="store_true", help="one full reconciliation cycle")
    mode.add_argument("--verify", action="store_true", help="check the mirror invariant")
    args = parser.parse_args(argv)

    settings = get_settings()
    configure_logging(settings.log_level)
    try:
        # --verify reads the serving index only: it opens (creates) no index beside it.
        switch = open_indexes(settings, build=not args.verify)
        try:
            if args.verify:
                engine = switch.serving
                report = mirror_verify(settings, engine.store, engine.chunker)
                print(f"model {switch.serving_model}")
                print(f"checkpoint {report.checkpoint}")
                print(f"products {report.products}")
                print(f"chunks {report.stored_chunks} (expected {report.expected_chunks})")
                print(f"missing {report.missing}")
                print(f"stale {report.stale}")
                print(f"extra {report.extra}")
                return 0 if report.ok else 1
            if args.loop:
                return _loop(switch, settings.sync_interval_seconds)
            cycle = switch.run_cycle(full=args.full)
            print(f"mode {cycle.mode}")
            print(f"checkpoint {cycle.end}")
            print(f"rows {cycle.rows}")
            print(f"embedded {cycle.embedded}")
            print(f"loaded {cycle.loaded}")
            print(f"skipped {cycle.skipped}")
            print(f"deleted {cycle.deleted}")
            print(f"payload_updates {cycle.payload_updates}")
            print(f"sparse_rewrites {cycle.sparse_rewrites}")
            print(f"model {switch.serving_model}")
            return 0
        finally:
            switch.close()
    except (SyncBusyError, LeaseHeldError, LeaseLostError) as e:
        print(f"busy: {e}", file=sys.stderr)
        return 3
    except (StoreError, TableReadError, TerminalError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _loop(switch: ModelSwitch, interval: float) -> int:
    """Cycles until interrupted; the caller's `switch.close()` releases the lease (the next
    syncer need not wait for its expiry)."""
    logger.info("sync loop every %.1fs", interval)
    # Started in the background of a non-interactive shell, a process inherits SIGINT
    # ignored and Python then installs no KeyboardInterrupt handler; SIGTERM (docker stop,
    # systemd) would kill it with its lease held. Both stop the loop cleanly here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    loop = RetryLoop(interval, logger)
    try:
        while (delay := loop.step(switch.run_cycle)) is not None:
            time.sleep(delay)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
