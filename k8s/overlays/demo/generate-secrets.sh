#!/usr/bin/env bash
# Generate the demo overlay's secrets (random, never committed: secrets/ is git-ignored), then
# `kubectl apply -k k8s/overlays/demo`. Re-running keeps the existing values.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here/secrets"
mkdir -p "$dir"
umask 077
rand() { python3 -c "import secrets, sys; sys.stdout.write(secrets.token_urlsafe($1))"; }
keep() { [ -s "$dir/$1" ]; }
keep postgres-password || rand 24 > "$dir/postgres-password"
keep redis-password || rand 24 > "$dir/redis-password"
keep metrics-token || rand 32 > "$dir/metrics-token"
keep probe-secret || rand 32 > "$dir/probe-secret"
if ! keep netaware.env; then
  {
    echo "SECRET_KEY=$(rand 64 | sed 's/[dD][eE][vV]/x9z/g')"
    echo "DATABASE_URL=postgres://netaware:$(cat "$dir/postgres-password")@postgres.netaware-system.svc:5432/netaware"
    echo "REDIS_URL=redis://:$(cat "$dir/redis-password")@redis.netaware-system.svc:6379/0"
  } > "$dir/netaware.env"
fi
bash "$here/../../scheduler/make-certs.sh" "$dir/certs" netaware-system >/dev/null
echo "demo secrets in $dir"
