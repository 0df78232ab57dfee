"""``python -m netaware_site.migrate_locked [--wait]``: database migrations that run once.

Without ``--wait`` (the Kubernetes Job ``netaware-migrate``, Compose's ``migrate`` service): take a
PostgreSQL session advisory lock, then ``migrate``. Django takes no lock of its own, so two
concurrent ``migrate`` runs race on the same DDL; under the lock the second one waits and then finds
nothing left to do.

With ``--wait`` (every other component's init container): never change the schema; poll until no
migration of this code is unapplied, so a new version never serves on an old schema. Exits 0 then,
non-zero after ``--timeout`` seconds (0 = wait forever) with the pending migrations named.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# "netaware" in ASCII: the same key in every process that migrates.
LOCK_KEY = 0x6E657461776172


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
    import django

    django.setup()


def pending_migrations() -> list[str]:
    """Migrations of the installed apps not applied in the database yet ("app.name")."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def migrate(*, verbosity: int = 1) -> None:
    from django.core.management import call_command
    from django.db import connection

    with connection.cursor() as cursor:
        started = time.monotonic()
        cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        waited = time.monotonic() - started
        if waited > 1:
            print(f"migrate_locked: waited {waited:.1f} s for another migration run", flush=True)
        try:
            call_command("migrate", interactive=False, verbosity=verbosity)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def wait(*, timeout: float, interval: float) -> int:
    from django.db import close_old_connections

    deadline = time.monotonic() + timeout if timeout > 0 else None
    last = ""
    while True:
        try:
            pending = pending_migrations()
            state = ", ".join(pending)
        except Exception as exc:  # database not reachable yet: keep waiting, say why
            pending, state = ["?"], f"database not ready ({type(exc).__name__}: {exc})".strip()
            close_old_connections()
        if not pending:
            print("migrate_locked: schema is up to date", flush=True)
            return 0
        if state != last:
            print(f"migrate_locked: waiting for migrations: {state}", flush=True)
            last = state
        if deadline is not None and time.monotonic() >= deadline:
            print(f"migrate_locked: still pending after {timeout:g} s: {state}", file=sys.stderr, flush=True)
            return 1
        time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m netaware_site.migrate_locked", description=__doc__.splitlines()[0])
    parser.add_argument("--wait", action="store_true", help="only wait until no migration is pending")
    parser.add_argument("--timeout", type=float, default=0.0, help="--wait: give up after this many seconds")
    parser.add_argument("--interval", type=float, default=3.0, help="--wait: seconds between checks")
    args = parser.parse_args(argv)
    _setup()
    if args.wait:
        return wait(timeout=args.timeout, interval=args.interval)
    migrate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
