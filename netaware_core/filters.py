"""Query-parameter filters shared by the API's filtersets."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters
from django.core.exceptions import ValidationError
from django_filters.fields import IsoDateTimeField


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
