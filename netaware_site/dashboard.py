"""Shared bits of the dashboard: the bundled plotly.js and the dashboard's CSS/JS.

Served by Django itself (no CDN, no separate static server): clusters are often air-gapped and the
production web server (gunicorn) serves no /static/.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import plotly
from django.http import HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

_ASSETS = Path(__file__).resolve().parent / "static" / "netaware"


@lru_cache(maxsize=1)
def _plotly_js() -> bytes:
    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


@lru_cache(maxsize=4)
def _asset(name: str) -> bytes:
    return (_ASSETS / name).read_bytes()


@require_GET
@cache_control(public=True, max_age=86400)
def plotly_js(request):
    return HttpResponse(_plotly_js(), content_type="application/javascript")


@require_GET
@cache_control(public=True, max_age=300)
def dashboard_css(request):
    return HttpResponse(_asset("dashboard.css"), content_type="text/css")


@require_GET
@cache_control(public=True, max_age=300)
def dashboard_js(request):
    return HttpResponse(_asset("dashboard.js"), content_type="application/javascript")


def edits_need_user(view):
    """Dashboard pages that change data need a logged-in user when ``settings.REQUIRE_AUTH`` is on
    (the production default), like the API's writes; reading stays open."""
    from functools import wraps

    from django.conf import settings
    from django.contrib.auth.views import redirect_to_login

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if getattr(settings, "REQUIRE_AUTH", False) and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper
