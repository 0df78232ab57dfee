# Shared bootstrap for scripts/up.sh and scripts/test.sh: install what is missing, start services,
# give netaware its own PostgreSQL access. Sourced, not executed. Idempotent: a second run installs
# and creates nothing new. Progress goes to stdout in short lines; the output of apt, pip, psql and
# Django goes to $SETUP_LOG (var/log/setup.log), whose path every failure message names.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NETAWARE_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
STATE="${NETAWARE_STATE_DIR:-$ROOT/var}"
LOGS="$STATE/log"
SECRETS="$STATE/secrets"
SETUP_LOG="${SETUP_LOG:-$LOGS/setup.log}"
# Port of the local PostgreSQL server that netaware sets itself up on when DATABASE_URL is not given:
# NETAWARE_PG_PORT, else that of Debian's cluster (newest version's "main"), else 5432 (resolve_pg_port).
PG_PORT="${NETAWARE_PG_PORT:-5432}"
export PATH="$VENV/bin:$PATH"
# numpy work per request is small: multi-threaded BLAS only adds stalls on small machines.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

if [ -t 1 ]; then _B=$'\033[1;34m'; _R=$'\033[1;31m'; _N=$'\033[0m'; else _B=""; _R=""; _N=""; fi
say() { printf '%s[netaware]%s %s\n' "$_B" "$_N" "$*"; }
log() { say "$@"; }
die() { printf '%s[netaware] error:%s %s\n' "$_R" "$_N" "$*" >&2; exit 1; }

