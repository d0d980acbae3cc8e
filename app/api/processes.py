"""How many API processes serve one port (WEB_CONCURRENCY), and where only one can.

`python -m app.api.serve` (scripts/serve.sh) starts that many, or names the setting to change
and exits 2: more than one process needs SYNC_MODE=off (one syncer writes;
docs/scale-out.md) and a Qdrant server (the embedded engine's shard is one process's). Each
worker checks again at start (app/api/services.py), for a uvicorn started by hand, which
reads WEB_CONCURRENCY itself.
"""

from __future__ import annotations

from app.core.config import Settings
from app.core.errors import TerminalError


class ScaleOutError(TerminalError):
    """More API processes asked for (WEB_CONCURRENCY) than this configuration can run."""


def check_processes(settings: Settings) -> int:
    """WEB_CONCURRENCY, when this configuration can run that many API processes.

    Raises:
        ScaleOutError: with the setting to change.
    """
    n = settings.web_concurrency
    if n > 1 and settings.sync_mode != "off":
        raise ScaleOutError(
            f"WEB_CONCURRENCY={n} needs SYNC_MODE=off: API processes only serve, and one "
            "syncer (python -m app.sync --loop) writes the index"
        )
    if n > 1 and not settings.qdrant_urls:
        raise ScaleOutError(
            f"WEB_CONCURRENCY={n} needs a Qdrant server (QDRANT_URL): the embedded engine "
            f"at {settings.qdrant_path} is one process's"
        )
    return n
