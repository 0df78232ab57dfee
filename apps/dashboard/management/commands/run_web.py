"""``python manage.py run_web``: the web server (pages, API, admin, /healthz, /metrics).

Granian, as for the extender (``run_extender``), because gunicorn's sync and gthread workers give a
request thread to a connection as soon as its first byte arrives: two clients sending their headers a
byte a second stalled every page and ``/healthz`` (issue 21). Here granian parses headers in Rust
(bounded by ``--header-timeout``), ``netaware_core.rsgi`` reads bodies on the event loop (bounded by
``--body-timeout``), and only complete requests reach one of ``--threads`` Django threads per worker
process. Idle and slow connections cost a socket and a little memory, no thread; there is no ingress
in front in the run command, so the server itself has to survive them.
"""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from apps.scheduler.management.commands.run_extender import _address

WEB_SERVED = "netaware_site.wsgi:rsgi"


class Command(BaseCommand):
    help = "Serve the web (pages, API, admin, health, metrics) with granian."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        env = os.environ.get
        parser.add_argument("--bind", default=env("NETAWARE_WEB_BIND", "127.0.0.1:8000"),
                            help="HOST:PORT (env NETAWARE_WEB_BIND)")
        parser.add_argument("--workers", type=int, default=int(env("NETAWARE_WEB_WORKERS", "2")),
                            help="worker processes (env NETAWARE_WEB_WORKERS)")
        parser.add_argument("--threads", type=int, default=int(env("NETAWARE_WEB_THREADS", "8")),
                            help="Django request threads per worker (env NETAWARE_WEB_THREADS)")
        parser.add_argument("--header-timeout", type=float,
                            default=float(env("NETAWARE_WEB_HEADER_TIMEOUT_SECONDS", "10")),
                            help="seconds a client has to send its request headers")
        parser.add_argument("--body-timeout", type=float,
                            default=float(env("NETAWARE_WEB_BODY_TIMEOUT_SECONDS", "30")),
                            help="seconds a client has to send its request body (408 after)")
        parser.add_argument("--access-log", action="store_true", help="log every request")

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        from granian import Granian
        from granian.constants import Interfaces
        from granian.http import HTTP1Settings

        host, port = _address(options["bind"], "--bind")
        for flag in ("workers", "threads"):
            if not 1 <= options[flag] <= 256:
                raise CommandError(f"--{flag}: between 1 and 256")
        for flag in ("header_timeout", "body_timeout"):
            if not 0 < options[flag] <= 600:
                raise CommandError(f"--{flag.replace('_', '-')}: seconds, more than 0 and at most 600")
        os.environ["NETAWARE_WEB_THREADS"] = str(options["threads"])
        os.environ["NETAWARE_WEB_BODY_TIMEOUT_SECONDS"] = str(options["body_timeout"])
        self.stdout.write(f"netaware web on http://{host}:{port}/ ({options['workers']} workers x "
                          f"{options['threads']} threads)")
        Granian(
            WEB_SERVED, address=host, port=port, interface=Interfaces.RSGI, workers=options["workers"],
            respawn_failed_workers=True, log_access=options["access_log"], backlog=1024,
            http1_settings=HTTP1Settings(header_read_timeout=int(options["header_timeout"] * 1000)),
        ).serve()
