"""Seed the periodic AppGroup resync (every 60 s) and NetworkTopology publishing (every 60 s)."""

from django.db import migrations

SCHEDULES = (
    ("Resync AppGroups with the cluster", "apps.appgroups.tasks.resync_cluster", 60),
    ("Publish NetworkTopology resources", "apps.appgroups.tasks.publish_network_topology", 60),
)


def seed(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, every in SCHEDULES:
        schedule, _ = IntervalSchedule.objects.get_or_create(every=every, period="seconds")
        PeriodicTask.objects.update_or_create(
            name=name, defaults={"task": task, "interval": schedule, "enabled": True, "kwargs": "{}"}
        )


def unseed(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name__in=[s[0] for s in SCHEDULES]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("appgroups", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
