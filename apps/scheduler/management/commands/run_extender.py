"""``python manage.py run_extender``: the scheduler extender as its own server process.

Granian (HTTP in Rust, the WSGI app in Python threads) serves ``netaware_site.extender_wsgi``: one
process, many threads. One process on purpose: its scheduling cache is the single place binds are
assumed, so every filter sees every bind answered before it; replicas are made safe by leader
election (NETAWARE_EXTENDER_LEADER_ELECTION), not by more processes. Binds wait on the Kubernetes
API in their own threads and never hold up filter/prioritize of other pods, which (with bodies of
node names) run on the event loop thread itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

# The one WSGI app that answers the extender verbs (the web server has no route for them).
EXTENDER_APP = "netaware_site.extender_wsgi:application"
# What granian serves: EXTENDER_APP behind the body deadline of netaware_core.rsgi (RSGI interface).
EXTENDER_SERVED = "netaware_site.extender_wsgi:rsgi"


def _address(value: str, flag: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise CommandError(f"{flag}: expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _file(value: str, flag: str) -> Path | None:
    if not value:
        return None
    path = Path(value)
    if not path.is_file():
        raise CommandError(f"{flag}: {value} is not a readable file")
    return path


class Command(BaseCommand):
    help = "Serve the kube-scheduler extender verbs (filter, prioritize, bind, preempt) from this process."

    def add_arguments(self, parser: CommandParser) -> None:
        env = os.environ.get
        parser.add_argument("--bind", default=env("NETAWARE_EXTENDER_BIND", "127.0.0.1:8001"),
                            help="HOST:PORT of the extender (env NETAWARE_EXTENDER_BIND)")
        parser.add_argument("--health-bind", default=env("NETAWARE_EXTENDER_HEALTH_BIND", "127.0.0.1:8002"),
                            help="HOST:PORT of /healthz, /readyz and /metrics, plain HTTP "
                                 "(env NETAWARE_EXTENDER_HEALTH_BIND; empty: none)")
        parser.add_argument("--threads", type=int, default=int(env("NETAWARE_EXTENDER_THREADS", "32")),
                            help="request threads (binds waiting on the API each hold one)")
        parser.add_argument("--body-timeout", type=float,
                            default=float(env("NETAWARE_EXTENDER_BODY_TIMEOUT_SECONDS", "1")),
                            help="seconds a client has to send its request body (kube-scheduler sends it at "
                                 "once; its httpTimeout is 5 s): a slower body is answered with the reason "
                                 "and holds no request thread")
        parser.add_argument("--certfile", default=env("NETAWARE_EXTENDER_TLS_CERT_FILE", ""),
                            help="serve HTTPS with this certificate (PEM)")
        parser.add_argument("--keyfile", default=env("NETAWARE_EXTENDER_TLS_KEY_FILE", ""),
                            help="private key of --certfile (PEM, PKCS#8)")
        parser.add_argument("--client-ca", default=env("NETAWARE_EXTENDER_TLS_CLIENT_CA_FILE", ""),
                            help="require client certificates signed by this CA (mutual TLS)")

    def handle(self, *args: Any, **options: Any) -> None:
        from granian import Granian
        from granian.constants import Interfaces
        from granian.http import HTTP1Settings

        host, port = _address(options["bind"], "--bind")
        if options["health_bind"]:
            _address(options["health_bind"], "--health-bind")
        if options["threads"] < 2:
            raise CommandError("--threads: at least 2 (binds must not block filter and prioritize)")
        cert = _file(options["certfile"], "--certfile")
        key = _file(options["keyfile"], "--keyfile")
        client_ca = _file(options["client_ca"], "--client-ca")
        if bool(cert) != bool(key):
            raise CommandError("--certfile and --keyfile go together")
        if client_ca and not cert:
            raise CommandError("--client-ca (mutual TLS) needs --certfile and --keyfile")
        if not 0 < options["body_timeout"] <= 60:
            raise CommandError("--body-timeout: seconds, more than 0 and at most 60")
        os.environ["NETAWARE_EXTENDER_HEALTH_BIND"] = options["health_bind"]
        os.environ["NETAWARE_EXTENDER_THREADS"] = str(options["threads"])
        os.environ["NETAWARE_EXTENDER_BODY_TIMEOUT_SECONDS"] = str(options["body_timeout"])
        # The loader and writers must never hang on a stuck database (their threads, not requests).
        os.environ.setdefault("DATABASE_STATEMENT_TIMEOUT_MS", "5000")
        tls: dict[str, Any] = {}
        if cert:
            tls = {"ssl_cert": cert, "ssl_key": key, "ssl_protocol_min": "tls1.2"}
        if client_ca:
            tls.update(ssl_ca=client_ca, ssl_client_verify=True)
        scheme = "https" if cert else "http"
        self.stdout.write(f"netaware extender on {scheme}://{host}:{port}/scheduler "
                          f"({'mutual TLS' if client_ca else 'TLS' if cert else 'plain HTTP'}), "
                          f"health on {options['health_bind'] or 'none'}")
        # Headers are parsed by granian (Rust) within header_read_timeout; bodies by netaware_core.rsgi
        # within --body-timeout; only complete requests reach one of the --threads request threads.
        Granian(
            EXTENDER_SERVED,
            address=host, port=port, interface=Interfaces.RSGI, workers=1,
            respawn_failed_workers=True, log_access=False, backlog=1024,
            http1_settings=HTTP1Settings(header_read_timeout=int(options["body_timeout"] * 1000) + 1000),
            **tls,
        ).serve()
