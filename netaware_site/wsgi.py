"""WSGI entry point: the extender paths (/scheduler/{filter,prioritize,bind,preempt}[/]) are
answered by ``apps.scheduler.extender_views.extender_app`` without Django's middleware stack and URL
resolution (same status, headers and body as the Django views; see docs/scheduler.md); every
other path goes to Django. NETAWARE_LEAN_EXTENDER=false sends everything through Django."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402

from apps.scheduler.extender_views import extender_app  # noqa: E402  (models load once Django is set up)

if not settings.NETAWARE["LEAN_EXTENDER"]:
    application = django_application
else:

    def application(environ, start_response):  # type: ignore[no-untyped-def]
        if environ.get("PATH_INFO", "").startswith("/scheduler/"):
            answer = extender_app(environ, start_response)
            if answer is not None:
                return answer
        return django_application(environ, start_response)
