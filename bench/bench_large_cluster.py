"""The 1,000-node emulated cluster brought up by the run command, watched for a while (issue 13).

Run: ``.venv/bin/python bench/bench_large_cluster.py [--minutes 10]`` (needs root for up.sh's installs
only on a fresh machine; uses its own ports, the database ``netaware_bench_large`` (created by up.sh with the
tests' CREATEDB role of scripts/test.sh, or the credentials of ``DATABASE_URL``) and Redis db 14 unless
``--db`` / ``--redis`` say otherwise). Starts
``NETAWARE_SCENARIO=scenarios/large-1000.yaml NETAWARE_SCRAPE_INTERVAL=15s bash scripts/up.sh`` and reports:
seconds until every directed zone pair has >= 3 measured node pairs in one stored window and until the
topology is fresh; then every 30 s the agents' series, Prometheus head series and RSS, the emulator's
CPU, the age of the newest stored window (pipeline lag) and the topology's measured/inferred counts;
finally the stored p90 latency of measured pairs against the scenario's nominal values.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import _cluster  # noqa: E402


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def own_metric(url: str, name: str) -> float:
    for line in requests.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--db", default="netaware_bench_large")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--rotation-seconds", type=float, default=None,
                        help="the plan's rotation period (default 6 h); short to watch the churn")
    parser.add_argument("--keep-logs", type=Path, default=None, help="copy the stack's logs here at the end")
    args = parser.parse_args()
    from apps.probes.scenario import load_scenario

    scenario = load_scenario(ROOT / "scenarios" / "large-1000.yaml")
    zone = {n.name: n.zone for n in scenario.nodes}
    wanted = {(a, b) for a in scenario.zones() for b in scenario.zones()}
    state = Path(tempfile.mkdtemp(prefix="netaware-bench-large-"))
    prom_port, web, emu = free_port(), free_port(), free_port()
    env = {**os.environ, "NETAWARE_STATE_DIR": str(state), "NETAWARE_WEB_PORT": str(web),
           "NETAWARE_PROMETHEUS_PORT": str(prom_port), "NETAWARE_EMULATOR_PORT": str(emu),
           "NETAWARE_DB_NAME": args.db, "REDIS_URL": args.redis,
           "NETAWARE_SCENARIO": str(ROOT / "scenarios" / "large-1000.yaml"), "NETAWARE_SCRAPE_INTERVAL": "15s"}
    # up.sh creates the database with these credentials (the tests' CREATEDB role unless DATABASE_URL is given).
    database_url = _cluster.with_database(_cluster.bench_database_url(args.db), args.db)
    env["DATABASE_URL"] = database_url
    for key in ("DATABASE_URL_FILE", "PROMETHEUS_URL", "DJANGO_SETTINGS_MODULE"):
        env.pop(key, None)
    if args.rotation_seconds:
        env["NETAWARE_PROBE_ROTATION_SECONDS"] = str(args.rotation_seconds)
    subprocess.run(["redis-cli", "-n", args.redis.rsplit("/", 1)[1], "flushdb"], capture_output=True)
    with psycopg.connect(_cluster.with_database(database_url, "postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
    prom = f"http://127.0.0.1:{prom_port}"
    print(f"# bench_large_cluster.py, {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}")
    started = time.monotonic()
    try:
        up = subprocess.run(["bash", str(ROOT / "scripts" / "up.sh")], env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
        if up.returncode:
            raise SystemExit(up.stdout + up.stderr)
        print(f"up.sh returned after {time.monotonic() - started:.0f} s")
        emulator_pid = int((state / "run" / "emulator.pid").read_text())
        conn = psycopg.connect(database_url, autocommit=True)
        covered_at = fresh_at = None
        last_cpu: float | None = None
        last_t = 0.0  # read only once last_cpu is set
        rss_samples = []
        deadline = started + args.minutes * 60
        next_report = time.monotonic()
        while time.monotonic() < deadline:
            now = time.monotonic()
            newest = conn.execute("SELECT max(ts) FROM probes_pairsample WHERE series = 'rtt_p90'").fetchone()[0]  # type: ignore[index]
            if newest is not None and covered_at is None:
                counts: dict = {}
                for s, t in conn.execute("SELECT source, target FROM probes_pairsample "
                                         "WHERE series = 'rtt_p90' AND ts = %s", [newest]):
                    counts[(zone[s], zone[t])] = counts.get((zone[s], zone[t]), 0) + 1
                if all(counts.get(pair, 0) >= 3 for pair in wanted):
                    covered_at = now - started
                    print(f"every zone pair measured (>= 3 node pairs): {covered_at:.0f} s after start")
            row = conn.execute("SELECT stale, data_until, measured_pairs, inferred_pairs, version, "
                               "extract(epoch from now() - data_until) FROM topology_topologysnapshot "
                               "ORDER BY version DESC LIMIT 1").fetchone()
            if row and fresh_at is None and not row[0] and row[5] is not None and row[5] < 90:
                fresh_at = now - started
                print(f"topology fresh (not stale, data < 90 s old): {fresh_at:.0f} s after start")
            if now >= next_report:
                ours = requests.get(f"{prom}/api/v1/query", timeout=20, params={
                    "query": 'count({__name__=~"netaware_.*|process_.*"})'}).json()["data"]["result"]
                head = own_metric(prom, "prometheus_tsdb_head_series")
                rss = own_metric(prom, "process_resident_memory_bytes") / 2**20
                rss_samples.append(rss)
                cpu = cpu_seconds(emulator_pid)
                share = (cpu - last_cpu) / (now - last_t) if last_cpu is not None else float("nan")
                last_cpu, last_t = cpu, now
                lag = conn.execute("SELECT extract(epoch from now() - max(ts)) FROM probes_pairsample").fetchone()[0]  # type: ignore[index]
                print(f"t={now - started:4.0f}s agent series {float(ours[0]['value'][1]) if ours else 0:,.0f} | head "
                      f"{head:,.0f} | Prometheus RSS {rss:.0f} MiB | emulator CPU {100 * share:.0f} % | newest "
                      f"window {float(lag or 0):.0f} s old | topology v{row[4] if row else '-'} measured "
                      f"{row[2] if row else '-'} inferred {row[3] if row else '-'}", flush=True)
                next_report = now + 30
            time.sleep(5)
        newest = conn.execute("SELECT max(ts) FROM probes_pairsample WHERE series = 'rtt_p90'").fetchone()[0]  # type: ignore[index]
        errors = []
        for s, t, v in conn.execute("SELECT source, target, value FROM probes_pairsample WHERE series = 'rtt_p90' "
                                    "AND ts = %s", [newest]):
            link = scenario.link(s, t)
            if link is not None:
                errors.append(abs(v * 1000 - link.latency_ms) / link.latency_ms)
        errors.sort()
        print(f"measured p90 vs nominal over {len(errors):,} pairs: median {100 * statistics.median(errors):.1f} %, "
              f"p90 {100 * errors[int(0.9 * len(errors))]:.1f} %")
        print(f"Prometheus RSS: max {max(rss_samples):.0f} MiB over the run")
    finally:
        subprocess.run(["bash", str(ROOT / "scripts" / "up.sh"), "stop"], env=env, cwd=ROOT, capture_output=True,
                       timeout=120)
        if args.keep_logs:
            shutil.copytree(state / "log", args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(state, ignore_errors=True)
        subprocess.run(["redis-cli", "-n", args.redis.rsplit("/", 1)[1], "flushdb"], capture_output=True)


if __name__ == "__main__":
    main()
