"""Re-exported reads about AppGroups that claim the same pods (see apps/appgroups/overlap.py)."""

from apps.appgroups.selectors import claims_for_labels, overlapping_appgroups

__all__ = ["claims_for_labels", "overlapping_appgroups"]
