#!/usr/bin/env bash
# Bring up the whole netaware system on this machine (a fresh Debian 12 works: installs what is
# missing): PostgreSQL access of its own (or DATABASE_URL as it is), Redis, the emulated cluster of
# $NETAWARE_SCENARIO — its probe metrics and a demo Kubernetes API for its nodes —, a Prometheus with
# a generated scrape config, the web server (granian, authentication on), a Celery worker and beat,
# the scheduler extender (its own process), the cluster watcher and the AppGroup sync; an admin user
# with a generated password. Once the first measured topology is in, it schedules the shipped
# Online Boutique AppGroup into the demo cluster through the extender, as kube-scheduler would, and
# prints where the pods landed. Short progress lines, then the URLs, the login and the demo result;
# everything else (apt, pip, Django) goes to var/log/setup.log.
#
#   bash scripts/up.sh           start everything (idempotent), print the URLs, run the demo rollout
#   bash scripts/up.sh rollout [--profile P] [--appgroup FILE] [--replicas N] [--seed S] [--learned]
#                                schedule an AppGroup again (the stack must be up)
#   bash scripts/up.sh degrade ZONE_A ZONE_B [--rtt-ms MS] [--loss-pct PERCENT]
#                                degrade a zone pair's link in the emulator (the rebalancer's demo,
#                                docs/rebalancer.md); e.g. degrade A B --rtt-ms 40 --loss-pct 2 (percent, as
#                                in scenarios and manage.py evaluate --degrade)
#   bash scripts/up.sh status    show what runs
#   bash scripts/up.sh stop      stop what this script started
#   bash scripts/up.sh logs      tail the logs
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

RUN="$STATE/run"
WEB_PORT="${NETAWARE_WEB_PORT:-8000}"
PROM_PORT="${NETAWARE_PROMETHEUS_PORT:-9090}"
EMU_PORT="${NETAWARE_EMULATOR_PORT:-9200}"
KUBE_PORT="${NETAWARE_KUBE_PORT:-8010}"
EXT_PORT="${NETAWARE_EXTENDER_PORT:-8001}"
EXT_HEALTH_PORT="${NETAWARE_EXTENDER_HEALTH_PORT:-8002}"
MESH_PORT="${NETAWARE_MESH_PORT:-9210}"
SCENARIO="${NETAWARE_SCENARIO:-$ROOT/scenarios/paper-testbed.yaml}"
DB_NAME="${NETAWARE_DB_NAME:-netaware}"
ADMIN_USER="${NETAWARE_ADMIN_USER:-admin}"
PROCS=(kubeapi emulator mesh prometheus web worker beat extender watcher sync scheduler rebalancer)

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export PROMETHEUS_URL="${PROMETHEUS_URL:-http://127.0.0.1:$PROM_PORT}"
export NETAWARE_SCENARIO="$SCENARIO"
export NETAWARE_STATIC_ROOT="${NETAWARE_STATIC_ROOT:-$STATE/static}"
# Every process talks to the demo cluster's API (the extender's informers, the watcher, the sync,
# the NetworkTopology publisher); nothing is trusted for being local: the extender binds only pods of
# netaware-scheduler.
export KUBE_API_URL="${KUBE_API_URL:-http://127.0.0.1:$KUBE_PORT}"
EXTENDER_URL="http://127.0.0.1:$EXT_PORT/scheduler"
EXTENDER_HEALTH="http://127.0.0.1:$EXT_HEALTH_PORT"
# Secure by default, even locally: API writes and dashboard edits need a logged-in user, no debug pages.
export NETAWARE_REQUIRE_AUTH="${NETAWARE_REQUIRE_AUTH:-1}" DEBUG="${DEBUG:-false}"
# The demo scrapes every 5 s; 1 minute rate windows give fresh quantiles within a minute or two.
export NETAWARE_RATE_WINDOW="${NETAWARE_RATE_WINDOW:-1m}"
export NETAWARE_PULL_WINDOW_SECONDS="${NETAWARE_PULL_WINDOW_SECONDS:-15}"
# The demo cluster's replacement pods are Ready at once: its rebalancer may pass every 5 s and move up to
# 6 pods a minute per AppGroup (the defaults, 10 s and 2, leave time for real pods to start).
export NETAWARE_REBALANCER_INTERVAL_SECONDS="${NETAWARE_REBALANCER_INTERVAL_SECONDS:-5}"
export NETAWARE_REBALANCER_APPGROUP_MOVES_PER_MINUTE="${NETAWARE_REBALANCER_APPGROUP_MOVES_PER_MINUTE:-6}"
# Larger scenarios (e.g. NETAWARE_SCENARIO=scenarios/large-1000.yaml) scrape less often: 15 s suits 1,000 nodes.
SCRAPE_INTERVAL="${NETAWARE_SCRAPE_INTERVAL:-5s}"

