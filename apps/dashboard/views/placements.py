"""The placements map page and its data."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..placements import placements_map
from .common import data_response


@require_GET
def placements_page(request):  # type: ignore[no-untyped-def]
    return render(request, "dashboard/placements.html", {})


@require_GET
def placements_data(request):  # type: ignore[no-untyped-def]
    etag, data = placements_map()
    return data_response(request, etag, data)
