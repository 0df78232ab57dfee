"""Seed the scoring engine's built-in profiles (the default one marked), idempotently."""

from django.db import migrations

DESCRIPTIONS = {
    "network": "Paper's NetworkScore (Algorithm 2) with cold start; min-bandwidth filter.",
    "network-overhead": "scheduler-plugins NetworkOverhead: cost score and maxNetworkCost filter.",
    "load-aware": "Water-level balancing and load-variation risk; overload filter.",
    "hybrid": "NetworkScore weight 3 with water-level weight 1; min-bandwidth and overload filters.",
    "balanced": "Every network and load scorer, every filter.",
}


def seed(apps, schema_editor):
    from apps.scheduler.profiles import builtin_documents

    SchedulerProfile = apps.get_model("scheduler", "SchedulerProfile")
    has_default = SchedulerProfile.objects.filter(is_default=True).exists()
    for doc in builtin_documents():
        if SchedulerProfile.objects.filter(name=doc["name"]).exists():
            continue
        SchedulerProfile.objects.create(
            name=doc["name"],
            description=DESCRIPTIONS.get(doc["name"], ""),
            is_default=doc["is_default"] and not has_default,
            scorers=doc["scorers"],
            filters=doc["filters"],
            params=doc["params"],
        )


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
