"""Seed the pipeline's periodic tasks in django-celery-beat (idempotent, reversible).

pull_metrics runs every half window: a window becomes pullable at a fixed instant (one window after
its end), so polling at W/2 halves the worst-case delay while a run with nothing due costs one
SELECT. The interval is read from settings at migrate time; edit the row in the admin to change it.
"""

from django.conf import settings
from django.db import migrations

PULL = ("Pull metrics from Prometheus", "apps.probes.tasks.pull_metrics")
RETENTION = ("Apply metrics retention", "apps.probes.tasks.apply_retention")


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
        ("probes", "0002_ts_leading_keys"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
