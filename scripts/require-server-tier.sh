#!/usr/bin/env bash
# CI's check that the server tier of the tests can run (.ci/run calls it before ./test.sh):
# QDRANT_TEST_URL names a server, or QDRANT_SERVER_BIN a qdrant binary that runs. Fails
# with the reason otherwise; tests/conftest.py checks the same again under
# REQUIRE_SERVER_TIER=1, so no run of CI can deselect the tier and stay green.
set -euo pipefail
if [ -n "${QDRANT_TEST_URL:-}" ]; then
  exit 0
fi
fail() {
  echo "[ci] the server tier is required and cannot run: $*" >&2
  exit 1
}
bin=${QDRANT_SERVER_BIN:-}
[ -n "$bin" ] || fail "QDRANT_SERVER_BIN is unset (and no ../shared/tools/qdrant/qdrant.sh to find one)"
[ -f "$bin" ] || fail "QDRANT_SERVER_BIN=$bin: no such file"
version=$("$bin" --version 2>&1) || fail "QDRANT_SERVER_BIN=$bin does not run: $version"
case "$version" in
  qdrant*) echo "[ci] server tier: $version ($bin)" ;;
  *) fail "QDRANT_SERVER_BIN=$bin is not a working qdrant: --version said '$version'" ;;
esac
