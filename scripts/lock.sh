#!/usr/bin/env bash
# Re-resolve requirements.lock from pyproject.toml's ranges. Run it after changing a
# dependency, commit both files; ./scripts/bootstrap.sh installs exactly what the lock pins,
# so two clones a week apart run the same torch, Spark and Qdrant.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/uv ] || ./scripts/bootstrap.sh
.venv/bin/uv pip compile pyproject.toml --extra spark --extra dev \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  --custom-compile-command ./scripts/lock.sh -q -o requirements.lock
echo "requirements.lock updated; commit it with pyproject.toml" >&2