short_path() { case "$1" in "$ROOT"/*) echo "${1#"$ROOT"/}" ;; *) echo "$1" ;; esac; }

prepare_state() {
  # The state directory holds logs, pid files and the generated secrets (mode 0700 / 0600).
  mkdir -p "$LOGS" "$SECRETS" 2>/dev/null && [ -w "$STATE" ] \
    || die "cannot write the state directory $STATE: run as the owner of $ROOT, or set NETAWARE_STATE_DIR to a writable directory"
  chmod 700 "$SECRETS"
  touch "$SETUP_LOG"
}

quietly() {
  # quietly WHAT CMD... : run CMD (a program, not a function) with its output in $SETUP_LOG;
  # on failure show the last lines and say where the rest is.
  local what="$1"; shift
  printf '\n### %s  %s\n' "$(date '+%F %T')" "$*" >>"$SETUP_LOG"
  if ! "$@" >>"$SETUP_LOG" 2>&1 </dev/null; then
    tail -n 15 "$SETUP_LOG" | sed 's/^/    /' >&2
    die "$what failed; the whole output is in $(short_path "$SETUP_LOG")"
  fi
}

write_secret() {
  # write_secret FILE VALUE : write VALUE to FILE, readable by its owner only.
  ( umask 077; printf '%s\n' "$2" > "$1.tmp" ) && mv "$1.tmp" "$1"
}
new_password() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# --- root -----------------------------------------------------------------------------------------
have_root() { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() {
  # as_postgres CMD... : run CMD as the `postgres` system user (peer authentication on the socket).
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else (cd / && sudo -u postgres -- "$@"); fi
}

ROOT_REASONS=()
need_root() { ROOT_REASONS+=("$1"); }
require_root_if_needed() {
  # One message that lists every step needing root, before any of them runs.
  [ ${#ROOT_REASONS[@]} -eq 0 ] && return 0
  have_root && return 0
  local hint="" steps
  steps="$(printf '%s; ' "${ROOT_REASONS[@]}")"; steps="${steps%; }"
  case "$steps" in *PostgreSQL*)
    hint=" Or set DATABASE_URL to a PostgreSQL database you may use: then PostgreSQL needs no root." ;;
  esac
  die "this user is neither root nor has sudo, and these steps need root: $steps. Run the command as root or install sudo (or do those steps once as root).$hint"
}

# --- Debian packages ------------------------------------------------------------------------------
missing_packages() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || printf '%s ' "$pkg"
  done
}

APT_UPDATED=0
apt_install() {
  # apt_install PKG... : install the Debian packages that are not installed yet.
  local missing
  missing="$(missing_packages "$@")"
  [ -z "$missing" ] && return 0
  have_root || die "Debian packages $missing are missing and installing them needs root (this user is not root and has no sudo): run 'apt-get install $missing' as root, or run this command as root"
  say "installing Debian packages: $missing"
  if [ "$APT_UPDATED" = 0 ]; then quietly "apt-get update" as_root apt-get update -q; APT_UPDATED=1; fi
  # shellcheck disable=SC2086
  quietly "installing $missing" as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

SYSTEM_PACKAGES=(prometheus iperf3 iputils-ping iproute2 iptables python3-venv curl postgresql-client redis-server)
check_system_packages() {
  local missing
  missing="$(missing_packages "${SYSTEM_PACKAGES[@]}" "$@")"
  [ -z "$missing" ] || need_root "install Debian packages ($missing)"
}
ensure_system_packages() {
  apt_install "${SYSTEM_PACKAGES[@]}" "$@"
  # Debian's prometheus (and victoria-metrics) packages start system services; netaware runs its own
  # (VictoriaMetrics only in the compatibility test, docs/scale.md).
  for service in prometheus victoria-metrics; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
      as_root systemctl stop "$service" || true
    elif [ -x "/etc/init.d/$service" ] && "/etc/init.d/$service" status >/dev/null 2>&1; then
      as_root "/etc/init.d/$service" stop >>"$SETUP_LOG" 2>&1 || true
    fi
  done
}

# --- Python packages ------------------------------------------------------------------------------
lock_stamp() { echo "$VENV/.netaware-$(basename "$1").sha256"; }
lock_installed() { [ -f "$(lock_stamp "$1")" ] && [ "$(cat "$(lock_stamp "$1")")" = "$(sha256sum < "$1" | cut -d' ' -f1)" ]; }
ensure_venv() {
  # ensure_venv LOCK : the virtualenv has exactly the hash-checked versions of LOCK (requirements.txt
  # for the run command, requirements-dev.txt for the tests; both generated by scripts/lock.sh).
  local lock="$ROOT/${1:-requirements.txt}"
  if lock_installed "$lock"; then return 0; fi
  # The dev lock is a superset of the runtime lock at the same versions (scripts/lock.sh).
  if [ "$(basename "$lock")" = requirements.txt ] && lock_installed "$ROOT/requirements-dev.txt"; then return 0; fi
  if [ ! -x "$PY" ]; then
    say "creating the virtualenv $(short_path "$VENV")"
    quietly "creating the virtualenv $VENV" python3 -m venv "$VENV"
  fi
  say "installing Python packages ($(basename "$lock"), hash-checked)"
  quietly "pip install -r $(basename "$lock")" "$PY" -m pip install --disable-pip-version-check \
    --no-input --require-hashes -r "$lock"
  sha256sum < "$lock" | cut -d' ' -f1 > "$(lock_stamp "$lock")"
}

# --- PostgreSQL -----------------------------------------------------------------------------------
# netaware uses an existing server named by DATABASE_URL (or DATABASE_URL_FILE) as it is. Without
# one it owns its access to the local server: through the socket as the `postgres` system user it
# creates a role with a generated password (kept in $SECRETS, mode 0600) and connects as that role
# over TCP to 127.0.0.1 with a password, which Debian's packaged pg_hba.conf (scram-sha-256) allows.

url_field() {
  # url_field URL FIELD : host, port, user, dbname or password of a PostgreSQL URL.
  python3 - "$1" "$2" <<'PY'
import sys
from urllib.parse import unquote, urlsplit
url = urlsplit(sys.argv[1])
field = sys.argv[2]
print({"host": url.hostname or "", "port": url.port or 5432, "user": unquote(url.username or ""),
       "dbname": unquote(url.path.lstrip("/")), "password": unquote(url.password or "")}[field])
PY
}
url_with_db() {
  # url_with_db URL NAME : URL naming database NAME instead.
  python3 - "$1" "$2" <<'PY'
import sys
from urllib.parse import quote, urlsplit, urlunsplit
url = urlsplit(sys.argv[1])
print(urlunsplit(url._replace(path="/" + quote(sys.argv[2]))))
PY
}
libpq_url() {
  # dj-database-url accepts a few scheme aliases that psql does not.
  local url="$1"
  case "$url" in postgis://*|pgsql://*|postgres+*://*) url="postgresql://${url#*://}" ;; esac
  echo "$url"
}
url_without_password() {
  python3 - "$1" <<'PY'
import sys
from urllib.parse import urlsplit, urlunsplit
url = urlsplit(sys.argv[1])
netloc = url.netloc.rsplit("@", 1)
if len(netloc) == 2:
    netloc = [netloc[0].split(":", 1)[0], netloc[1]]
print(urlunsplit(url._replace(netloc="@".join(netloc))))
PY
}
pg_try() {
  # pg_try URL SQL : run SQL over URL; prints psql's error on failure. The password travels in the
  # environment, not in psql's argv where other users could see it.
  PGPASSWORD="$(url_field "$1" password)" PGCONNECT_TIMEOUT=5 \
    psql -X -w -q -tA -v ON_ERROR_STOP=1 -d "$(libpq_url "$(url_without_password "$1")")" -c "$2" 2>&1
}

check_database_url() {
  # check_database_url URL create|server : can netaware use URL? With "create", a missing database
  # is created with the URL's own credentials; with "server" only the credentials matter (the
  # tests create their own databases).
  local url="$1" mode="$2" out host port user db
  host="$(url_field "$url" host)"; port="$(url_field "$url" port)"
  user="$(url_field "$url" user)"; db="$(url_field "$url" dbname)"
  if out="$(pg_try "$url" 'select 1')"; then return 0; fi
  case "$out" in
    *"password authentication failed"*|*"no password supplied"*|*"authentication failed"*)
      die "PostgreSQL at $host:$port refused the password of user '$user' given in DATABASE_URL. Put the right password in DATABASE_URL, or unset DATABASE_URL to let netaware create its own role on the local server." ;;
    *"role \"$user\" does not exist"*)
      die "PostgreSQL at $host:$port has no user '$user' (from DATABASE_URL). Create it or fix DATABASE_URL, or unset DATABASE_URL to let netaware create its own role on the local server." ;;
    *"database \"$db\" does not exist"*)
      [ "$mode" = server ] && { pg_try "$(url_with_db "$url" postgres)" 'select 1' >/dev/null && return 0; }
      if [ "$mode" = create ] && pg_try "$(url_with_db "$url" postgres)" "create database \"$db\"" >>"$SETUP_LOG"; then
        say "created database $db on $host:$port"
        return 0
      fi
      die "database '$db' does not exist on $host:$port and user '$user' may not create it: create it (createdb -O $user $db) or name an existing one in DATABASE_URL." ;;
    *"Connection refused"*|*"could not connect"*|*"timeout expired"*|*"could not translate host name"*)
      die "nothing answers as PostgreSQL at $host:$port (DATABASE_URL). Start that server or fix DATABASE_URL; without DATABASE_URL netaware uses a local PostgreSQL and installs it when missing." ;;
    *)
      die "cannot use DATABASE_URL ($user@$host:$port/$db): $(echo "$out" | head -n 2 | tr '\n' ' ')" ;;
  esac
}

resolve_pg_port() {
  [ -n "${NETAWARE_PG_PORT:-}" ] && return 0
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  local port
  port="$(pg_lsclusters --no-header 2>/dev/null | sort -k1,1V | awk '$2 == "main" {p = $3} END {print p}')"
  [ -n "$port" ] || port="$(pg_lsclusters --no-header 2>/dev/null | awk 'NR == 1 {print $3}')"
  PG_PORT="${port:-5432}"
}
local_pg_up() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; }
check_local_postgres() {
  # Root is needed to install or start the local server and to create netaware's role through the
  # socket (as the postgres system user); a role created before (its secret in $SECRETS) needs none.
  [ -n "${DATABASE_URL:-}${DATABASE_URL_FILE:-}" ] && return 0
  have_pg_server || { need_root "install PostgreSQL"; return 0; }
  resolve_pg_port
  local_pg_up || need_root "start PostgreSQL"
  local base
  for base in "$@"; do
    [ -s "$SECRETS/postgres-$base" ] || need_root "create netaware's PostgreSQL role $base (as the postgres system user)"
  done
}

have_pg_server() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null && command -v pg_lsclusters >/dev/null 2>&1; }
start_local_postgres() {
  if ! have_pg_server; then
    resolve_pg_port
    local_pg_up && die "a PostgreSQL answers on 127.0.0.1:$PG_PORT but it is not this machine's packaged server, so netaware cannot create its role through the socket: set DATABASE_URL to a database there you may use"
    apt_install postgresql
  fi
  resolve_pg_port
  local_pg_up && return 0
  local cluster
  cluster="$(pg_lsclusters --no-header 2>/dev/null | awk -v p="$PG_PORT" '$3 == p {print $1" "$2; exit}')"
  [ -n "$cluster" ] || die "PostgreSQL is installed but no cluster is set up on port $PG_PORT (pg_lsclusters): create one (pg_createcluster --start <version> main) or set DATABASE_URL"
  say "starting PostgreSQL $cluster"
  # shellcheck disable=SC2086
  quietly "starting PostgreSQL $cluster" as_root pg_ctlcluster --skip-systemctl-redirect $cluster start
  for _ in $(seq 1 60); do local_pg_up && return 0; sleep 0.5; done
  die "PostgreSQL $cluster did not start on 127.0.0.1:$PG_PORT (see /var/log/postgresql/)"
}

psql_as_postgres() {
  # SQL on stdin (never in argv, where passwords would be visible), as the postgres system user.
  as_postgres psql -X -w -q -tA -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres "$@"
}

ROLE=""; ROLE_PASSWORD=""
ensure_role() {
  # ensure_role BASE OPTIONS : netaware's login role for this state directory; sets ROLE and
  # ROLE_PASSWORD. BASE is taken unless another state directory already owns a role of that name
  # (then BASE_<hash of the state directory>), so two clones never reset each other's password.
  local base="$1" options="$2" file="$SECRETS/postgres-$base" exists
  if [ -s "$file" ]; then
    ROLE="$(sed -n 's/^role=//p' "$file")"; ROLE_PASSWORD="$(sed -n 's/^password=//p' "$file")"
    if pg_try "postgres://$ROLE:$ROLE_PASSWORD@127.0.0.1:$PG_PORT/postgres" 'select 1' >/dev/null; then
      return 0
    fi
    # The role was dropped or its password changed behind our back: set it again.
    have_root || die "netaware's PostgreSQL role $ROLE no longer accepts the password in $(short_path "$file"), and resetting it needs root (not root, no sudo): run once as root, or set DATABASE_URL"
  else
    ROLE="$base"
    exists="$(echo "select 1 from pg_roles where rolname = '$ROLE'" | psql_as_postgres 2>>"$SETUP_LOG")" \
      || die "cannot reach PostgreSQL on port $PG_PORT through its socket as the postgres system user; the output is in $(short_path "$SETUP_LOG")"
    if [ "$exists" = 1 ]; then
      ROLE="${base}_$(printf '%s' "$(cd "$STATE" && pwd -P)" | sha256sum | cut -c1-8)"
    fi
    ROLE_PASSWORD="$(new_password)"
  fi
  exists="$(echo "select 1 from pg_roles where rolname = '$ROLE'" | psql_as_postgres 2>>"$SETUP_LOG")" || exists=""
  local verb=CREATE; [ "$exists" = 1 ] && verb=ALTER
  printf '%s ROLE "%s" LOGIN NOSUPERUSER NOCREATEROLE NOREPLICATION %s PASSWORD '\''%s'\'';\n' \
    "$verb" "$ROLE" "$options" "$ROLE_PASSWORD" | psql_as_postgres >>"$SETUP_LOG" 2>&1 \
    || die "could not create netaware's PostgreSQL role $ROLE; the output is in $(short_path "$SETUP_LOG")"
  write_secret "$file" "$(printf 'role=%s\npassword=%s' "$ROLE" "$ROLE_PASSWORD")"
  say "PostgreSQL role $ROLE ready (password in $(short_path "$file"))"
}

ensure_owned_database() {
  # ensure_owned_database NAME : database NAME exists and belongs to $ROLE.
  local name="$1" owner
  owner="$(echo "select pg_get_userbyid(datdba) from pg_database where datname = '$name'" | psql_as_postgres 2>>"$SETUP_LOG")" \
    || die "cannot query PostgreSQL on port $PG_PORT as the postgres system user; see $(short_path "$SETUP_LOG")"
  if [ -z "$owner" ]; then
    printf 'CREATE DATABASE "%s" OWNER "%s";\n' "$name" "$ROLE" | psql_as_postgres >>"$SETUP_LOG" 2>&1 \
      || die "could not create database $name; see $(short_path "$SETUP_LOG")"
    say "created database $name (owner $ROLE)"
  elif [ "$owner" != "$ROLE" ]; then
    die "database $name already exists and belongs to $owner, not to netaware's role $ROLE: set NETAWARE_DB_NAME to another name, or DATABASE_URL to use that database as it is"
  fi
}

DATABASE_URL_RESOLVED=""
ensure_database() {
  # ensure_database ROLE_BASE ROLE_OPTIONS DBNAME URL_FILE : a working PostgreSQL URL for netaware
  # in DATABASE_URL_RESOLVED and URL_FILE (0600). DBNAME empty: credentials only (tests).
  local base="$1" options="$2" db="$3" url_file="$4" given=""
  if [ -n "${DATABASE_URL_FILE:-}" ]; then
    given="$(cat "$DATABASE_URL_FILE" 2>/dev/null)" || die "DATABASE_URL_FILE=$DATABASE_URL_FILE cannot be read"
  fi
  given="${given:-${DATABASE_URL:-}}"
  if [ -n "$given" ]; then
    check_database_url "$given" "$([ -n "$db" ] && echo create || echo server)"
    DATABASE_URL_RESOLVED="$given"
  else
    start_local_postgres
    ensure_role "$base" "$options"
    [ -z "$db" ] || ensure_owned_database "$db"
    DATABASE_URL_RESOLVED="postgres://$ROLE:$ROLE_PASSWORD@127.0.0.1:$PG_PORT/${db:-$base}"
    check_database_url "$DATABASE_URL_RESOLVED" "$([ -n "$db" ] && echo create || echo server)"
  fi
  write_secret "$url_file" "$DATABASE_URL_RESOLVED"
}

# --- Redis ----------------------------------------------------------------------------------------
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
ensure_redis() {
  # ensure_redis URL : the local Redis on 6379 is started when URL names it and none answers; any
  # other URL must answer as it is.
  local url="$1"
  case "$url" in
    redis://127.0.0.1:6379|redis://127.0.0.1:6379/*|redis://localhost:6379|redis://localhost:6379/*) ;;
    *)
      redis-cli -u "$url" ping 2>/dev/null | grep -q PONG \
        || die "Redis at REDIS_URL does not answer: start it or fix REDIS_URL (unset, netaware uses and if needed starts the local one on 127.0.0.1:6379)"
      return 0 ;;
  esac
  if redis_up; then return 0; fi
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  say "starting Redis on 127.0.0.1:6379"
  quietly "starting Redis" redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly yes --appendfsync everysec \
    --dir "$STATE" --logfile "$LOGS/redis.log"
  for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  redis_up || die "Redis did not start on 127.0.0.1:6379 (see $(short_path "$LOGS/redis.log"))"
}

ensure_chromium() {
  apt_install chromium
}
