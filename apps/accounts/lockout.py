"""Brute-force protection on top of django-axes (settings ``AXES_*``, docs/security.md).

django-axes counts failed logins in Redis per (user name, client address) and, at the limit, stops
the authentication before any password is hashed. Its backend covers the login page, the admin and
Basic auth (they all call ``django.contrib.auth.authenticate``); here are the pieces it lacks for an
API: the lockout as a 429 with ``Retry-After`` (DRF's ``Throttled``), failed API tokens counted too
(under the user name :data:`TOKEN_USERNAME`), the client address behind a known number of proxies,
and a cap per address over every user name (:class:`AddressCappedCacheHandler`): django-axes compares
all its counters with one limit, which per address alone would lock a shared NAT out after five typos.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

from axes.handlers.cache import AxesCacheHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cache_timeout, get_cool_off
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.http import HttpResponse, JsonResponse
from rest_framework import exceptions

if TYPE_CHECKING:
    from django.http import HttpRequest

# The user name failed API tokens count under: a token names no user until it matches one.
TOKEN_USERNAME = "(api token)"
MESSAGE = "Too many failed logins from this address: try again in {seconds} s."


def client_address(request: HttpRequest) -> str | None:
    """The client's address: the TCP peer, or with ``NETAWARE_TRUSTED_PROXY_COUNT`` = n the address
    the n-th proxy from the right saw in X-Forwarded-For (anything left of it is the client's to forge)."""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return request.META.get("REMOTE_ADDR")


class AddressCappedCacheHandler(AxesCacheHandler):
    """django-axes' Redis handler plus ``NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT`` failed logins per
    client address whatever the user name (a guesser cycling through names is stopped too). A success
    does not reset it: one valid account must not buy an address unlimited guesses at the others."""

    @staticmethod
    def _address_key(request: Any) -> str | None:
        address = getattr(request, "axes_ip_address", None)
        if not address:
            return None
        return "netaware:axes:address:" + hashlib.sha256(str(address).encode()).hexdigest()[:32]

    def address_failures(self, request: Any) -> int:
        key = self._address_key(request)
        return int(self.cache.get(key, default=0)) if key else 0

    def is_locked(self, request: Any, credentials: dict[str, Any] | None = None) -> bool:
        if super().is_locked(request, credentials):
            return True
        limit = settings.NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT
        return limit > 0 and self.address_failures(request) >= limit

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
    ) -> None:
        refused = getattr(request, "axes_locked_out", False)  # before the password was checked: no guess
        super().user_login_failed(sender, credentials, request, **kwargs)
        key = self._address_key(request)
        limit = settings.NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT
        if key is None or limit <= 0 or self.is_whitelisted(request, credentials):
            return
        if refused and not getattr(settings, "AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT", True):
            return
        timeout = get_cache_timeout(request)
        if self.cache.add(key=key, value=1, timeout=timeout):
            failures = 1
        else:
            failures = self.cache.incr(key=key, delta=1)
            self.cache.touch(key=key, timeout=timeout)
        if failures >= limit and not getattr(request, "axes_locked_out", False):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send(
                "axes",
                request=request,
                username=credentials.get("username"),
                ip_address=request.axes_ip_address,
            )


def retry_after_seconds(request: Any) -> int:
    cool_off = get_cool_off(request)
    return max(1, math.ceil(cool_off.total_seconds())) if cool_off else 1


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """django-axes' response to a locked-out login page: 429 with Retry-After (JSON for API clients)."""
    seconds = retry_after_seconds(request)
    message = MESSAGE.format(seconds=seconds)
    response: HttpResponse
    if request.path_info.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Too many failed logins</title><p>{message}</p>",
            status=429,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(seconds)
    return response


def refuse_if_locked_out(request: Any, *, username: str) -> None:
    """Raise DRF's 429 (with Retry-After) when this client and user name are locked out, before any
    password is hashed or token looked up."""
    if settings.AXES_ENABLED and not AxesProxyHandler.is_allowed(request, {"username": username}):
        seconds = retry_after_seconds(request)
        raise exceptions.Throttled(wait=seconds, detail=MESSAGE.format(seconds=seconds))


def record_token_failure(request: Any) -> None:
    """Count a wrong API token as a failed login of :data:`TOKEN_USERNAME` from this client."""
    user_login_failed.send(sender=__name__, credentials={"username": TOKEN_USERNAME}, request=request)
