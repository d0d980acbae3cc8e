"""What /proc says about a running service (Linux): its API processes and their TCP sockets.

Shared by bench/service_process.py (a bench starts measuring once every worker listens)
and tests/api/test_api_processes.py (each worker holds a socket of its own).
"""

from __future__ import annotations

import os
from pathlib import Path

LISTEN, ESTABLISHED = "0A", "01"


def children(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def api_workers(parent: int) -> set[int]:
    """The API processes of a supervisor (app/api/serve.py): its spawned children, not
    multiprocessing's resource tracker."""
    found = set()
    for child in children(parent):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue  # exited between the two reads
        if b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline:
            found.add(child)
    return found


def tcp_sockets(pid: int, port: int) -> dict[str, list[str]]:
    """The TCP sockets on `port` the process `pid` holds, by state (ESTABLISHED, LISTEN):
    their inodes (a socket shared by several processes appears in each)."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            held.add(target[8:-1])
    found: dict[str, list[str]] = {ESTABLISHED: [], LISTEN: []}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if local_port == port and state in found and inode in held:
                found[state].append(inode)
    return found


def listening_inodes(port: int) -> set[str]:
    """The inodes of every socket listening on `port`, whoever holds it."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == LISTEN:
                found.add(fields[9])
    return found


def all_listening(parent: int, port: int, workers: int) -> bool:
    """`workers` API processes, each listening on `port` (a worker listens only once its
    start-up is done, so then every one of them takes connections)."""
    pids = api_workers(parent)
    try:
        return len(pids) == workers and all(tcp_sockets(pid, port)[LISTEN] for pid in pids)
    except FileNotFoundError:
        return False  # a worker exited while we read it
