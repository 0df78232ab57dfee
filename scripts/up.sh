#!/usr/bin/env bash
# Bring up the whole netaware system on this machine (fresh Debian works: installs what is missing):
# PostgreSQL and Redis (started or installed when none is reachable), the emulated cluster of
# $NETAWARE_SCENARIO served as probe metrics, a Prometheus with a generated scrape config, the web
# server (gunicorn), a Celery worker and Celery beat.
#
#   bash scripts/up.sh           start everything (idempotent) and print the URLs
#   bash scripts/up.sh status    show what runs
#   bash scripts/up.sh stop      stop what this script started
#   bash scripts/up.sh logs      tail the logs
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

STATE="${NETAWARE_STATE_DIR:-$ROOT/var}"
RUN="$STATE/run"; LOGS="$STATE/log"
WEB_PORT="${NETAWARE_WEB_PORT:-8000}"
PROM_PORT="${NETAWARE_PROMETHEUS_PORT:-9090}"
EMU_PORT="${NETAWARE_EMULATOR_PORT:-9200}"
SCENARIO="${NETAWARE_SCENARIO:-$ROOT/scenarios/paper-testbed.yaml}"
DB_NAME="${NETAWARE_DB_NAME:-netaware}"
PROCS=(emulator prometheus web worker beat)

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/$DB_NAME}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export PROMETHEUS_URL="${PROMETHEUS_URL:-http://127.0.0.1:$PROM_PORT}"
export NETAWARE_SCENARIO="$SCENARIO"
# The demo scrapes every 5 s; 1 minute rate windows give fresh quantiles within a minute or two.
export NETAWARE_RATE_WINDOW="${NETAWARE_RATE_WINDOW:-1m}"
export NETAWARE_PULL_WINDOW_SECONDS="${NETAWARE_PULL_WINDOW_SECONDS:-15}"

pidfile() { echo "$RUN/$1.pid"; }
running() { local f; f="$(pidfile "$1")"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

start_proc() {
  # start_proc NAME CMD... : start CMD in its own session unless NAME already runs.
  local name="$1"; shift
  if running "$name"; then log "$name already running (pid $(cat "$(pidfile "$name")"))"; return 0; fi
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  log "started $name (pid $!, log $LOGS/$name.log)"
}

stop_all() {
  for name in "${PROCS[@]}"; do
    if running "$name"; then
      local pid; pid="$(cat "$(pidfile "$name")")"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
      log "stopped $name"
    fi
    rm -f "$(pidfile "$name")"
  done
}

wait_http() {
  # wait_http URL SECONDS NAME
  for _ in $(seq 1 $(( $2 * 5 ))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  die "$3 did not answer at $1 within $2 s (see $LOGS/)"
}

case "${1:-up}" in
  stop) stop_all; exit 0 ;;
  status)
    for name in "${PROCS[@]}"; do
      if running "$name"; then echo "$name: running (pid $(cat "$(pidfile "$name")"))"; else echo "$name: stopped"; fi
    done
    exit 0 ;;
  logs) exec tail -n 50 -F "$LOGS"/*.log ;;
  up) ;;
  *) die "unknown command '$1' (use: up, status, stop, logs)" ;;
esac

mkdir -p "$RUN" "$LOGS"
apt_install curl
ensure_system_packages
ensure_venv
ensure_postgres
ensure_redis
ensure_database "$DB_NAME"

log "migrating $DATABASE_URL"
"$PY" manage.py migrate --noinput >"$LOGS/migrate.log" 2>&1 || { tail -n 30 "$LOGS/migrate.log"; die "migrate failed"; }
"$PY" manage.py collectstatic --noinput >/dev/null 2>&1 || true
log "loading nodes of $SCENARIO"
"$PY" manage.py load_nodes --scenario "$SCENARIO" || die "cannot load nodes from $SCENARIO"

"$PY" manage.py run_emulator --scenario "$SCENARIO" --host 127.0.0.1 --port "$EMU_PORT" \
  --write-prometheus-config "$STATE/prometheus.yml" --scrape-interval 5s --config-only \
  || die "cannot write the Prometheus config for $SCENARIO"
start_proc emulator "$PY" manage.py run_emulator --scenario "$SCENARIO" --host 127.0.0.1 --port "$EMU_PORT"
start_proc prometheus "$(command -v prometheus)" --config.file="$STATE/prometheus.yml" \
  --storage.tsdb.path="$STATE/prometheus-data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  --storage.tsdb.retention.time=2d --web.enable-lifecycle
start_proc web "$VENV/bin/gunicorn" netaware_site.wsgi:application --bind "127.0.0.1:$WEB_PORT" \
  --workers 2 --worker-class gthread --threads 1 --keep-alive 30 --timeout 30 --access-logfile - 
start_proc worker "$VENV/bin/celery" -A netaware_site worker --loglevel INFO --concurrency 2
start_proc beat "$VENV/bin/celery" -A netaware_site beat --loglevel INFO \
  --scheduler django_celery_beat.schedulers:DatabaseScheduler --pidfile=

wait_http "http://127.0.0.1:$PROM_PORT/-/ready" 30 prometheus
wait_http "http://127.0.0.1:$WEB_PORT/healthz" 30 "web server"

cat <<TXT

netaware is up (scenario: $(basename "$SCENARIO")).
  Dashboard    http://127.0.0.1:$WEB_PORT/
  API          http://127.0.0.1:$WEB_PORT/api/docs/   (schema: /api/schema/)
  Topology     http://127.0.0.1:$WEB_PORT/api/topology/   (filled within ~2 minutes)
  Extender     http://127.0.0.1:$WEB_PORT/scheduler/{filter,prioritize,bind,preempt}
  Admin        http://127.0.0.1:$WEB_PORT/admin/   (create a user: .venv/bin/python manage.py createsuperuser)
  Prometheus   http://127.0.0.1:$PROM_PORT/
  Readiness    http://127.0.0.1:$WEB_PORT/readyz
Logs in $LOGS; stop with: bash scripts/up.sh stop
TXT
