"""What every job's `main()` shares: logging set-up and turning failures into one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from spark_jobs.errors import JobError

logger = logging.getLogger(__name__)

EXIT_JOB_ERROR = 2
EXIT_UNEXPECTED = 1


def configure_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # py4j logs every JVM call at DEBUG/INFO; it drowns the jobs' own progress lines.
    logging.getLogger("py4j").setLevel(logging.WARNING)


def run(job: Callable[[], None], *, verbose: bool = False) -> int:
    """Run a job body; a JobError (or any failure) becomes one line on stderr, not a traceback."""
    try:
        job()
    except JobError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_JOB_ERROR
    except Exception as e:
        if verbose:
            logger.exception("job failed")
        first = (str(e).strip().splitlines() or [""])[0][:300]
        print(f"error: {type(e).__name__}: {first} (rerun with --verbose)", file=sys.stderr)
        return EXIT_UNEXPECTED
    return 0
