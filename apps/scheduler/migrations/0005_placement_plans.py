"""Turn placement plans on in the shipped network and hybrid profiles (the ``plan`` steering filter)
and seed ``network-noplan`` / ``hybrid-noplan`` so with and without compare side by side. A built-in
row an operator has edited is left alone."""

from django.db import migrations

DESCRIPTIONS = {
    "network-noplan": "As network, without placement plans (per-pod scoring only).",
    "hybrid-noplan": "As hybrid, without placement plans (per-pod scoring only).",
}
PLANNED = {"network": ["min-bandwidth"], "hybrid": ["min-bandwidth", "overload"]}


def forward(apps, schema_editor):
    from apps.scheduler.profiles import builtin_documents

    SchedulerProfile = apps.get_model("scheduler", "SchedulerProfile")
    for name, before in PLANNED.items():
        SchedulerProfile.objects.filter(name=name, filters=before).update(filters=[*before, "plan"])
    for doc in builtin_documents():
        if doc["name"] in DESCRIPTIONS and not SchedulerProfile.objects.filter(name=doc["name"]).exists():
            SchedulerProfile.objects.create(name=doc["name"], description=DESCRIPTIONS[doc["name"]], is_default=False,
                                            scorers=doc["scorers"], filters=doc["filters"], params=doc["params"])


def backward(apps, schema_editor):
    SchedulerProfile = apps.get_model("scheduler", "SchedulerProfile")
    for name, before in PLANNED.items():
        SchedulerProfile.objects.filter(name=name, filters=[*before, "plan"]).update(filters=before)
    SchedulerProfile.objects.filter(name__in=list(DESCRIPTIONS)).delete()


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0004_decision_event_id")]
    operations = [migrations.RunPython(forward, backward)]
