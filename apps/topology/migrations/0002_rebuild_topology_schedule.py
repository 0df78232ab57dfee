"""Seed the periodic rebuild: every 60 s, so per-pair staleness advances even without new data."""

from django.db import migrations

TASK = "apps.topology.tasks.rebuild_topology"
NAME = "Rebuild NetworkTopology"


def seed(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    schedule, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.update_or_create(
        name=NAME, defaults={"task": TASK, "interval": schedule, "enabled": True, "kwargs": "{}"}
    )


def unseed(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("topology", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
