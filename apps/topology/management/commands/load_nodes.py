from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.probes.scenario import ScenarioError, load_scenario
from apps.topology import services


class Command(BaseCommand):
    help = "Upsert the nodes of a scenario file into the node cache."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", required=True, help="path to a scenario YAML (docs/scenarios.md)")

    def handle(self, *args: Any, scenario: str, **options: Any) -> None:
        try:
            parsed = load_scenario(Path(scenario))
        except (OSError, ScenarioError) as exc:
            raise CommandError(f"{scenario}: {exc}") from exc
        count = services.load_nodes_from_scenario(scenario=parsed)
        self.stdout.write(f"{count} nodes loaded from scenario {parsed.name!r}")
