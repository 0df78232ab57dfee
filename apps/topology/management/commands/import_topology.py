import json
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.topology import services
from apps.topology.documents import TopologyDocumentError
from netaware_core.yamlsafe import load_yaml


class Command(BaseCommand):
    help = "Import a user-defined NetworkTopology document (YAML or JSON) as the current topology."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="NetworkTopology document (full or just its spec); '-' reads stdin")

    def handle(self, *args: Any, file: str, **options: Any) -> None:
        try:
            text = Path("/dev/stdin" if file == "-" else file).read_text()
            document = json.loads(text) if file.endswith(".json") else load_yaml(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise CommandError(f"{file}: cannot read document: {exc}") from exc
        try:
            snapshot = services.import_topology(document=document)
        except TopologyDocumentError as exc:
            lines = "\n".join(f"  {path}: {'; '.join(messages)}" for path, messages in exc.errors.items())
            raise CommandError(f"{file}: invalid NetworkTopology document:\n{lines}") from exc
        self.stdout.write(f"imported topology v{snapshot.version} ({snapshot.node_count} nodes)")
