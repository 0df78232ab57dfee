"""``{% appgroup_drift appgroup %}``: the AppGroup page's "now vs possible" panel, from the stored drift
(``scheduler.selectors.latest_drift``; the task ``scheduler.assess_drift`` writes it every 60 s), so the
page never plans. A tag of its own keeps the page's view and template untouched but for one line."""

from __future__ import annotations

from typing import Any

from django import template

from apps.appgroups.models import AppGroup
from apps.scheduler.selectors import latest_drift

register = template.Library()


@register.inclusion_tag("dashboard/appgroups/_drift.html")
def appgroup_drift(appgroup: AppGroup) -> dict[str, Any]:
    drift = latest_drift(appgroup=appgroup)
    return {"appgroup": appgroup, "drift": drift, "drift_pct": round(100.0 * drift.drift, 1) if drift else None}
