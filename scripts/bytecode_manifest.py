"""Record which of the venv's site-packages modules have been compiled (imported) so far.

    .venv/bin/python scripts/bytecode_manifest.py MANIFEST

./test.sh runs it after the tests. The venv's interpreters write bytecode on first import
into .venv/pycache (scripts/bootstrap.sh), so its site-packages part lists what the tests
and services import: ~5,200 of ~20,500 modules. The paths, relative to site-packages, are
added to MANIFEST (one per locked dependency set, outside the checkout); the next clone's
set-up compiles exactly those, on every core, before anything runs (~9 s wall on 2 cores),
instead of the first test processes compiling them on first import (a fresh clone's fast
tier: 62 s without, 55 s with).
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path


def compiled_modules() -> set[str]:
    """Source paths, relative to site-packages, with bytecode under sys.pycache_prefix."""
    if sys.pycache_prefix is None:
        return set()
    site = Path(sysconfig.get_path("purelib"))
    # The prefix mirrors each source file's absolute path.
    mirror = Path(sys.pycache_prefix) / site.relative_to(site.anchor)
    # Only the interpreter's own bytecode: pytest's rewritten test modules carry a tag
    # of their own ("cpython-311-pytest-9.2.0") and are not what import compiles.
    suffix = f".{sys.implementation.cache_tag}.pyc"
    found: set[str] = set()
    for pyc in mirror.rglob(f"*{suffix}"):
        source = Path(importlib.util.source_from_cache(str(pyc)))
        if source.is_file():
            found.add(str(source.relative_to(site)))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    manifest = Path(argv[0])
    known = set(manifest.read_text().splitlines()) if manifest.is_file() else set()
    modules = compiled_modules() | known
    if modules != known:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        partial = manifest.with_name(f".{manifest.name}.partial")
        partial.write_text("".join(f"{m}\n" for m in sorted(modules)))
        partial.replace(manifest)  # a concurrent set-up never reads half a list
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
