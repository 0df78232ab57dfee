"""WSGI entry point of the web server: pages, API, admin, health and /metrics, all through Django.

The extender verbs (/scheduler/{filter,prioritize,bind,preempt}) are not served here: only the extender
server (``manage.py run_extender``, ``netaware_site/extender_wsgi.py``) answers them, from the one
scheduling cache of its process.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
application = get_wsgi_application()
