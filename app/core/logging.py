"""Logging setup, called only by entry points (the API lifespan, CLIs)."""

from __future__ import annotations

import logging


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Third-party chatter that drowns the sync's own progress lines.
    for noisy in ("httpx", "sentence_transformers", "urllib3", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
