"""Django admin covers every model of our apps, and each changelist / add / change page renders."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

OUR_APPS = ("topology", "appgroups", "scheduler", "probes", "traffic")


def our_models():
    """Our models, less the change-history models: those are shown by their model's History view
    (tests/test_appgroup_and_profile_changes_have_a_history.py)."""
    return [model for label in OUR_APPS for model in apps.get_app_config(label).get_models()
            if not hasattr(model, "instance_type")]


def test_every_model_is_registered():
    missing = [model.__name__ for model in our_models() if model not in admin.site._registry]
    assert not missing, f"not in the admin: {missing}"


def test_every_changelist_and_add_page_renders(client):
    user = get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(user)
    for model in our_models():
        opts = model._meta
        changelist = client.get(f"/admin/{opts.app_label}/{opts.model_name}/")
        assert changelist.status_code == 200, (opts.label, changelist.status_code)
        model_admin = admin.site._registry[model]
        if model_admin.has_add_permission(type("R", (), {"user": user, "method": "GET"})()):
            add = client.get(f"/admin/{opts.app_label}/{opts.model_name}/add/")
            assert add.status_code == 200, (opts.label, add.status_code)
