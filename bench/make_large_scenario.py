"""Write scenarios/large-1000.yaml: 1,000 nodes in 4 regions x 5 zones of unequal size and character.

Deterministic (seeded); re-run to regenerate. Zones differ in size (15..85 nodes), same-zone latency,
loss, bandwidth and jitter; zone pairs in one region are a few ms apart, regions tens of ms.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

SIZES = [20, 30, 40, 50, 60, 70, 80, 25, 35, 45, 55, 65, 75, 15, 85, 50, 60, 40, 50, 50]
REGIONS = ["eu-west", "eu-north", "us-east", "ap-south"]


def main(path: Path) -> None:
    rng = random.Random(1000)
    zones = []  # (name, region, size)
    for i, size in enumerate(SIZES):
        region = REGIONS[i // 5]
        zones.append((f"{region}-{'abcde'[i % 5]}", region, size))
    assert sum(size for *_, size in zones) == 1000
    region_pos = {r: (rng.uniform(0, 100), rng.uniform(0, 100)) for r in REGIONS}
    lines = [
        "# 1,000 nodes in 4 regions x 5 zones of unequal size and character (bench/make_large_scenario.py).",
        "# Used by the scale benchmarks and the 1,000-node run: NETAWARE_SCENARIO=scenarios/large-1000.yaml",
        "name: large-1000",
        "description: >",
        "  Heterogeneous 1,000-node cluster: zone sizes 15..85, same-zone RTT 0.2..1.2 ms, zones of a region",
        "  1..8 ms apart, regions 20..160 ms apart; loss 0..3 %, bandwidth 50..10,000 Mbit/s.",
        "defaults:",
        "  jitter: 0.1",
        "  node: {cpu: \"8\", memory: 32Gi}",
        "regions:",
    ]
    for region in REGIONS:
        lines.append(f"  - name: {region}")
        lines.append("    zones:")
        for name, zr, size in zones:
            if zr == region:
                lines.append(f"      - name: {name}")
                lines.append(f"        range: {{prefix: {name}-, from: 1, to: {size}}}")
    lines.append("links:")
    for i, (a, ra, _) in enumerate(zones):
        for b, rb, _ in zones[i:]:
            if a == b:
                lat, loss = rng.uniform(0.2, 1.2), rng.choice([0.0, 0.0, 0.5, 1.0])
                bw, jitter = rng.choice([1000, 2500, 10000]), rng.uniform(0.05, 0.2)
            elif ra == rb:
                lat, loss = rng.uniform(1.0, 8.0), rng.choice([0.0, 0.5, 1.0, 2.0])
                bw, jitter = rng.choice([500, 1000, 2000]), rng.uniform(0.05, 0.2)
            else:
                (x1, y1), (x2, y2) = region_pos[ra], region_pos[rb]
                lat = 20 + 1.4 * ((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5
                loss, bw, jitter = rng.choice([0.5, 1.0, 2.0, 3.0]), rng.choice([50, 100, 200]), rng.uniform(0.05, 0.2)
            lines.append(f"  - {{between: [{a}, {b}], latency_ms: {lat:.2f}, loss_pct: {loss}, "
                         f"bandwidth_mbps: {bw}, jitter: {jitter:.3f}}}")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "scenarios" / "large-1000.yaml")
