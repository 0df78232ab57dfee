"""DriftAssessment (the latest drift of each AppGroup) and its periodic task, every 60 s (issue 25)."""

import django.db.models.deletion
from django.db import migrations, models


TASK = "scheduler.assess_drift"
NAME = "Assess AppGroup drift"


def seed(apps, schema_editor):
    """The drift of every AppGroup once a minute (a plan per AppGroup: seconds, not a request's work)."""
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
        ("django_celery_beat", "0019_alter_periodictasks_options"),
        ('appgroups', '0007_change_history'),
        ('scheduler', '0006_change_history'),
    ]

    operations = [
        migrations.CreateModel(
            name='DriftAssessment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('computed_at', models.DateTimeField()),
                ('topology_version', models.BigIntegerField(blank=True, help_text='topology snapshot it was made on', null=True)),
                ('current_score', models.FloatField(blank=True, help_text='average network score 0..100 now', null=True)),
                ('best_score', models.FloatField(blank=True, help_text='best average network score found now', null=True)),
                ('drift', models.FloatField(default=0.0, help_text='1 - current / best, 0..1')),
                ('score_after_moves', models.FloatField(blank=True, null=True)),
                ('current_latency_ms', models.FloatField(blank=True, null=True)),
                ('best_latency_ms', models.FloatField(blank=True, null=True)),
                ('current_transfer_cost', models.FloatField(blank=True, help_text='USD per 1M requests', null=True)),
                ('best_transfer_cost', models.FloatField(blank=True, help_text='USD per 1M requests', null=True)),
                ('plan_id', models.CharField(blank=True, max_length=16)),
                ('moves', models.JSONField(blank=True, default=list)),
                ('notes', models.JSONField(blank=True, default=list)),
                ('elapsed_ms', models.FloatField(default=0.0)),
                ('inputs_hash', models.CharField(blank=True, max_length=64)),
                ('appgroup', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='drift', to='appgroups.appgroup')),
            ],
            options={
                'ordering': ('-drift', 'appgroup_id'),
                'constraints': [models.CheckConstraint(condition=models.Q(('drift__gte', 0.0), ('drift__lte', 1.0)), name='scheduler_driftassessment_drift_0_1', violation_error_message='drift must be within 0..1.')],
            },
        ),
        migrations.RunPython(seed, unseed),
    ]
