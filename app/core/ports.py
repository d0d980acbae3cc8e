"""A free loopback port, for a process started on one (the eval's service over HTTP, the
benches' and the tests' servers)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nothing on 127.0.0.1 listens on now (the OS's choice; free until another
    process binds it, so bind it soon)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
