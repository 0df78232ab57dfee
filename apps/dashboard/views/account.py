"""Login, logout, the 403 page, and the account page where users manage their own API tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts import selectors, services
from apps.accounts.models import ApiToken
from apps.accounts.roles import roles_of

from .common import error_response

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


logout_view = auth_views.LogoutView.as_view()


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """403 as a page with the reason (which role is needed), or JSON for the data endpoints."""
    reason = str(exception) if exception else "You do not have permission to do this."
    if request.path.startswith(("/dashboard/data/", "/api/")) or "application/json" in request.headers.get("Accept", ""):
        return error_response(reason, status=403)
    return render(request, "403.html", {"reason": reason}, status=403)


def _account(request: HttpRequest, *, new_token: dict[str, str] | None = None, status: int = 200) -> HttpResponse:
    return render(request, "dashboard/account.html", {
        "tokens": selectors.tokens_of(user=cast("User", request.user)), "roles": roles_of(request.user), "new_token": new_token,
    }, status=status)


@require_http_methods(["GET"])
def account_page(request: HttpRequest) -> HttpResponse:
    return _account(request)


@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    name = (request.POST.get("name") or "").strip()
    if not name:
        messages.error(request, "Token name: required (say what the token is for).")
        return redirect("account")
    try:
        token, raw = services.create_api_token(user=cast("User", request.user), name=name)
    except ValidationError as exc:
        messages.error(request, "; ".join(m for ms in exc.message_dict.values() for m in ms))
        return redirect("account")
    # Shown in this answer only: the token itself is stored nowhere.
    return _account(request, new_token={"name": token.name, "value": raw}, status=201)


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    services.revoke_api_token(token=token)
    messages.success(request, f"Revoked token {token.name!r}.")
    return redirect("account")
