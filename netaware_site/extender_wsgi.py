"""Entry point of the extender server (``python manage.py run_extender``).

Only the extender verbs (/scheduler/{filter,prioritize,bind,preempt}[/]) are served, through the
lean dispatch of ``apps.scheduler.extender_views`` (no middleware, no URL resolver); anything else is a 404.
Importing this module starts the process's scheduling runtime (informers, loader, writers) and the
health/metrics server, so the process is ready to answer as soon as its cache is synced.
"""

import os
import sys

import django


def _limit_malloc_arenas() -> None:
    """glibc gives every thread that allocates its own arena (up to 8 per core) and rarely returns
    their freed memory: with 32 request threads and numpy temporaries that is hundreds of MB of RSS.
    Two arenas are plenty when the GIL serializes the allocating code anyway."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-8, int(os.environ.get("NETAWARE_EXTENDER_MALLOC_ARENAS", "2")))  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass  # not glibc


_limit_malloc_arenas()

# Request threads share the GIL with binds waiting on the API, the informers and the decision log:
# hand it over every 0.5 ms instead of every 5 ms, so a filter never queues behind a whole interval.
sys.setswitchinterval(float(os.environ.get("NETAWARE_EXTENDER_SWITCH_INTERVAL", "0.0005")))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
django.setup()

from apps.scheduler import extender_views, health  # noqa: E402
from apps.scheduler.extender_views import application  # noqa: E402
from apps.scheduler.runtime import process_runtime  # noqa: E402
from netaware_core.rsgi import BufferedWSGI  # noqa: E402

process_runtime()

# What granian serves (RSGI): the body is read on the event loop within the deadline, then
# ``application`` runs on a request thread; a slow client holds a coroutine, never a thread.
# Filter and prioritize with a body of node names run on the event loop itself (kube-scheduler waits
# on each before the next; milliseconds of CPU, no I/O); binds wait on the API and stay on the threads,
# as do bodies of full Node objects, whose evaluation may take up to the deadline.
rsgi = BufferedWSGI(application, threads=int(os.environ.get("NETAWARE_EXTENDER_THREADS", "32")),
                    body_timeout=float(os.environ.get("NETAWARE_EXTENDER_BODY_TIMEOUT_SECONDS", "1")),
                    max_body=extender_views.max_body(), inline=extender_views.runs_inline)
health.request_stats = rsgi.stats.snapshot
_health_bind = os.environ.get("NETAWARE_EXTENDER_HEALTH_BIND", "127.0.0.1:8002")
if _health_bind:
    health.serve(_health_bind)

__all__ = ["application", "rsgi"]
