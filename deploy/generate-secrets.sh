#!/usr/bin/env bash
# Random secrets for docker-compose.yml, written to deploy/secrets/ (git-ignored, mode 600).
# Re-running keeps existing values. Production refuses placeholders, so there is no example file.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
mkdir -p "$dir"
umask 077
rand() { python3 -c "import secrets, sys; sys.stdout.write(secrets.token_urlsafe($1))"; }
keep() { [ -s "$dir/$1" ]; }
keep secret_key || rand 64 | sed 's/[dD][eE][vV]/x9z/g' > "$dir/secret_key"
keep postgres_password || rand 24 > "$dir/postgres_password"
keep redis_password || rand 24 > "$dir/redis_password"
keep metrics_token || rand 32 > "$dir/metrics_token"
keep probe_secret || rand 32 > "$dir/probe_secret"
keep database_url || printf 'postgres://netaware:%s@postgres:5432/netaware' "$(cat "$dir/postgres_password")" > "$dir/database_url"
keep redis_url || printf 'redis://:%s@redis:6379/0' "$(cat "$dir/redis_password")" > "$dir/redis_url"
# The extender's mTLS certificates (only used with --profile cluster).
bash "$(dirname "$0")/../k8s/scheduler/make-certs.sh" "$dir/certs" netaware-system >/dev/null
# The containers run as uid 10001 (netaware), 999 (postgres, redis): Compose bind-mounts these
# files, so the files are readable inside the containers...
find "$dir" -type f -exec chmod 644 {} +
chmod 600 "$dir/certs/ca.key"
chmod 700 "$dir" "$dir/certs"  # ...while other users of the host cannot even list them
echo "compose secrets in $dir"
