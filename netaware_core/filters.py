"""Query-parameter filters shared by the API's filtersets."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters
from django.core.exceptions import ValidationError
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.pagination import LimitOffsetPagination


class UTCIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time, converted to UTC before it reaches the database.

    Python accepts UTC offsets up to ±24 h, PostgreSQL only up to ±15:59: ``...+16:00`` passed through
    as is fails inside the query (a 500). Converted to UTC every valid instant works; one that leaves
    the representable range when converted is a 400 naming the parameter.
    """

    def clean(self, value: Any) -> datetime | None:
        cleaned = super().clean(value)
        if cleaned is None:
            return None
        try:
            return cleaned.astimezone(UTC)
        except OverflowError:
            raise ValidationError("%(value)s is out of range once converted to UTC.", code="invalid",
                                  params={"value": value}) from None


class UTCIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UTCIsoDateTimeField


# --- pagination and strict query values (issue 21) ------------------------------------------------

# PostgreSQL's LIMIT/OFFSET are bigint: a larger number was a 500 ("bigint out of range").
BIGINT_MAX = 2**63 - 1
MAX_PAGE_SIZE = 1000


def _count(request: Any, name: str, default: int | None, *, minimum: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not text.isdigit() or int(text) < minimum or int(text) > BIGINT_MAX:
        raise APIValidationError({name: [f"a whole number from {minimum} to {BIGINT_MAX} (got {raw[:40]!r})"]})
    return int(text)


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=&offset=`` with a maximum page size (``MAX_PAGE_SIZE``, docs/api.md): a larger limit is
    cut to it (the answer's ``next`` link leads on); a limit or offset that is not a whole number in
    PostgreSQL's range is a 400 naming the parameter, not silently the default page."""

    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request: Any) -> int | None:
        limit = _count(request, self.limit_query_param, self.default_limit, minimum=1)
        return min(limit, self.max_limit) if limit is not None else None

    def get_offset(self, request: Any) -> int:
        return int(_count(request, self.offset_query_param, 0, minimum=0) or 0)


_BOOLEAN_VALUES = {"true", "false", "1", "0", "yes", "no", "on", "off"}


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter, except that a declared filter given an empty value (``until=``) or a boolean
    filter given anything but true/false (``ready=null``) is a 400 naming the parameter: both used to
    be ignored silently, so a typo returned everything."""

    def get_filterset(self, request: Any, queryset: Any, view: Any) -> Any:
        filterset = super().get_filterset(request, queryset, view)
        if filterset is None:
            return None
        errors: dict[str, list[str]] = {}
        for name, flt in filterset.filters.items():
            for value in request.query_params.getlist(name):
                if value.strip() == "":
                    errors[name] = ["an empty value: leave the parameter out to not filter by it"]
                elif isinstance(flt, django_filters.BooleanFilter) and value.strip().lower() not in _BOOLEAN_VALUES:
                    errors[name] = [f"true or false (got {value[:40]!r})"]
        if errors:
            raise APIValidationError(errors)
        return filterset
