"""API tokens in the admin: created here (the token is shown once, in the confirmation message),
listed by prefix, revoked by deleting the row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.utils.html import format_html

from .models import ApiToken, digest, new_token_value

if TYPE_CHECKING:
    from django.http import HttpRequest


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "key_prefix", "created_at", "expires_at")
    list_filter = ("user",)
    search_fields = ("name", "user__username", "key_prefix")
    readonly_fields = ("key_prefix", "created_at")
    fields = ("user", "name", "expires_at", "key_prefix", "created_at")

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if not change:
            raw = new_token_value()
            obj.key_prefix, obj.key_digest = raw[:10], digest(raw)
            super().save_model(request, obj, form, change)
            messages.warning(request, format_html(
                "API token for {}: <code id='new-api-token'>{}</code> — copy it now, it is not shown again. "
                "Send it as <code>Authorization: Bearer &lt;token&gt;</code>.", obj.user, raw))
            return
        super().save_model(request, obj, form, change)
