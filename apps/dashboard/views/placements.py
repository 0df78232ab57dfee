"""The placements map page and its data."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..placements import placements_map
from .common import data_response


@require_GET
def placements_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/placements.html", {})


@require_GET
def placements_data(request: HttpRequest) -> HttpResponse:
    etag, data = placements_map()
    return data_response(request, etag, data)
