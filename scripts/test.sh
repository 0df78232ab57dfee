#!/usr/bin/env bash
# Run every netaware test on a fresh Debian machine: installs what is missing, starts PostgreSQL
# and Redis when they are down, then lints, type-checks the pure modules and runs pytest.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ensure_system_packages
ensure_chromium
ensure_venv
ensure_postgres
ensure_redis

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/netaware}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
# Everything a test needs is installed above, so a skipped test means an unproven requirement.
export NETAWARE_FAIL_ON_SKIP="${NETAWARE_FAIL_ON_SKIP:-1}"

log "ruff"
"$VENV/bin/ruff" check .
log "mypy (pure modules)"
"$VENV/bin/mypy"
log "pytest"
set +e
"$PY" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  die "pytest collected no tests: that is a failure here"
fi
exit "$rc"
