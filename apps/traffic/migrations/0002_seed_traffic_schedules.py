"""Seed the observed-traffic pipeline's periodic tasks in django-celery-beat (idempotent, reversible):
the pull every half window, as the probe pull, and retention hourly."""

from django.conf import settings
from django.db import migrations

PULL = ("Pull observed traffic from Prometheus", "apps.traffic.tasks.pull_traffic")
RETENTION = ("Apply observed-traffic retention", "apps.traffic.tasks.apply_traffic_retention")


def _interval(IntervalSchedule, every, period):
    schedule = IntervalSchedule.objects.filter(every=every, period=period).order_by("pk").first()
    return schedule or IntervalSchedule.objects.create(every=every, period=period)


def seed(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    window = int(settings.NETAWARE["PULL_WINDOW_SECONDS"])
    pull_every = _interval(IntervalSchedule, max(1, window // 2), "seconds")
    hourly = _interval(IntervalSchedule, 1, "hours")
    for (name, task), schedule in ((PULL, pull_every), (RETENTION, hourly)):
        PeriodicTask.objects.get_or_create(
            name=name, defaults={"task": task, "interval": schedule, "enabled": True, "kwargs": "{}"}
        )


def unseed(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name__in=[PULL[0], RETENTION[0]]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("traffic", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
