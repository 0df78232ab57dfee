"""Create the viewer and editor groups with their permissions (apps/accounts/roles.py).

Permissions are normally created after all migrations (post_migrate); create them here first so
the groups can hold them on a fresh database. Re-running keeps the groups and adds what is missing.
"""

from django.db import migrations



def create_roles(apps, schema_editor):
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions

    from apps.accounts.roles import ROLES

    for config in global_apps.get_app_configs():
        create_permissions(config, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, perms in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".", 1)
            found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if found is None:
                raise RuntimeError(f"permission {perm} does not exist: is its app installed and migrated?")
            wanted.append(found)
        group.permissions.add(*wanted)


def drop_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["viewer", "editor"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("topology", "0003_snapshot_payload_format2"),
        ("appgroups", "0003_tombstones"),
        ("scheduler", "0003_drain_decisions_schedule"),
        ("probes", "0004_window_digest"),
    ]

    operations = [migrations.RunPython(create_roles, drop_roles)]
