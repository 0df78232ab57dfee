# Shared bootstrap for scripts/up.sh and scripts/test.sh: install what is missing, start services.
# Sourced, not executed. Idempotent: a second run installs and starts nothing new.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NETAWARE_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"
# numpy work per request is small: multi-threaded BLAS only adds stalls on small machines.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

log() { printf '\033[1;34m[netaware]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[netaware] error:\033[0m %s\n' "$*" >&2; exit 1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

APT_UPDATED=0
apt_install() {
  # apt_install PKG... : install the Debian packages that are not installed yet.
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  if [ "$APT_UPDATED" = 0 ]; then as_root apt-get update -q >/dev/null; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_system_packages() {
  apt_install prometheus iperf3 iputils-ping iproute2 iptables python3-venv
  # Debian's prometheus package starts a system service on :9090; netaware runs its own.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    as_root systemctl stop prometheus || true
  fi
}

ensure_venv() {
  if [ ! -x "$PY" ]; then
    log "creating virtualenv $VENV"
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.requirements.sha"
  local want
  want="$(cat "$ROOT/requirements.txt" "$ROOT/requirements-dev.txt" | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "installing Python packages into $VENV"
    "$PY" -m pip install -q --disable-pip-version-check -U pip >/dev/null
    "$PY" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements-dev.txt"
    echo "$want" > "$stamp"
  fi
}

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
ensure_postgres() {
  if pg_up; then return 0; fi
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
  fi
  log "starting PostgreSQL"
  local version
  version="$(ls /etc/postgresql | sort -V | tail -n1)"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 0.5; done
  pg_up || die "PostgreSQL is not reachable on 127.0.0.1:5432"
  # Trust auth for local TCP connections as on the reference machines, only when freshly installed.
  psql -h 127.0.0.1 -U postgres -c 'select 1' >/dev/null 2>&1 || die "cannot connect to PostgreSQL as postgres"
}

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
ensure_redis() {
  if redis_up; then return 0; fi
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  redis_up || die "Redis is not reachable on 127.0.0.1:6379"
}

ensure_database() {
  # ensure_database NAME : create the database if it does not exist.
  local name="$1"
  psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname='$name'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "create database \"$name\"" >/dev/null
}

ensure_chromium() {
  apt_install chromium
}