pidfile() { echo "$RUN/$1.pid"; }
running() { local f; f="$(pidfile "$1")"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

STARTED=()
start_proc() {
  # start_proc NAME CMD... : start CMD in its own session unless NAME already runs.
  local name="$1"; shift
  running "$name" && return 0
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  STARTED+=("$name")
}

stop_procs() {
  # stop_procs NAME... : SIGTERM to every one at once (each its whole session), up to 10 s for all to
  # exit (a Celery worker finishes its task, gunicorn its requests), then SIGKILL what is left.
  local name pid pids=() names=()
  for name in "$@"; do
    if running "$name"; then
      pid="$(cat "$(pidfile "$name")")"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid"); names+=("$name")
    fi
    rm -f "$(pidfile "$name")"
  done
  local _ alive
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && { alive=1; break; }; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  for name in "${names[@]}"; do say "stopped $name"; done
}
stop_all() { stop_procs "${PROCS[@]}"; }

on_exit() {
  # A failed start leaves nothing half-running: stop what this run started (logs stay).
  local rc=$?
  if [ "$rc" -ne 0 ] && [ ${#STARTED[@]} -gt 0 ]; then
    stop_procs "${STARTED[@]}" >/dev/null
    echo "[netaware] stopped what this run had started; logs are in $(short_path "$LOGS")/" >&2
  fi
}

wait_http() {
  # wait_http URL SECONDS NAME
  for _ in $(seq 1 $(( $2 * 5 ))); do
    curl -fsS --max-time 5 -o /dev/null "$1" 2>/dev/null && return 0
    running "$4" || die "$3 exited during start-up; see $(short_path "$LOGS/$4.log")"
    sleep 0.2
  done
  die "$3 did not answer at $1 within $2 s; see $(short_path "$LOGS/$4.log")"
}

port_holder() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n1 \
    | sed 's/users:(("\([^"]*\)",pid=\([0-9]*\)/ by \1 (pid \2)/'
}
check_ports() {
  # check_ports PROC:PORT:VARIABLE... : every port netaware is about to listen on is free (a port of
  # a process of ours that already runs is fine: starting again is idempotent).
  local spec name port var
  for spec in "$@"; do
    IFS=: read -r name port var <<<"$spec"
    running "$name" && continue
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      die "port $port (for netaware's $name) is already in use$(port_holder "$port"). Stop that program, or choose another port: $var=<free port> bash scripts/up.sh"
    fi
  done
}

check_scenario() {
  local out
  [ -f "$SCENARIO" ] || die "scenario file $SCENARIO does not exist: set NETAWARE_SCENARIO to a scenario file (e.g. scenarios/paper-testbed.yaml)"
  if ! out="$("$PY" manage.py run_emulator --scenario "$SCENARIO" --check 2>&1)"; then
    echo "$out" >>"$SETUP_LOG"
    die "scenario file $(short_path "$SCENARIO") has an error: $(echo "$out" | grep -v '^$' | sed 's/^CommandError: //' | tr -s ' \n' ' ' | sed 's/ *$//'). Fix the file, or set NETAWARE_SCENARIO to another one (the default is scenarios/paper-testbed.yaml)."
  fi
}

ensure_secret_key() {
  if [ -n "${SECRET_KEY:-}${SECRET_KEY_FILE:-}" ]; then return 0; fi
  [ -s "$SECRETS/secret-key" ] || write_secret "$SECRETS/secret-key" "$(new_password)$(new_password)"
  export SECRET_KEY_FILE="$SECRETS/secret-key"
}

ensure_admin() {
  # An admin user with a generated password kept in $SECRETS/admin-password. A password file that
  # is new (first run, or deleted) also resets the user's password, so the printed login works.
  local file="$SECRETS/admin-password" fresh=0
  if [ ! -s "$file" ]; then write_secret "$file" "$(new_password | cut -c1-24)"; fresh=1; fi
  NETAWARE_ADMIN_PASSWORD_FILE="$file" NETAWARE_ADMIN_RESET="$fresh" NETAWARE_ADMIN_USER="$ADMIN_USER" \
    quietly "creating the admin user" "$PY" manage.py shell --no-imports -c '
import os
from pathlib import Path
from django.contrib.auth import get_user_model
User = get_user_model()
name = os.environ["NETAWARE_ADMIN_USER"]
password = Path(os.environ["NETAWARE_ADMIN_PASSWORD_FILE"]).read_text().strip()
user = User.objects.filter(username=name).first()
if user is None:
    User.objects.create_superuser(username=name, email="", password=password)
    print("created admin user", name)
elif os.environ["NETAWARE_ADMIN_RESET"] == "1":
    user.set_password(password)
    user.is_active = user.is_staff = user.is_superuser = True
    user.save()
    print("reset the password of", name)
'
}

serve_kube_api() {
  # The demo cluster: an in-memory API speaking the Kubernetes protocol, holding the scenario's nodes
  # (not a Kubernetes substitute: nothing runs pods). kubectl works against it.
  start_proc kubeapi "$PY" manage.py demo_cluster --scenario "$SCENARIO" --host 127.0.0.1 --port "$KUBE_PORT"
  wait_http "$KUBE_API_URL/version" 60 "the demo cluster API" kubeapi
}

start_scheduling() {
  start_proc extender "$PY" manage.py run_extender --bind "127.0.0.1:$EXT_PORT" \
    --health-bind "127.0.0.1:$EXT_HEALTH_PORT"
  start_proc watcher "$PY" manage.py watch_cluster
  start_proc sync "$PY" manage.py sync_appgroups --watch
  # The demo cluster's kube-scheduler for replacement pods (evicted by the rebalancer), and the rebalancer.
  start_proc scheduler "$PY" manage.py demo_scheduler --api "$KUBE_API_URL" --extender "$EXTENDER_URL"
  start_proc rebalancer "$PY" manage.py run_rebalancer
}

run_demo_rollout() {
  # run_demo_rollout [ARGS...] : schedule an AppGroup (default: Online Boutique) through the extender.
  "$PY" manage.py rollout --api "$KUBE_API_URL" --extender "$EXTENDER_URL" \
    --extender-health "$EXTENDER_HEALTH" --scenario "$SCENARIO" "$@" 2>>"$LOGS/rollout.log" | tee -a "$LOGS/rollout.log"
  return "${PIPESTATUS[0]}"
}

case "${1:-up}" in
  rollout)
    shift
    running extender && running kubeapi || die "the stack is not running: start it with bash scripts/up.sh"
    [ -f "$SECRETS/database-url" ] && export DATABASE_URL_FILE="$SECRETS/database-url"
    [ -f "$SECRETS/secret-key" ] && export SECRET_KEY_FILE="$SECRETS/secret-key"
    run_demo_rollout "$@" || die "the rollout failed; see $(short_path "$LOGS/rollout.log")"
    exit 0 ;;
  degrade)
    shift
    [ $# -ge 2 ] || die "usage: bash scripts/up.sh degrade ZONE_A ZONE_B [--rtt-ms MS] [--loss-pct PERCENT]"
    running emulator || die "the stack is not running: start it with bash scripts/up.sh"
    zone_a="$1" zone_b="$2"; shift 2
    rtt=40 loss=2
    while [ $# -gt 0 ]; do
      case "$1" in
        --rtt-ms) rtt="${2:-}"; shift 2 ;;
        --loss-pct) loss="${2:-}"; shift 2 ;;
        *) die "degrade: unknown option '$1' (use --rtt-ms MS, --loss-pct PERCENT)" ;;
      esac
    done
    body="$("$PY" -c 'import json,sys; print(json.dumps({"zones": sys.argv[1:3], "rtt_ms": float(sys.argv[3]), "loss": float(sys.argv[4]) / 100}))' \
      "$zone_a" "$zone_b" "$rtt" "$loss" 2>/dev/null)" || die "degrade: --rtt-ms and --loss-pct must be numbers"
    answer="$(curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data "$body" \
      -w '\n%{http_code}' "http://127.0.0.1:$EMU_PORT/links/degrade")" || die "the emulator did not answer"
    code="${answer##*$'\n'}"; text="${answer%$'\n'*}"; text="${text%$'\n'}"
    [ "$code" = 200 ] || die "degrade: $text"
    echo "$text"
    echo "The topology follows within a minute or two; AppGroups with spec.rebalanceMode on move (see the"
    echo "AppGroup's status.rebalance, kubectl --server $KUBE_API_URL get events, and $LOGS/rebalancer.log)."
    exit 0 ;;
  stop) stop_all; exit 0 ;;
  status)
    for name in "${PROCS[@]}"; do
      if running "$name"; then echo "$name: running (pid $(cat "$(pidfile "$name")"))"; else echo "$name: stopped"; fi
    done
    exit 0 ;;
  logs) exec tail -n 50 -F "$LOGS"/*.log ;;
  up) ;;
  *) die "unknown command '$1' (use: up, rollout, degrade, status, stop, logs)" ;;
esac

prepare_state
mkdir -p "$RUN"
trap on_exit EXIT
printf '\n===== %s  scripts/up.sh\n' "$(date '+%F %T')" >>"$SETUP_LOG"

PORTS=("web:$WEB_PORT:NETAWARE_WEB_PORT" "prometheus:$PROM_PORT:NETAWARE_PROMETHEUS_PORT"
       "emulator:$EMU_PORT:NETAWARE_EMULATOR_PORT" "kubeapi:$KUBE_PORT:NETAWARE_KUBE_PORT"
       "extender:$EXT_PORT:NETAWARE_EXTENDER_PORT" "extender:$EXT_HEALTH_PORT:NETAWARE_EXTENDER_HEALTH_PORT"
       "mesh:$MESH_PORT:NETAWARE_MESH_PORT")
check_ports "${PORTS[@]}"
check_system_packages
check_local_postgres netaware
require_root_if_needed

say "checking system packages"
ensure_system_packages
check_ports "${PORTS[@]}"  # again: a package just installed may have started a service on one
ensure_venv requirements.txt
check_scenario
say "setting up the database"
ensure_database netaware "NOCREATEDB" "$DB_NAME" "$SECRETS/database-url"
unset DATABASE_URL
export DATABASE_URL_FILE="$SECRETS/database-url"
ensure_redis "$REDIS_URL"
ensure_secret_key

say "migrating the database"
quietly "migrate" "$PY" manage.py migrate --noinput
quietly "collectstatic" "$PY" manage.py collectstatic --noinput
ensure_admin
quietly "loading the nodes of $(short_path "$SCENARIO")" "$PY" manage.py load_nodes --scenario "$SCENARIO"
quietly "writing the Prometheus config" "$PY" manage.py run_emulator --scenario "$SCENARIO" --host 127.0.0.1 \
  --port "$EMU_PORT" --write-prometheus-config "$STATE/prometheus.yml" --scrape-interval "$SCRAPE_INTERVAL" --config-only \
  --extra-target "mesh=127.0.0.1:$MESH_PORT"

to_start=(); for name in "${PROCS[@]}"; do running "$name" || to_start+=("$name"); done
if [ ${#to_start[@]} -gt 0 ]; then say "starting ${to_start[*]}"; else say "already running: ${PROCS[*]}"; fi
serve_kube_api
start_proc emulator "$PY" manage.py run_emulator --scenario "$SCENARIO" --host 127.0.0.1 --port "$EMU_PORT"
# Online Boutique's mesh traffic (Istio, Linkerd, OpenTelemetry formats), learned by apps.traffic (docs/traffic.md)
start_proc mesh "$PY" manage.py run_mesh_emulator --host 127.0.0.1 --port "$MESH_PORT"
start_proc prometheus "$(command -v prometheus)" --config.file="$STATE/prometheus.yml" \
  --storage.tsdb.path="$STATE/prometheus-data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  --storage.tsdb.retention.time=2d --web.enable-lifecycle
# granian (manage.py run_web): no ingress in front here, so the server itself survives slow clients.
start_proc web "$PY" manage.py run_web --bind "127.0.0.1:$WEB_PORT" --workers 2 --threads 4 --access-log
start_proc worker "$VENV/bin/celery" -A netaware_site worker --loglevel INFO --concurrency 2
start_proc beat "$VENV/bin/celery" -A netaware_site beat --loglevel INFO \
  --scheduler django_celery_beat.schedulers:DatabaseScheduler --pidfile=
start_scheduling

wait_http "http://127.0.0.1:$PROM_PORT/-/ready" 60 prometheus prometheus
wait_http "http://127.0.0.1:$WEB_PORT/healthz" 60 "the web server" web
wait_http "$EXTENDER_HEALTH/healthz" 60 "the extender" extender

BASE="http://127.0.0.1:$WEB_PORT"
# The dashboard's own login page once it exists, the admin's until then.
LOGIN="$BASE/admin/login/"
[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$BASE/login/")" = 200 ] && LOGIN="$BASE/login/"
cat <<TXT

netaware is up (scenario: $(basename "$SCENARIO")).
  Dashboard    $BASE/
  Log in       $LOGIN   as $ADMIN_USER, password: cat $SECRETS/admin-password
  API          $BASE/api/docs/   (schema: /api/schema/)
  Topology     $BASE/api/topology/   (filled within ~2 minutes)
  Extender     $EXTENDER_URL/{filter,prioritize,bind,preempt}   (readiness: $EXTENDER_HEALTH/readyz)
  Demo cluster $KUBE_API_URL   (kubectl --server $KUBE_API_URL get nodes,pods -o wide)
  Admin        $BASE/admin/
  Prometheus   http://127.0.0.1:$PROM_PORT/
  Observed     $BASE/api/traffic/observed/   (Online Boutique learned from its mesh traffic within a few minutes)
  Readiness    $BASE/readyz
Logs in $(short_path "$LOGS")/; stop with: bash scripts/up.sh stop
TXT
if [ "${NETAWARE_DEMO_ROLLOUT:-1}" = 1 ]; then
  say "waiting for the first measured topology, then the demo rollout (NETAWARE_DEMO_ROLLOUT=0 skips it)"
  # Fresh and covering every node (probe metrics -> Prometheus -> pipeline -> snapshot: a minute or
  # two). The extender's readiness alone is not enough: it is ready with a snapshot of the scenario's
  # nodes stored before any probe window (nothing measured, so the scores ignore the network).
  echo
  run_demo_rollout --wait-for-fresh-topology 300 \
    || die "the demo rollout failed: $(tail -n 1 "$LOGS/rollout.log"); see $(short_path "$LOGS/rollout.log")"
  echo "Again, another way: bash scripts/up.sh rollout [--profile network|hybrid|balanced] [--appgroup FILE]"
  echo "See it: $BASE/placements/ and $BASE/decisions/"
fi
