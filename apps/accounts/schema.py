"""OpenAPI description of our token authentication (drf-spectacular extension)."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "apps.accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "nat_… (netaware API token)",
                "description": "Create one on your account page or with `manage.py create_api_token`."}


class BasicScheme(OpenApiAuthenticationExtension):
    """Our Basic auth (DRF's, refusing NUL in credentials) under drf-spectacular's own name for Basic."""

    target_class = "apps.accounts.authentication.BasicAuthentication"
    name = "basicAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "basic"}
