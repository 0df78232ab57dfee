"""The NetworkTopology publishing task moved from the appgroups app to topology (its owner): point
the django-celery-beat schedule seeded by appgroups 0002 at the new task path."""

from django.db import migrations

OLD = "apps.appgroups.tasks.publish_network_topology"
NEW = "apps.topology.tasks.publish_network_topology"


def _rename(apps, old: str, new: str) -> None:
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(task=old).update(task=new)


class Migration(migrations.Migration):
    dependencies = [
        ("topology", "0003_snapshot_payload_format2"),
        ("appgroups", "0002_seed_resync_schedule"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(lambda apps, _editor: _rename(apps, OLD, NEW),
                             lambda apps, _editor: _rename(apps, NEW, OLD)),
    ]
