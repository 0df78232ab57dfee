"""WSGI entry point of the web server: pages, API, admin, health and /metrics, all through Django.

The extender verbs (/scheduler/{filter,prioritize,bind,preempt}) are not served here: only the extender
server (``manage.py run_extender``, ``netaware_site/extender_wsgi.py``) answers them, from the one
scheduling cache of its process.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
application = get_wsgi_application()

# What ``manage.py run_web`` serves (granian's RSGI interface): ``application`` behind the body
# deadline of netaware_core.rsgi, on a pool of request threads; a slow client holds no thread.
from django.conf import settings  # noqa: E402

from netaware_core.rsgi import BufferedWSGI  # noqa: E402

rsgi = BufferedWSGI(application, threads=int(os.environ.get("NETAWARE_WEB_THREADS", "8")),
                    body_timeout=float(os.environ.get("NETAWARE_WEB_BODY_TIMEOUT_SECONDS", "30")),
                    max_body=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 32 * 1024 * 1024), refuse_unreadable=True)
