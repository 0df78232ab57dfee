"""The roles (Django groups) netaware ships and the permissions each one holds.

Read by the data migration that creates the groups (0002_roles) and by the pages that say which
role a refused action needs. Staff users reach the admin; superusers hold every permission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

VIEWER = "viewer"
EDITOR = "editor"

# Custom permissions on accounts.Access (a model without a table): see models.py.
READ = "accounts.view_netaware"
DIAGNOSE = "accounts.diagnose_pod"
RUN_EVALUATION = "accounts.run_evaluation"

_VIEW_MODELS = (
    ("topology", "node"), ("topology", "topologysnapshot"),
    ("appgroups", "appgroup"), ("appgroups", "workload"), ("appgroups", "dependency"), ("appgroups", "placement"),
    ("scheduler", "schedulerprofile"), ("scheduler", "decision"), ("scheduler", "observedpod"),
    ("probes", "pairsample"), ("probes", "nodesample"), ("probes", "pullwatermark"),
)
_EDIT_MODELS = (
    ("appgroups", "appgroup"), ("appgroups", "workload"), ("appgroups", "dependency"),
    ("scheduler", "schedulerprofile"),
)

VIEWER_PERMISSIONS: tuple[str, ...] = (
    READ, DIAGNOSE, *(f"{app}.view_{model}" for app, model in _VIEW_MODELS),
)
EDITOR_PERMISSIONS: tuple[str, ...] = (
    *VIEWER_PERMISSIONS, RUN_EVALUATION,
    *(f"{app}.{action}_{model}" for app, model in _EDIT_MODELS for action in ("add", "change", "delete")),
)
ROLES: dict[str, tuple[str, ...]] = {VIEWER: VIEWER_PERMISSIONS, EDITOR: EDITOR_PERMISSIONS}


def role_needed(permission: str) -> str:
    """The least role that holds ``permission`` ("an administrator" when no shipped role does)."""
    for role, perms in ROLES.items():
        if permission in perms:
            return f"the {role} role"
    return "an administrator"


def roles_of(user: User | AnonymousUser) -> list[str]:
    """Names shown next to the user in the page header."""
    if not getattr(user, "is_authenticated", False):
        return []
    names = sorted(user.groups.values_list("name", flat=True))
    if user.is_superuser:
        names.insert(0, "admin")
    elif user.is_staff:
        names.insert(0, "staff")
    return names
